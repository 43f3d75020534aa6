package server

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// notifEventLabels name the ten notification events (CONTRACT §6) in Spanish.
var notifEventLabels = map[string]string{
	"tarea_asignada":      "Tarea asignada",
	"tarea_estado":        "Cambio de estado de una tarea",
	"tarea_comentario":    "Comentario en una tarea",
	"tarea_vencida":       "Tarea vencida",
	"ticket_creado":       "Ticket creado",
	"ticket_respondido":   "Ticket respondido",
	"servidor_caido":      "Servidor caído",
	"servidor_recuperado": "Servidor recuperado",
	"servidor_umbral":     "Servidor sobre su umbral",
	"url_monitor_estado":  "Cambio de estado de una URL vigilada",
}

func notifEventLabel(evento string) string {
	if l, ok := notifEventLabels[evento]; ok {
		return l
	}
	return evento
}

type notifConfigPage struct {
	Page
	Events []db.NotifEventConfig
}

// eventRow is one event's switches, alone: what an htmx save answers.
type eventRow struct {
	db.NotifEventConfig
	CSRF    string
	Problem string
	Saved   bool
}

func (s *Server) showNotifConfig(c *fiber.Ctx) error {
	events, err := s.store.EventConfigs(c.UserContext(), s.db)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/notifications/config", "", notifConfigPage{
		Page: s.page(c, "Configuración de notificaciones"), Events: events})
}

// saveNotifConfig switches the channels of one event (CONTRACT §6 form: a
// switch is on when its field is "on"). htmx gets the event's row back.
func (s *Server) saveNotifConfig(c *fiber.Ctx) error {
	ctx := c.UserContext()
	cfg, err := s.store.EventConfig(ctx, s.db, c.Params("evento"))
	if errors.Is(err, db.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "No existe ese evento de notificación.")
	}
	if err != nil {
		return err
	}
	row := eventRow{NotifEventConfig: cfg, CSRF: csrfToken(c)}
	on := map[string]*bool{"canal_email": &row.CanalEmail, "canal_chat": &row.CanalChat, "canal_sistema": &row.CanalSistema}
	for field, dst := range on {
		v, ok := parseSwitch(c.FormValue(field))
		if !ok {
			row.Problem = "Cada canal se activa con «on»; déjelo vacío para apagarlo."
			if !isHTMX(c) {
				return fiber.NewError(fiber.StatusUnprocessableEntity, row.Problem)
			}
			return s.render(c, fiber.StatusUnprocessableEntity, "partials/notifications/event", "partials/notifications/event", row)
		}
		*dst = v
	}
	if err := s.store.SetEventConfig(ctx, s.db, row.NotifEventConfig); err != nil {
		return err
	}
	if !isHTMX(c) {
		s.setFlash(c, "Canales de «"+notifEventLabel(row.Evento)+"» guardados.")
		return c.Redirect("/app/notificaciones/config", fiber.StatusSeeOther)
	}
	row.Saved = true
	return s.render(c, fiber.StatusOK, "partials/notifications/event", "partials/notifications/event", row)
}

type inboxPage struct {
	Page
	Items []db.InboxItem
	Pager Pager
	// OOB also sends the layout's unread badge, updated, with an htmx answer.
	OOB bool
}

func (s *Server) inboxData(c *fiber.Ctx, title string) (inboxPage, error) {
	page := 1
	if v := c.Query("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return inboxPage{}, fiber.NewError(fiber.StatusUnprocessableEntity, "La página debe ser un número desde 1.")
		}
		page = n
	}
	u := currentUser(c)
	items, total, err := s.store.Inbox(c.UserContext(), s.db, u.ID, page)
	if err != nil {
		return inboxPage{}, err
	}
	if last := lastPage(total); page > last {
		page = last
		if items, total, err = s.store.Inbox(c.UserContext(), s.db, u.ID, page); err != nil {
			return inboxPage{}, err
		}
	}
	return inboxPage{Page: s.page(c, title), Items: items,
		Pager: newPager("/app/notificaciones", queryValues(c), page, len(items), total)}, nil
}

func (s *Server) showInbox(c *fiber.Ctx) error {
	data, err := s.inboxData(c, "Notificaciones")
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/notifications/index", "partials/notifications/list", data)
}

// markRead marks one notification of the user read; another user's is 404.
func (s *Server) markRead(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return fiber.NewError(fiber.StatusNotFound, "No existe esa notificación.")
	}
	err = s.store.MarkRead(c.UserContext(), s.db, currentUser(c).ID, id)
	if errors.Is(err, db.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "No existe esa notificación.")
	}
	if err != nil {
		return err
	}
	return s.inboxAfterPost(c)
}

func (s *Server) markAllRead(c *fiber.Ctx) error {
	if err := s.store.MarkAllRead(c.UserContext(), s.db, currentUser(c).ID); err != nil {
		return err
	}
	return s.inboxAfterPost(c)
}

// inboxAfterPost answers a change in the inbox: the list for htmx (with the
// layout's unread count updated out of band), 303 otherwise.
func (s *Server) inboxAfterPost(c *fiber.Ctx) error {
	if !isHTMX(c) {
		return c.Redirect("/app/notificaciones", fiber.StatusSeeOther)
	}
	data, err := s.inboxData(c, "Notificaciones")
	if err != nil {
		return err
	}
	data.OOB = true
	return s.render(c, fiber.StatusOK, "partials/notifications/list", "partials/notifications/list", data)
}
