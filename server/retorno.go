package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// Limits on what a return visit records: it is public, so it stays small.
const (
	maxReturnParams     = 50
	maxReturnParamBytes = 2000
)

type retornoPage struct {
	Page
	Reference string
	Paid      bool
	// InvalidReference: one came, too long to be a reference.
	InvalidReference bool
}

// paymentReturn records one visit of a payer coming back from the checkout
// gateway and shows a page that waits for the payment to be confirmed.
func (s *Server) paymentReturn(c *fiber.Ctx) error {
	params := map[string]any{}
	add := func(k, v []byte) {
		if len(params) >= maxReturnParams {
			return
		}
		key, val := cleanText(string(k), 100), cleanText(string(v), maxReturnParamBytes)
		switch prev := params[key].(type) {
		case nil:
			params[key] = val
		case string:
			params[key] = []string{prev, val}
		case []string:
			params[key] = append(prev, val)
		}
	}
	c.Request().URI().QueryArgs().VisitAll(add)
	if c.Method() == fiber.MethodPost {
		c.Request().PostArgs().VisitAll(add)
	}
	first := func(name string) string {
		switch v := params[name].(type) {
		case string:
			return strings.TrimSpace(v)
		case []string:
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	// A reference is an identifier: cut, it could match another order's
	// approval. One longer than any gateway's is not taken as a reference; the
	// visit is still recorded (CONTRACT §3), with what came in its parameters.
	reference, tooLong := first("reference"), false
	if utf8.RuneCountInString(reference) > maxReferenceChars {
		reference, tooLong = "", true
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	a := &db.Attempt{
		Reference:   storable(reference),
		PaymentLink: cleanText(first("payment_link"), 1000),
		Email:       cleanText(first("email"), 320),
		IP:          s.clientIP(c).String(),
		UserAgent:   cleanText(c.Get(fiber.HeaderUserAgent), 300),
		Params:      raw,
	}
	if err := s.store.RecordAttempt(c.UserContext(), s.db, a); err != nil {
		return err
	}
	data := retornoPage{Page: s.page(c, "Estado de su pago"), Reference: a.Reference, Paid: a.Status == db.AttemptPaid,
		InvalidReference: tooLong}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Render("pages/retorno/index", data, "layouts/public")
}

// paymentStatus is what the return page polls: the status fragment.
func (s *Server) paymentStatus(c *fiber.Ctx) error {
	ref := strings.TrimSpace(c.Query("reference"))
	if ref == "" {
		return fiber.NewError(fiber.StatusUnprocessableEntity, "Falta la referencia del pedido.")
	}
	if utf8.RuneCountInString(ref) > maxReferenceChars {
		return fiber.NewError(fiber.StatusUnprocessableEntity, fmt.Sprintf("La referencia del pedido supera %d caracteres.", maxReferenceChars))
	}
	paid, err := s.store.ReferencePaid(c.UserContext(), s.db, ref)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Render("partials/retorno/status", retornoPage{Reference: ref, Paid: paid})
}
