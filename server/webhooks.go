package server

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// maxWebhookBytes is the largest notification accepted (CONTRACT §3).
const maxWebhookBytes = 1 << 20

// Reasons a delivery is refused, as the webhook page shows them.
const (
	rejectTooLarge     = "cuerpo demasiado grande"
	rejectContentType  = "tipo de contenido no JSON"
	rejectNoSignature  = "falta la firma"
	rejectBadSignature = "firma inválida"
	rejectNoSecret     = "sin clave secreta en producción"
	rejectBadJSON      = "JSON inválido o sin event/id"
	rejectLongField    = "identificador demasiado largo"
)

// Limits of the fields that identify a notification or are searched. A longer
// value is refused, never cut: two ids that differ only past the cut would
// collide, and the gateway would be told a lost notification was a duplicate.
var identifierLimits = []struct {
	field string
	max   int // characters
	value func(*gwaNotification) string
}{
	{"id", 255, func(n *gwaNotification) string { return n.ID }},
	{"event", 100, func(n *gwaNotification) string { return n.Event }},
	{"data.payment_id", 255, func(n *gwaNotification) string { return n.Data.PaymentID }},
	{"data.reference", maxReferenceChars, func(n *gwaNotification) string { return n.Data.Reference }},
	{"data.payer.email", 320, func(n *gwaNotification) string { return n.Data.Payer.Email }},
}

// maxReferenceChars is the longest order reference taken, by the receiver and
// by the return page alike.
const maxReferenceChars = 255

// gwaSecretCache keeps the active environment and secret of the checkout
// gateway for a few seconds: every delivery needs them, they rarely change,
// and the process that saves new settings drops its copy at once.
type gwaSecretCache struct {
	mu      sync.Mutex
	env     string
	secret  string
	expires time.Time
}

const gwaSecretTTL = 3 * time.Second

func (s *Server) gwaSecret(ctx context.Context) (env, secret string, err error) {
	c := &s.gwaCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Now().Before(c.expires) {
		return c.env, c.secret, nil
	}
	g, err := s.store.GatewaySettings(ctx, s.db, s.box, db.GatewayCheckout)
	if err != nil {
		return "", "", err
	}
	c.env, c.secret, c.expires = g.Environment(), g.Active("secret_key"), time.Now().Add(gwaSecretTTL)
	return c.env, c.secret, nil
}

func (s *Server) forgetGWASecret() {
	s.gwaCache.mu.Lock()
	s.gwaCache.expires = time.Time{}
	s.gwaCache.mu.Unlock()
}

// gwaNotification is the part of a notification we read; the raw body is kept whole.
type gwaNotification struct {
	ID        string `json:"id"`
	Event     string `json:"event"`
	CreatedAt string `json:"created_at"`
	Data      struct {
		PaymentID string `json:"payment_id"`
		Reference string `json:"reference"`
		Payer     struct {
			Email string `json:"email"`
		} `json:"payer"`
		Amount   json.RawMessage `json:"amount"`
		Currency string          `json:"currency"`
		Status   string          `json:"status"`
	} `json:"data"`
}

// receiveGWAWebhook stores a checkout-gateway notification and its processing
// job in one transaction, then answers 200: nothing acknowledged is lost.
func (s *Server) receiveGWAWebhook(c *fiber.Ctx) error {
	ctx := c.UserContext()
	ip := s.clientIP(c).String()
	body := c.Body()
	// reject counts a refused delivery; msg says more than the reason's message when set.
	reject := func(status int, reason, msg string) error {
		s.rejections.add(reason, ip, len(body))
		requestLogger(c, s.log).Debug("webhook rejected", "reason", reason, "ip", ip, "bytes", len(body))
		if msg == "" {
			msg = reasonMessage(reason)
		}
		return fiber.NewError(status, msg)
	}

	if len(body) > maxWebhookBytes {
		return reject(fiber.StatusRequestEntityTooLarge, rejectTooLarge, "")
	}
	if mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); err != nil || mt != fiber.MIMEApplicationJSON {
		return reject(fiber.StatusUnsupportedMediaType, rejectContentType, "")
	}
	env, secret, err := s.gwaSecret(ctx)
	if err != nil {
		return err
	}
	verified := false
	switch {
	case secret == "" && env == db.EnvProduction:
		return reject(fiber.StatusUnauthorized, rejectNoSecret, "")
	case secret == "":
		// Test environment without a secret: accepted, stored as unverified.
	case c.Get("X-Signature") == "":
		return reject(fiber.StatusUnauthorized, rejectNoSignature, "")
	case !validSignature(secret, body, c.Get("X-Signature")):
		return reject(fiber.StatusUnauthorized, rejectBadSignature, "")
	default:
		verified = true
	}

	var n gwaNotification
	// JSON is UTF-8 (RFC 8259); the raw body is stored as text, which must be too.
	if !utf8.Valid(body) || json.Unmarshal(body, &n) != nil || strings.TrimSpace(n.Event) == "" || strings.TrimSpace(n.ID) == "" {
		return reject(fiber.StatusBadRequest, rejectBadJSON, "")
	}
	for _, l := range identifierLimits {
		if utf8.RuneCountInString(l.value(&n)) > l.max {
			return reject(fiber.StatusBadRequest, rejectLongField, fmt.Sprintf("El campo %s supera %d caracteres.", l.field, l.max))
		}
	}
	// Within their limits, text fields are stored whole (only made storable).
	w := &db.Webhook{
		NotificationID: storable(n.ID),
		Event:          storable(n.Event),
		Status:         db.StatusForEvent(n.Event),
		PaymentID:      storable(n.Data.PaymentID),
		Reference:      storable(n.Data.Reference),
		PayerEmail:     storable(n.Data.Payer.Email),
		Amount:         storedAmount(n.Data.Amount),
		Currency:       storable(n.Data.Currency),
		GatewayStatus:  storable(n.Data.Status),
		Environment:    env,
		Verified:       verified,
		IP:             ip,
		Payload:        string(body),
	}
	if t, err := time.Parse(time.RFC3339, n.CreatedAt); err == nil {
		w.EventCreatedAt = &t
	}

	duplicate, err := s.ingest.storeWebhook(ctx, w)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": w.ID, "duplicate": duplicate})
}

func reasonMessage(reason string) string {
	switch reason {
	case rejectTooLarge:
		return "La notificación supera 1 MiB."
	case rejectContentType:
		return "Content-Type debe ser application/json."
	case rejectNoSignature:
		return "Falta la cabecera X-Signature."
	case rejectBadSignature:
		return "La firma X-Signature no corresponde al cuerpo."
	case rejectNoSecret:
		return "La pasarela está en producción sin clave secreta: se rechaza toda notificación."
	case rejectBadJSON:
		return "El cuerpo no es JSON válido en UTF-8 o le falta id o event."
	}
	return reason
}
