package server

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

const localRequestID = "request_id"

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{8,64}$`)

// logRequests gives each request an id (the caller's X-Request-ID when sane),
// answers errors through the ErrorHandler so the logged status is the one
// sent, and writes one log line per request.
func (s *Server) logRequests(c *fiber.Ctx) error {
	start := time.Now()
	id := c.Get("X-Request-ID")
	if !validRequestID.MatchString(id) {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
	}
	c.Locals(localRequestID, id)
	c.Set("X-Request-ID", id)

	if err := c.Next(); err != nil {
		if herr := s.handleError(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	status := c.Response().StatusCode()
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	if c.Path() == "/healthz" || c.Path() == "/readyz" || strings.HasPrefix(c.Path(), "/static/") {
		level = slog.LevelDebug
	}
	s.log.LogAttrs(c.UserContext(), level, "request",
		slog.String("request_id", id),
		slog.String("method", c.Method()),
		slog.String("path", c.Path()),
		slog.Int("status", status),
		slog.Duration("duration", time.Since(start)),
		slog.String("ip", s.clientIP(c).String()),
	)
	return nil
}

// requestLogger is the app's logger with the request id attached.
func requestLogger(c *fiber.Ctx, base *slog.Logger) *slog.Logger {
	if id, ok := c.Locals(localRequestID).(string); ok {
		return base.With(slog.String("request_id", id))
	}
	return base
}

// contentSecurityPolicy allows only our own files: no inline script, no CDN.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

// refuseEncodedBodies answers 415 to a request body sent compressed. Fiber
// unpacks such a body, with no limit, wherever a handler reads it: a few
// megabytes of gzip could expand to gigabytes in memory, also on the public
// endpoints. Browsers, gateways and our agent send bodies as they are.
func refuseEncodedBodies(c *fiber.Ctx) error {
	if ce := strings.TrimSpace(c.Get(fiber.HeaderContentEncoding)); ce != "" && !strings.EqualFold(ce, "identity") {
		return fiber.NewError(fiber.StatusUnsupportedMediaType, "Cuerpos comprimidos (Content-Encoding) no admitidos.")
	}
	return c.Next()
}

// secureHeaders sets the headers every response of ours carries. River's UI
// brings its own scripts and styles, so it is left out of the CSP.
func secureHeaders(c *fiber.Ctx) error {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("X-Frame-Options", "DENY")
	if !strings.HasPrefix(c.Path(), "/app/jobs") {
		c.Set("Content-Security-Policy", contentSecurityPolicy)
	}
	return c.Next()
}
