package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// maxUpstreamBody bounds what we read back from a gateway.
const maxUpstreamBody = 5 << 20

// apiAuth lets a /v1 call through with a live API token, or with the session of
// a user who has the Administración module (CSRF is checked for sessions).
func (s *Server) apiAuth(c *fiber.Ctx) error {
	if h := c.Get(fiber.HeaderAuthorization); strings.HasPrefix(h, "Bearer ") {
		_, err := s.store.UseAPIToken(c.UserContext(), s.db, hashToken(strings.TrimSpace(h[len("Bearer "):])))
		if errors.Is(err, db.ErrNotFound) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="pasarela"`)
			return fiber.NewError(fiber.StatusUnauthorized, "Token de API inválido o revocado.")
		}
		if err != nil {
			return err
		}
		return c.Next()
	}
	switch u := currentUser(c); {
	case u == nil:
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="pasarela"`)
		return fiber.NewError(fiber.StatusUnauthorized, "Falta Authorization: Bearer <token de API>.")
	case !u.HasModule(db.ModuleAdmin):
		return fiber.NewError(fiber.StatusForbidden, "Su rol no tiene el módulo Administración.")
	}
	return c.Next()
}

// fieldErrors is the 422 body of CONTRACT §3: {"error": ..., "fields": {name: message}}.
type fieldErrors map[string]string

func (fe fieldErrors) respond(c *fiber.Ctx) error {
	return c.Status(fiber.StatusUnprocessableEntity).JSON(fiber.Map{"error": "Datos no válidos.", "fields": fe})
}

// jsonObject reads the body as a JSON object: 415 for another content type,
// 400 for anything that is not an object.
func jsonObject(c *fiber.Ctx) (map[string]json.RawMessage, error) {
	if mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); err != nil || mt != fiber.MIMEApplicationJSON {
		return nil, fiber.NewError(fiber.StatusUnsupportedMediaType, "Content-Type debe ser application/json.")
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return nil, fiber.NewError(fiber.StatusBadRequest, "El cuerpo debe ser un objeto JSON válido.")
	}
	return obj, nil
}

var (
	currencyPattern = regexp.MustCompile(`^[A-Za-z]{3}$`)
	planIDPattern   = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)
	planIntervals   = map[string]bool{"day": true, "week": true, "month": true, "year": true}
)

func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// checkPlan validates a plan; partial (an update) allows any subset, but not none.
func checkPlan(obj map[string]json.RawMessage, partial bool) fieldErrors {
	fe := fieldErrors{}
	// problem says what is wrong with a present field, or "".
	check := func(name string, problem func(json.RawMessage) string) {
		raw, present := obj[name]
		switch {
		case !present && !partial:
			fe[name] = "Es obligatorio."
		case present:
			if msg := problem(raw); msg != "" {
				fe[name] = msg
			}
		}
	}
	unless := func(ok func(json.RawMessage) bool, msg string) func(json.RawMessage) string {
		return func(r json.RawMessage) string {
			if ok(r) {
				return ""
			}
			return msg
		}
	}
	check("name", unless(func(r json.RawMessage) bool {
		s, ok := jsonString(r)
		n := len([]rune(strings.TrimSpace(s)))
		return ok && n >= 1 && n <= 200
	}, "Debe tener entre 1 y 200 caracteres."))
	check("amount", amountProblem)
	check("currency", unless(func(r json.RawMessage) bool { s, ok := jsonString(r); return ok && currencyPattern.MatchString(s) },
		"Debe ser un código de 3 letras, p. ej. CLP."))
	check("interval", unless(func(r json.RawMessage) bool { s, ok := jsonString(r); return ok && planIntervals[s] },
		"Debe ser day, week, month o year."))
	if partial && len(fe) == 0 {
		if _, ok := obj["name"]; !ok {
			if _, ok := obj["amount"]; !ok {
				if _, ok := obj["currency"]; !ok {
					if _, ok := obj["interval"]; !ok {
						fe["plan"] = "Indique al menos uno de name, amount, currency o interval."
					}
				}
			}
		}
	}
	return fe
}

func checkPayment(obj map[string]json.RawMessage) fieldErrors {
	fe := fieldErrors{}
	if raw, ok := obj["amount"]; !ok {
		fe["amount"] = "Es obligatorio."
	} else if msg := amountProblem(raw); msg != "" {
		fe["amount"] = msg
	}
	if raw, ok := obj["currency"]; !ok {
		fe["currency"] = "Es obligatorio."
	} else if s, ok := jsonString(raw); !ok || !currencyPattern.MatchString(s) {
		fe["currency"] = "Debe ser un código de 3 letras, p. ej. CLP."
	}
	if raw, ok := obj["email"]; !ok {
		fe["email"] = "Es obligatorio."
	} else if s, ok := jsonString(raw); !ok || !plainEmail(s) {
		fe["email"] = "Debe ser un correo electrónico válido."
	}
	if raw, ok := obj["plan_id"]; ok && string(raw) != "null" {
		s, isString := jsonString(raw)
		if !isString {
			s = string(raw) // a numeric id
		}
		if !planIDPattern.MatchString(s) {
			fe["plan_id"] = "Debe ser un identificador de plan (letras, números, _ - . :)."
		}
	}
	if raw, ok := obj["description"]; ok && string(raw) != "null" {
		if s, ok := jsonString(raw); !ok || len([]rune(s)) > 500 {
			fe["description"] = "Debe ser texto de hasta 500 caracteres."
		}
	}
	return fe
}

func plainEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && len(s) <= 320
}

func (s *Server) createPlan(c *fiber.Ctx) error {
	obj, err := jsonObject(c)
	if err != nil {
		return err
	}
	if fe := checkPlan(obj, false); len(fe) > 0 {
		return fe.respond(c)
	}
	return s.forwardGWB(c, http.MethodPost, "/plans", c.Body())
}

func (s *Server) showPlan(c *fiber.Ctx) error {
	id := c.Params("id")
	if !planIDPattern.MatchString(id) {
		return fieldErrors{"id": "Debe ser un identificador de plan (letras, números, _ - . :)."}.respond(c)
	}
	return s.forwardGWB(c, http.MethodGet, "/plans/"+id, nil)
}

func (s *Server) updatePlan(c *fiber.Ctx) error {
	id := c.Params("id")
	if !planIDPattern.MatchString(id) {
		return fieldErrors{"id": "Debe ser un identificador de plan (letras, números, _ - . :)."}.respond(c)
	}
	obj, err := jsonObject(c)
	if err != nil {
		return err
	}
	if fe := checkPlan(obj, true); len(fe) > 0 {
		return fe.respond(c)
	}
	return s.forwardGWB(c, http.MethodPatch, "/plans/"+id, c.Body())
}

// createPayment forwards a payment; with an Idempotency-Key, a repeat returns
// the first response without calling the gateway again.
func (s *Server) createPayment(c *fiber.Ctx) error {
	obj, err := jsonObject(c)
	if err != nil {
		return err
	}
	if fe := checkPayment(obj); len(fe) > 0 {
		return fe.respond(c)
	}
	key := strings.TrimSpace(c.Get("Idempotency-Key"))
	if key == "" {
		return s.forwardGWB(c, http.MethodPost, "/payments", c.Body())
	}
	if len(key) > 255 {
		return fieldErrors{"Idempotency-Key": "Debe tener hasta 255 caracteres."}.respond(c)
	}
	ctx := c.UserContext()
	sum := sha256.Sum256(c.Body())
	state, stored, err := s.store.ClaimIdempotencyKey(ctx, s.db, key, sum[:])
	if err != nil {
		return err
	}
	switch state {
	case db.IdempotencyReplay:
		c.Set("Idempotent-Replayed", "true")
		c.Set(fiber.HeaderContentType, stored.ContentType)
		return c.Status(stored.Status).Send(stored.Body)
	case db.IdempotencyInProgress:
		return fiber.NewError(fiber.StatusConflict, "Otra solicitud con la misma Idempotency-Key está en curso; reintente en unos segundos.")
	case db.IdempotencyMismatch:
		return fieldErrors{"Idempotency-Key": "Esta clave ya se usó con otro cuerpo; use una clave nueva."}.respond(c)
	}
	resp, err := s.callGWB(ctx, http.MethodPost, "/payments", c.Body())
	if err != nil {
		// No answer from the gateway: release the key so a retry can go through.
		if rerr := s.store.ReleaseIdempotencyKey(context.WithoutCancel(ctx), s.db, key); rerr != nil {
			return rerr
		}
		return err
	}
	if err := s.store.CompleteIdempotencyKey(context.WithoutCancel(ctx), s.db, key, resp); err != nil {
		return err
	}
	return sendUpstream(c, resp)
}

func (s *Server) forwardGWB(c *fiber.Ctx, method, path string, body []byte) error {
	resp, err := s.callGWB(c.UserContext(), method, path, body)
	if err != nil {
		return err
	}
	return sendUpstream(c, resp)
}

func sendUpstream(c *fiber.Ctx, r db.IdempotentResponse) error {
	if r.ContentType != "" {
		c.Set(fiber.HeaderContentType, r.ContentType)
	}
	return c.Status(r.Status).Send(r.Body)
}

// callGWB calls the subscription gateway's active environment and logs the
// call. No answer is a 502, no answer within the timeout a 504.
func (s *Server) callGWB(ctx context.Context, method, path string, body []byte) (db.IdempotentResponse, error) {
	g, err := s.store.GatewaySettings(ctx, s.db, s.box, db.GatewaySubscription)
	if err != nil {
		return db.IdempotentResponse{}, err
	}
	base, key := strings.TrimRight(g.Active("url"), "/"), g.Active("access_key")
	if base == "" || key == "" {
		return db.IdempotentResponse{}, fiber.NewError(fiber.StatusServiceUnavailable,
			"La pasarela de suscripciones no tiene URL o access key para el entorno "+g.Environment()+".")
	}
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, reader)
	if err != nil {
		return db.IdempotentResponse{}, fiber.NewError(fiber.StatusServiceUnavailable, "La URL configurada de la pasarela de suscripciones no es válida.")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	start := time.Now()
	call := &db.UpstreamCall{Method: method, Path: path}
	resp, err := s.upstream.Do(req)
	var out db.IdempotentResponse
	if err == nil {
		defer resp.Body.Close()
		out.Status, out.ContentType = resp.StatusCode, resp.Header.Get("Content-Type")
		out.Body, err = io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
	}
	call.LatencyMS = int(time.Since(start).Milliseconds())
	call.Status = out.Status
	var upstreamErr error
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			call.Error = "tiempo de espera agotado"
			upstreamErr = fiber.NewError(fiber.StatusGatewayTimeout, "La pasarela de suscripciones no respondió a tiempo.")
		} else {
			call.Error = "sin conexión: " + cleanText(redactURL(err.Error(), base), 200)
			upstreamErr = fiber.NewError(fiber.StatusBadGateway, "No se pudo conectar con la pasarela de suscripciones.")
		}
		call.Status = 0
	}
	if lerr := s.store.RecordUpstreamCall(context.WithoutCancel(ctx), s.db, call); lerr != nil {
		s.log.Error("record upstream call", "error", lerr)
	}
	if upstreamErr != nil {
		return db.IdempotentResponse{}, upstreamErr
	}
	return out, nil
}

// redactURL keeps the gateway's address out of logged error text (it may carry credentials).
func redactURL(msg, base string) string {
	return strings.ReplaceAll(msg, base, fmt.Sprintf("<%s>", "gwb"))
}
