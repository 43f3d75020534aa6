package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
		if last := lastPage(total); page > last {
			// Past the end: the last page, never an empty range.
			page = last
			if rows, total, err = s.store.Webhooks(ctx, s.db, f, page); err != nil {
				return err
			}
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
	Back    string
}

func (s *Server) showWebhook(c *fiber.Ctx) error {
	w, err := s.webhookParam(c)
	if err != nil {
		return err
	}
	data := webhookPage{Page: s.page(c, "Notificación "+w.NotificationID), Webhook: w,
		Pretty: prettyJSON([]byte(w.Payload)), Back: backTo(c, "/app/webhooks/gwa")}
	return s.render(c, fiber.StatusOK, "pages/webhooks/show", "", data)
}

// prettyJSON indents a JSON document for reading; anything else is shown as it is.
func prettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

// backTo is where a detail page's back link goes: the list the user came from,
// with its page and filters (the Referer, when it is that list on this site),
// else the list itself.
func backTo(c *fiber.Ctx, list string) string {
	ref, err := url.Parse(c.Get(fiber.HeaderReferer))
	if err != nil || ref.Host != c.Hostname() || ref.Path != list {
		return list
	}
	return ref.RequestURI()
}

// lastPage is the number of the last page of a list of total rows (1 when empty).
func lastPage(total int) int {
	return max(1, (total+db.PageSize-1)/db.PageSize)
}

type attemptPage struct {
	Page
	Attempt   *db.Attempt
	Pretty    string
	Back      string
	LinkIsWeb bool
}

func (s *Server) showAttempt(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return fiber.NewError(fiber.StatusNotFound, "No existe ese intento de pago.")
	}
	a, err := s.store.Attempt(c.UserContext(), s.db, id)
	if errors.Is(err, db.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "No existe ese intento de pago.")
	}
	if err != nil {
		return err
	}
	link, _ := url.Parse(a.PaymentLink)
	data := attemptPage{Page: s.page(c, fmt.Sprintf("Intento de pago %d", a.ID)), Attempt: a,
		Pretty: prettyJSON(a.Params), Back: backTo(c, "/app/pagos/intentos"),
		LinkIsWeb: link != nil && (link.Scheme == "https" || link.Scheme == "http") && link.Host != ""}
	return s.render(c, fiber.StatusOK, "pages/attempts/show", "", data)
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
		if last := lastPage(total); page > last {
			page = last
			if rows, total, err = s.store.Attempts(c.UserContext(), s.db, f, page); err != nil {
				return err
			}
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
