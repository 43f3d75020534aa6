package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// Servers (CONTRACT §5): each has an agent token, shown once, stored hashed.

const agentTokenPrefix = "pag_"

type serversPage struct {
	Page
	Servers []db.Server
	// Estado filters the list ("": every state); States are its choices.
	Estado string
	States []string
	Form   serverForm
}

type serverForm struct {
	Nombre, Host, Intervalo, Umbral string
	Problems                        map[string]string
}

type serverPage struct {
	Page
	Server *db.Server
	Form   serverForm
	// NewToken is the agent token, shown this once (creation or rotation).
	NewToken string
	// AgentCommand is how to start the agent with it.
	AgentCommand string
}

func (s *Server) listServers(c *fiber.Ctx) error {
	return s.renderServers(c, fiber.StatusOK, serverForm{Intervalo: "30"})
}

func (s *Server) renderServers(c *fiber.Ctx, status int, form serverForm) error {
	estado := c.Query("estado")
	if !slices.Contains(db.ServerStates, estado) {
		estado = "" // not a state (a hand-edited URL): no filter
	}
	servers, err := s.store.Servers(c.UserContext(), s.db, estado)
	if err != nil {
		return err
	}
	return s.render(c, status, "pages/servers/index", "", serversPage{Page: s.page(c, "Servidores"), Servers: servers,
		Estado: estado, States: db.ServerStates, Form: form})
}

// readServerForm checks a server's fields; umbral is optional ("" = none).
func readServerForm(c *fiber.Ctx) (serverForm, *db.Server) {
	f := serverForm{Nombre: strings.TrimSpace(c.FormValue("nombre")), Host: strings.TrimSpace(c.FormValue("host")),
		Intervalo: strings.TrimSpace(c.FormValue("intervalo_s")), Umbral: strings.TrimSpace(c.FormValue("umbral_disco")),
		Problems: map[string]string{}}
	srv := &db.Server{Nombre: f.Nombre, Host: f.Host, IntervaloS: 30}
	if n := len([]rune(f.Nombre)); n < 1 || n > 100 {
		f.Problems["nombre"] = "Escriba un nombre de 1 a 100 caracteres."
	}
	if n := len(f.Host); n < 1 || n > 255 || strings.ContainsAny(f.Host, " \t/\\") {
		f.Problems["host"] = "Escriba el nombre o la IP de la máquina, sin espacios ni barras."
	}
	if f.Intervalo != "" {
		v, err := strconv.Atoi(f.Intervalo)
		if err != nil || v < 5 || v > 3600 {
			f.Problems["intervalo_s"] = "Entre 5 y 3600 segundos."
		}
		srv.IntervaloS = v
	}
	if f.Umbral != "" {
		v, err := strconv.ParseFloat(strings.ReplaceAll(f.Umbral, ",", "."), 64)
		if err != nil || math.IsNaN(v) || v <= 0 || v > 100 {
			f.Problems["umbral_disco"] = "Un porcentaje mayor que 0 y hasta 100, o vacío para no avisar."
		}
		srv.UmbralDisco = &v
	}
	return f, srv
}

// newAgentToken returns a fresh token and what is stored of it.
func newAgentToken() (token string, hash []byte, prefix string, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, "", err
	}
	token = agentTokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	return token, hashToken(token), token[:len(agentTokenPrefix)+6], nil
}

// createServer is POST /app/servidores: to the new server's page, which shows its token this once.
func (s *Server) createServer(c *fiber.Ctx) error {
	form, srv := readServerForm(c)
	if len(form.Problems) > 0 {
		return s.renderServers(c, fiber.StatusUnprocessableEntity, form)
	}
	token, hash, prefix, err := newAgentToken()
	if err != nil {
		return err
	}
	srv.TokenHash, srv.TokenPrefix, srv.Estado = hash, prefix, db.ServerPending
	if err := s.store.CreateServer(c.UserContext(), s.db, srv); err != nil {
		return err
	}
	return s.showNewToken(c, fiber.StatusCreated, srv, token)
}

// showNewToken answers a POST that made an agent token: htmx gets the page
// with it; a plain form 303 to the server's page, which shows it once.
func (s *Server) showNewToken(c *fiber.Ctx, status int, srv *db.Server, token string) error {
	if isHTMX(c) {
		return s.renderServer(c, status, srv, token, serverForm{})
	}
	page := "/app/servidor/" + strconv.FormatInt(srv.ID, 10)
	s.revealOnce(c, page, token)
	return c.Redirect(page, fiber.StatusSeeOther)
}

func (s *Server) serverParam(c *fiber.Ctx) (*db.Server, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, fiber.NewError(fiber.StatusNotFound, "No existe ese servidor.")
	}
	srv, err := s.store.ServerByID(c.UserContext(), s.db, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, fiber.NewError(fiber.StatusNotFound, "No existe ese servidor.")
	}
	return srv, err
}

func (s *Server) renderServer(c *fiber.Ctx, status int, srv *db.Server, token string, form serverForm) error {
	data := serverPage{Page: s.page(c, srv.Nombre), Server: srv, NewToken: token, Form: form}
	data.Charts = true
	if form.Problems == nil {
		data.Form = serverForm{Nombre: srv.Nombre, Host: srv.Host, Intervalo: strconv.Itoa(srv.IntervaloS)}
		if srv.UmbralDisco != nil {
			data.Form.Umbral = strconv.FormatFloat(*srv.UmbralDisco, 'f', -1, 64)
		}
	}
	if token != "" {
		// A page that shows a secret is never kept by a cache or the browser's history.
		c.Set(fiber.HeaderCacheControl, "no-store")
		data.AgentCommand = "pasarela agent --url " + s.cfg.BaseURL + " --token " + token + " --interval " + strconv.Itoa(srv.IntervaloS) + "s"
	}
	return s.render(c, status, "pages/servers/show", "", data)
}

func (s *Server) showServer(c *fiber.Ctx) error {
	srv, err := s.serverParam(c)
	if err != nil {
		return err
	}
	return s.renderServer(c, fiber.StatusOK, srv, s.takeReveal(c, "/app/servidor/"+strconv.FormatInt(srv.ID, 10)), serverForm{})
}

// updateServer is POST /app/servidor/:id: name, host, interval, disk threshold.
func (s *Server) updateServer(c *fiber.Ctx) error {
	srv, err := s.serverParam(c)
	if err != nil {
		return err
	}
	form, changed := readServerForm(c)
	if len(form.Problems) > 0 {
		return s.renderServer(c, fiber.StatusUnprocessableEntity, srv, "", form)
	}
	changed.ID = srv.ID
	if err := s.store.UpdateServer(c.UserContext(), s.db, changed); err != nil {
		return err
	}
	s.setFlash(c, "Servidor guardado.")
	return redirectAfterPost(c, "/app/servidor/"+strconv.FormatInt(srv.ID, 10))
}

// rotateServerToken is POST /app/servidor/:id/token: a new token, the old one refused from now on.
func (s *Server) rotateServerToken(c *fiber.Ctx) error {
	srv, err := s.serverParam(c)
	if err != nil {
		return err
	}
	token, hash, prefix, err := newAgentToken()
	if err != nil {
		return err
	}
	if err := s.store.SetServerToken(c.UserContext(), s.db, srv.ID, hash, prefix); err != nil {
		return err
	}
	srv.TokenPrefix = prefix
	return s.showNewToken(c, fiber.StatusOK, srv, token)
}

func (s *Server) deleteServer(c *fiber.Ctx) error {
	srv, err := s.serverParam(c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteServer(c.UserContext(), s.db, srv.ID); err != nil {
		return err
	}
	s.setFlash(c, "Servidor «"+srv.Nombre+"» eliminado con su historial.")
	return redirectAfterPost(c, "/app/servidores")
}

// maxHistoryPoints is the most points a history answer holds (CONTRACT §5).
const maxHistoryPoints = 1000

type historyPoint struct {
	T     string  `json:"t"`
	CPU   float64 `json:"cpu"`
	RAM   float64 `json:"ram"`
	Swap  float64 `json:"swap"`
	Disk  float64 `json:"disk"`
	TCP   float64 `json:"tcp"`
	Load1 float64 `json:"load1"`
}

// metricsHistory is GET /app/servidor/:id/metricas-history?horas=N[&raw=1].
func (s *Server) metricsHistory(c *fiber.Ctx) error {
	srv, err := s.serverParam(c)
	if err != nil {
		return err
	}
	hours := 24
	if v := c.Query("horas"); v != "" {
		if hours, err = strconv.Atoi(v); err != nil || hours < 1 || hours > 168 {
			return fieldErrors{"horas": "Debe ser un número entero de horas entre 1 y 168."}.respond(c)
		}
	}
	span := time.Duration(hours) * time.Hour
	var bucket time.Duration
	if c.Query("raw") != "1" {
		// Equal buckets, whole seconds, so that the span holds at most 1000 of
		// them even when it starts in the middle of one.
		bucket = time.Duration(math.Ceil(span.Seconds()/(maxHistoryPoints-1))) * time.Second
	}
	rows, err := s.store.MetricsHistory(c.UserContext(), s.db, srv.ID, time.Now().Add(-span), bucket)
	if err != nil {
		return err
	}
	points := make([]historyPoint, len(rows))
	for i, r := range rows {
		points[i] = historyPoint{T: r.T.UTC().Format(time.RFC3339), CPU: round2(r.CPU), RAM: round2(r.RAM),
			Swap: round2(r.Swap), Disk: round2(r.Disk), TCP: round2(r.TCP), Load1: round2(r.Load1)}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"servidor_id": srv.ID, "horas": hours, "puntos": points})
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
