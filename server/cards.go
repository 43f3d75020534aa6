package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
	"pasarela/db/secretbox"
)

// The virtual-card API proxy (CONTRACT §7): the key stays on the server,
// every call is authorised by the Tarjetas module and recorded.

// maxCardBody bounds a request body sent through the proxy.
const maxCardBody = 1 << 20

// callCards sends one call to the card API and records it (user, method,
// path; never the key, the query or a body). Not configured is 503, no
// answer 502, no answer in time 504, an answer too large 502.
func (s *Server) callCards(c *fiber.Ctx, method, resourcePath, rawQuery string, body []byte) (db.IdempotentResponse, error) {
	ctx := c.UserContext()
	settings, err := s.store.GatewaySettings(ctx, s.db, s.box, db.CardService)
	if err != nil {
		return db.IdempotentResponse{}, err
	}
	base, key := strings.TrimRight(settings.Values["base_url"], "/"), settings.Values["api_key"]
	if base == "" || key == "" {
		return db.IdempotentResponse{}, fiber.NewError(fiber.StatusServiceUnavailable,
			"La API de tarjetas no está configurada: indique su URL y su clave en /app/tarjetas/config.")
	}
	target := base + resourcePath
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	if err != nil {
		return db.IdempotentResponse{}, fiber.NewError(fiber.StatusServiceUnavailable, "La URL configurada de la API de tarjetas no es válida.")
	}
	// A fresh request: nothing of the browser's (cookies, our CSRF or auth
	// headers, hop-by-hop headers) goes upstream, only what is set here.
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "pasarela")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	u := currentUser(c)
	call := &db.CardCall{UserID: &u.ID, UserEmail: u.Email, Method: method, Path: resourcePath}
	start := time.Now()
	resp, err := s.cardsClient.Do(req)
	var out db.IdempotentResponse
	tooLarge := false
	if err == nil {
		defer resp.Body.Close()
		out.Status, out.ContentType = resp.StatusCode, resp.Header.Get("Content-Type")
		out.Body, err = io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
		tooLarge = len(out.Body) > maxUpstreamBody
	}
	call.LatencyMS = int(time.Since(start).Milliseconds())
	call.Status = out.Status
	var upstreamErr error
	switch {
	case err != nil:
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			call.Error = "tiempo de espera agotado"
			upstreamErr = fiber.NewError(fiber.StatusGatewayTimeout, "La API de tarjetas no respondió a tiempo.")
		} else {
			// The cause without the URL: it carries the user's query.
			cause := err
			var ue *url.Error
			if errors.As(err, &ue) {
				cause = ue.Err
			}
			call.Error = "sin conexión: " + cleanText(strings.ReplaceAll(cause.Error(), base, "<tarjetas>"), 200)
			upstreamErr = fiber.NewError(fiber.StatusBadGateway, "No se pudo conectar con la API de tarjetas.")
		}
		call.Status = 0
	case tooLarge:
		call.Error = fmt.Sprintf("respuesta de más de %d MiB", maxUpstreamBody>>20)
		upstreamErr = fiber.NewError(fiber.StatusBadGateway, fmt.Sprintf("La API de tarjetas respondió más de %d MiB; acote la consulta.", maxUpstreamBody>>20))
	}
	if lerr := s.store.RecordCardCall(context.WithoutCancel(ctx), s.db, call); lerr != nil {
		s.log.Error("record card API call", "error", lerr)
	}
	if upstreamErr != nil {
		return db.IdempotentResponse{}, upstreamErr
	}
	return out, nil
}

var errBadCardPath = fiber.NewError(fiber.StatusBadRequest, "Ruta no válida para la API de tarjetas.")

// cardPath is the upstream path of a resource and the rest of a request's
// path. The rest is decoded once and cleaned, so neither ".." nor "%2e%2e"
// climbs above the resource; what is still encoded after one decoding
// (a double-encoded path), backslashes and control characters are refused.
func cardPath(resource, rawRest string) (string, error) {
	rest, err := url.PathUnescape(rawRest)
	if err != nil || strings.ContainsAny(rest, `%\`) || strings.ContainsFunc(rest, unicode.IsControl) {
		return "", errBadCardPath
	}
	cleaned := path.Clean("/" + rest)
	if cleaned == "/" {
		return "/" + resource, nil
	}
	segs := strings.Split(cleaned[1:], "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return "/" + resource + "/" + strings.Join(segs, "/"), nil
}

func knownCardResource(c *fiber.Ctx) (string, error) {
	r := c.Params("recurso")
	if !slices.Contains(db.CardResources, r) {
		return "", fiber.NewError(fiber.StatusNotFound, "Recurso desconocido: use "+strings.Join(db.CardResources, ", ")+".")
	}
	return r, nil
}

// proxyCards is ANY /app/tarjetas/api/:recurso/*: method, query and JSON body
// forwarded, upstream status, body and content type passed back.
func (s *Server) proxyCards(c *fiber.Ctx) error {
	resource, err := knownCardResource(c)
	if err != nil {
		return err
	}
	p, err := cardPath(resource, c.Params("*"))
	if err != nil {
		return err
	}
	var body []byte
	if raw := c.Body(); len(raw) > 0 {
		if len(raw) > maxCardBody {
			return fiber.NewError(fiber.StatusRequestEntityTooLarge, "El cuerpo supera 1 MiB.")
		}
		if mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); err != nil || mt != fiber.MIMEApplicationJSON {
			return fiber.NewError(fiber.StatusUnsupportedMediaType, "Content-Type debe ser application/json.")
		}
		if !json.Valid(raw) {
			return fiber.NewError(fiber.StatusBadRequest, "El cuerpo debe ser JSON válido.")
		}
		body = raw
	}
	resp, err := s.callCards(c, c.Method(), p, string(c.Request().URI().QueryString()), body)
	if err != nil {
		return err
	}
	if !isJSONType(resp.ContentType) {
		// Served from our origin, anything but JSON could run as a page or a
		// script of ours (our CSP trusts 'self'): it goes as a download.
		c.Set(fiber.HeaderContentType, "application/octet-stream")
		c.Set(fiber.HeaderContentDisposition, "attachment")
		c.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		return c.Status(resp.Status).Send(resp.Body)
	}
	return sendUpstream(c, resp)
}

// isJSONType reports whether a content type is JSON (application/json or a +json type).
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")))
}

// cardConfigPage is /app/tarjetas/config.
type cardConfigPage struct {
	Page
	BaseURL   string
	MaskedKey string
	Problems  map[string]string
	Changes   []db.SettingChange
	Calls     []db.CardCall
	// Probe is the outcome of "probar conexión" (empty until asked).
	Probe cardProbe
}

type cardProbe struct {
	Done    bool
	OK      bool
	Message string
}

func (s *Server) cardConfigData(c *fiber.Ctx, problems map[string]string) (cardConfigPage, error) {
	ctx := c.UserContext()
	data := cardConfigPage{Page: s.page(c, "API de tarjetas"), Problems: problems}
	settings, err := s.store.GatewaySettings(ctx, s.db, s.box, db.CardService)
	if err != nil {
		return data, err
	}
	data.BaseURL, data.MaskedKey = settings.Values["base_url"], secretbox.Mask(settings.Values["api_key"])
	if data.Changes, err = s.store.SettingChanges(ctx, s.db, db.CardService, 20); err != nil {
		return data, err
	}
	if data.Calls, err = s.store.CardCalls(ctx, s.db, 20); err != nil {
		return data, err
	}
	return data, nil
}

func (s *Server) showCardConfig(c *fiber.Ctx) error {
	data, err := s.cardConfigData(c, nil)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/cards/config", "", data)
}

// cardBaseURLProblem says what is wrong with a base URL: https, or http only
// to this machine; no credentials, query or fragment (they would be logged
// with the path or leak into error messages).
func cardBaseURLProblem(v string) string {
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "Debe ser una URL completa, p. ej. https://api.ejemplo.com/v1."
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "Sin usuario, contraseña, consulta ni fragmento: la clave va aparte."
	case u.Scheme == "http" && !isLoopbackHost(u.Hostname()):
		return "Use https; http solo para esta máquina (localhost, 127.0.0.1, ::1)."
	}
	return ""
}

// origin is a URL's scheme and host, lower-cased ("" when it does not parse).
func origin(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) saveCardConfig(c *fiber.Ctx) error {
	baseURL := strings.TrimSpace(c.FormValue("base_url"))
	key := strings.TrimSpace(c.FormValue("api_key"))
	problems := map[string]string{}
	switch {
	case baseURL == "":
		problems["base_url"] = "Es obligatoria."
	case len(baseURL) > 2000:
		problems["base_url"] = "Hasta 2000 caracteres."
	default:
		if p := cardBaseURLProblem(baseURL); p != "" {
			problems["base_url"] = p
		}
	}
	current, err := s.store.GatewaySettings(c.UserContext(), s.db, s.box, db.CardService)
	if err != nil {
		return err
	}
	// The stored key goes only to the server it was given for: pointing the
	// proxy at another one takes the key again, or whoever may edit this page
	// could have the key sent to a server of theirs.
	if key == "" && current.Values["api_key"] != "" && c.FormValue("clear_api_key") == "" &&
		problems["base_url"] == "" && origin(baseURL) != origin(current.Values["base_url"]) {
		problems["api_key"] = "Al cambiar el servidor de la API, escriba la clave otra vez: la guardada no se envía a otro servidor."
	}
	if key != "" && (len(key) > 500 || strings.ContainsFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })) {
		problems["api_key"] = "Hasta 500 caracteres, sin espacios."
	}
	if len(problems) > 0 {
		data, err := s.cardConfigData(c, problems)
		if err != nil {
			return err
		}
		data.BaseURL = baseURL
		return s.render(c, fiber.StatusUnprocessableEntity, "pages/cards/config", "", data)
	}
	changes := []db.FieldChange{{Field: "base_url", Value: baseURL}}
	switch {
	case key != "":
		changes = append(changes, db.FieldChange{Field: "api_key", Value: key})
	case c.FormValue("clear_api_key") != "":
		changes = append(changes, db.FieldChange{Field: "api_key", Clear: true})
	}
	changed, err := s.store.SaveGatewaySettings(c.UserContext(), s.db, s.box, db.CardService, changes, currentUser(c))
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		s.setFlash(c, "Sin cambios.")
	} else {
		s.setFlash(c, "Configuración de la API de tarjetas guardada.")
	}
	return redirectAfterPost(c, "/app/tarjetas/config")
}

// probeCards is "probar conexión": one GET of the first resource, its outcome shown in place.
func (s *Server) probeCards(c *fiber.Ctx) error {
	resp, callErr := s.callCards(c, http.MethodGet, "/"+db.CardResources[0], "", nil)
	// Read after the call: the call list shows it.
	data, err := s.cardConfigData(c, nil)
	if err != nil {
		return err
	}
	data.Probe.Done = true
	var fe *fiber.Error
	switch err := callErr; {
	case errors.As(err, &fe):
		data.Probe.Message = fe.Message
	case err != nil:
		return err
	case resp.Status >= 200 && resp.Status < 300:
		data.Probe.OK = true
		data.Probe.Message = fmt.Sprintf("Conexión correcta: GET /%s respondió %d.", db.CardResources[0], resp.Status)
	case resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		data.Probe.Message = fmt.Sprintf("La API respondió %d: revise la clave.", resp.Status)
	default:
		data.Probe.Message = fmt.Sprintf("La API respondió %d%s.", resp.Status, upstreamMessage(resp.Body))
	}
	return s.render(c, fiber.StatusOK, "pages/cards/config", "partials/cards/probe", data)
}

// upstreamMessage is ": <message>" from an error body's error/message/mensaje
// field, cut short and made plain, or "".
func upstreamMessage(body []byte) string {
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	for _, k := range []string{"error", "message", "mensaje", "detail"} {
		if v, ok := obj[k].(string); ok && strings.TrimSpace(v) != "" {
			return ": " + cleanText(strings.TrimSpace(v), 200)
		}
	}
	return ""
}
