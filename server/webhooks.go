package server

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"regexp"
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
)

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
	reject := func(status int, reason string) error {
		err := s.store.RecordRejection(ctx, s.db, &db.WebhookRejection{Reason: reason, IP: ip, BodyBytes: len(body)})
		if err != nil {
			return err
		}
		requestLogger(c, s.log).Warn("webhook rejected", "reason", reason, "ip", ip, "bytes", len(body))
		return fiber.NewError(status, reasonMessage(reason))
	}

	if len(body) > maxWebhookBytes {
		return reject(fiber.StatusRequestEntityTooLarge, rejectTooLarge)
	}
	if mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); err != nil || mt != fiber.MIMEApplicationJSON {
		return reject(fiber.StatusUnsupportedMediaType, rejectContentType)
	}
	env, secret, err := s.gwaSecret(ctx)
	if err != nil {
		return err
	}
	verified := false
	switch {
	case secret == "" && env == db.EnvProduction:
		return reject(fiber.StatusUnauthorized, rejectNoSecret)
	case secret == "":
		// Test environment without a secret: accepted, stored as unverified.
	case c.Get("X-Signature") == "":
		return reject(fiber.StatusUnauthorized, rejectNoSignature)
	case !validSignature(secret, body, c.Get("X-Signature")):
		return reject(fiber.StatusUnauthorized, rejectBadSignature)
	default:
		verified = true
	}

	var n gwaNotification
	// JSON is UTF-8 (RFC 8259); the raw body is stored as text, which must be too.
	if !utf8.Valid(body) || json.Unmarshal(body, &n) != nil || strings.TrimSpace(n.Event) == "" || strings.TrimSpace(n.ID) == "" {
		return reject(fiber.StatusBadRequest, rejectBadJSON)
	}
	w := &db.Webhook{
		NotificationID: cleanText(n.ID, 200),
		Event:          cleanText(n.Event, 100),
		Status:         db.StatusForEvent(n.Event),
		PaymentID:      cleanText(n.Data.PaymentID, 200),
		Reference:      cleanText(n.Data.Reference, 200),
		PayerEmail:     cleanText(n.Data.Payer.Email, 320),
		Amount:         parseAmount(n.Data.Amount),
		Currency:       cleanText(n.Data.Currency, 10),
		GatewayStatus:  cleanText(n.Data.Status, 50),
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

// decimalAmount is a plain decimal number: what PostgreSQL's numeric reads and
// an amount can be. (strconv.ParseFloat also takes hex, NaN, Inf and digit
// separators, which numeric refuses.)
var decimalAmount = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$`)

// parseAmount accepts a JSON number or a numeric string; anything else is kept
// only in the raw payload.
func parseAmount(raw json.RawMessage) *string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	v := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil
		}
	}
	v = strings.TrimSpace(v)
	if len(v) > 40 || !decimalAmount.MatchString(v) {
		return nil
	}
	return &v
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
