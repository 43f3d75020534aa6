package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// panelPage is the console's home: figures of the last 24 h for each module
// the user has. Later modules add their tiles beside Payments.
type panelPage struct {
	Page
	Payments *paymentTiles
	Tasks    *db.TaskFigures
	Cards    *cardTiles
	// Servers counts the servers by state, Monitors the active monitors (nil without the module).
	Servers  map[string]int
	Monitors map[string]int
}

// cardTiles are the Tarjetas module's figures: the card API's last 24 h.
type cardTiles struct {
	db.CardCallFigures
	Configured bool
}

// paymentTiles are the Administración module's figures.
type paymentTiles struct {
	db.PanelFigures
	Statuses []string
	// HourlyJSON feeds the chart: [[unix seconds…], [counts…]].
	HourlyJSON string
	// Silent is set when production has had no notification for longer than
	// SilenceMinutes (0: the warning is off).
	Silent         bool
	SilenceMinutes int
	Production     bool
	Problem        string
}

func (s *Server) home(c *fiber.Ctx) error {
	data, err := s.panelData(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/home/index", "", data)
}

func (s *Server) panelData(c *fiber.Ctx) (panelPage, error) {
	data := panelPage{Page: s.page(c, "Panel")}
	data.Charts = true
	u := currentUser(c)
	if u.HasModule(db.ModuleServers) {
		counts, err := s.store.ServerCounts(c.UserContext(), s.db)
		if err != nil {
			return data, err
		}
		data.Servers = counts
		if data.Monitors, err = s.store.MonitorCounts(c.UserContext(), s.db); err != nil {
			return data, err
		}
	}
	if u.HasModule(db.ModuleCards) {
		settings, err := s.store.GatewaySettings(c.UserContext(), s.db, s.box, db.CardService)
		if err != nil {
			return data, err
		}
		figures, err := s.store.CardCallsSince(c.UserContext(), s.db, time.Now().Add(-24*time.Hour))
		if err != nil {
			return data, err
		}
		data.Cards = &cardTiles{CardCallFigures: figures,
			Configured: settings.Values["base_url"] != "" && settings.Values["api_key"] != ""}
	}
	if !u.HasModule(db.ModuleAdmin) {
		return data, nil
	}
	ctx := c.UserContext()
	tasks, err := s.store.TaskFigures(ctx, s.db, u.ID)
	if err != nil {
		return data, err
	}
	data.Tasks = &tasks
	now := time.Now()
	figures, err := s.store.Panel(ctx, s.db, now)
	if err != nil {
		return data, err
	}
	minutes, err := s.store.SilenceAlertMinutes(ctx, s.db)
	if err != nil {
		return data, err
	}
	env, _, err := s.gwaSecret(ctx)
	if err != nil {
		return data, err
	}
	t := &paymentTiles{PanelFigures: figures, Statuses: db.WebhookStatuses, SilenceMinutes: minutes,
		Production: env == db.EnvProduction}
	if minutes > 0 && t.Production {
		t.Silent = figures.LastAt == nil || now.Sub(*figures.LastAt) > time.Duration(minutes)*time.Minute
	}
	xs, ys := make([]int64, len(figures.Hourly)), make([]int64, len(figures.Hourly))
	for i, h := range figures.Hourly {
		xs[i], ys[i] = h.Hour.Unix(), h.N
	}
	b, err := json.Marshal([][]int64{xs, ys})
	if err != nil {
		return data, err
	}
	t.HourlyJSON = string(b)
	data.Payments = t
	return data, nil
}

// saveSilenceAlert sets after how many minutes without a notification in
// production the Panel warns (0 turns the warning off).
func (s *Server) saveSilenceAlert(c *fiber.Ctx) error {
	minutes, err := strconv.Atoi(strings.TrimSpace(c.FormValue("minutos")))
	if err != nil || minutes < 0 || minutes > 7*24*60 {
		data, derr := s.panelData(c)
		if derr != nil {
			return derr
		}
		data.Payments.Problem = "Escriba un número de minutos entre 0 (sin aviso) y 10080 (una semana)."
		return s.render(c, fiber.StatusUnprocessableEntity, "pages/home/index", "", data)
	}
	if err := s.store.SetSilenceAlertMinutes(c.UserContext(), s.db, minutes); err != nil {
		return err
	}
	if minutes == 0 {
		s.setFlash(c, "Aviso de silencio desactivado.")
	} else {
		s.setFlash(c, "Se avisará si producción pasa "+strconv.Itoa(minutes)+" minutos sin notificaciones.")
	}
	return redirectAfterPost(c, "/app")
}
