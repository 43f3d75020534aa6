package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"pasarela/db"
	"pasarela/jobs"
)

type webhookListPage struct {
	Page
	Filter     db.ListFilter
	Problems   map[string]string
	Rows       []db.Webhook
	Pager      Pager
	Events     []string
	Statuses   []string
	Rejections []db.WebhookRejections
	Rejected   int64
	WebhookURL string
}

func (s *Server) listWebhooks(c *fiber.Ctx) error {
	ctx := c.UserContext()
	f, page, problems := listQuery(c, db.WebhookStatuses)
	data := webhookListPage{
		Page: s.page(c, "Notificaciones de la pasarela de pago"), Filter: f, Problems: problems,
		Events: db.WebhookEvents, Statuses: db.WebhookStatuses, WebhookURL: s.cfg.BaseURL + "/webhooks/gwa",
	}
	status := fiber.StatusOK
	if problems != nil {
		status = fiber.StatusUnprocessableEntity
	} else {
		rows, total, err := s.store.Webhooks(ctx, s.db, f, page)
		if err != nil {
			return err
		}
		data.Rows = rows
		data.Pager = newPager(c.Path(), queryValues(c), page, len(rows), total)
	}
	if !isHTMX(c) {
		var err error
		if data.Rejections, data.Rejected, err = s.store.Rejections(ctx, s.db, 10); err != nil {
			return err
		}
	}
	return s.render(c, status, "pages/webhooks/index", "partials/webhooks/list", data)
}

type webhookPage struct {
	Page
	Webhook *db.Webhook
	Pretty  string
}

func (s *Server) showWebhook(c *fiber.Ctx) error {
	w, err := s.webhookParam(c)
	if err != nil {
		return err
	}
	data := webhookPage{Page: s.page(c, "Notificación "+w.NotificationID), Webhook: w, Pretty: w.Payload}
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(w.Payload), "", "  ") == nil {
		data.Pretty = buf.String()
	}
	return s.render(c, fiber.StatusOK, "pages/webhooks/show", "", data)
}

// reprocessWebhook queues the notification's processing again, marking it
// unprocessed in the same transaction.
func (s *Server) reprocessWebhook(c *fiber.Ctx) error {
	w, err := s.webhookParam(c)
	if err != nil {
		return err
	}
	err = s.db.RunInTx(c.UserContext(), nil, func(ctx context.Context, tx bun.Tx) error {
		if err := s.store.MarkForReprocessing(ctx, tx, w.ID); err != nil {
			return err
		}
		_, err := s.queue.InsertTx(ctx, tx, jobs.ProcessWebhookArgs{WebhookIDs: []int64{w.ID}}, nil)
		return err
	})
	if err != nil {
		return err
	}
	s.setFlash(c, "Procesamiento encolado de nuevo.")
	return redirectAfterPost(c, "/app/webhooks/gwa/"+strconv.FormatInt(w.ID, 10))
}

func (s *Server) webhookParam(c *fiber.Ctx) (*db.Webhook, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, fiber.NewError(fiber.StatusNotFound, "No existe esa notificación.")
	}
	w, err := s.store.Webhook(c.UserContext(), s.db, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, fiber.NewError(fiber.StatusNotFound, "No existe esa notificación.")
	}
	return w, err
}

type attemptListPage struct {
	Page
	Filter   db.ListFilter
	Problems map[string]string
	Rows     []db.Attempt
	Pager    Pager
	Statuses []string
}

func (s *Server) listAttempts(c *fiber.Ctx) error {
	f, page, problems := listQuery(c, db.AttemptStatuses)
	f.Event = ""
	data := attemptListPage{Page: s.page(c, "Intentos de pago"), Filter: f, Problems: problems, Statuses: db.AttemptStatuses}
	status := fiber.StatusOK
	if problems != nil {
		status = fiber.StatusUnprocessableEntity
	} else {
		rows, total, err := s.store.Attempts(c.UserContext(), s.db, f, page)
		if err != nil {
			return err
		}
		data.Rows = rows
		data.Pager = newPager(c.Path(), queryValues(c), page, len(rows), total)
	}
	return s.render(c, status, "pages/attempts/index", "partials/attempts/list", data)
}

func queryValues(c *fiber.Ctx) url.Values {
	v, _ := url.ParseQuery(string(c.Request().URI().QueryString()))
	return v
}
