package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// CSRF is a signed double submit: the browser holds a random HttpOnly cookie,
// and forms carry HMAC(APP_SECRET, cookie). Another site can neither read the
// cookie nor compute the token, and the check needs no server-side state, so
// any number of web processes agree. The cookie is replaced at login and logout.

const (
	csrfCookie     = "pasarela_csrf"
	localCSRFToken = "csrf_token"
	csrfFormField  = "_csrf"
	csrfHeader     = "X-CSRF-Token"
)

type csrfKey []byte

func newCSRFKey(secret []byte) csrfKey {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("pasarela csrf v1"))
	return m.Sum(nil)
}

func (k csrfKey) token(cookie string) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfToken is the token forms and the layout's meta tag carry.
func csrfToken(c *fiber.Ctx) string {
	t, _ := c.Locals(localCSRFToken).(string)
	return t
}

// csrfExempt says which requests behind the CSRF check it does not apply to
// (CONTRACT §2): API calls (/v1/, /api/) with a Bearer token, which a browser
// never sends by itself, and API calls without a session, which the API's own
// authentication answers with 401. The other public endpoints (webhook, return
// page) are routed before the check.
func csrfExempt(c *fiber.Ctx) bool {
	if !strings.HasPrefix(c.Path(), "/v1/") && !strings.HasPrefix(c.Path(), "/api/") {
		return false
	}
	return strings.HasPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ") || currentUser(c) == nil
}

// checkCSRF issues the cookie to a browser that lacks one and refuses a
// state-changing request whose token is missing or wrong.
func (s *Server) checkCSRF(c *fiber.Ctx) error {
	cookie := c.Cookies(csrfCookie)
	if len(cookie) < 32 {
		cookie = s.rotateCSRF(c)
	}
	c.Locals(localCSRFToken, s.csrf.token(cookie))

	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	if csrfExempt(c) || c.Locals(localNoRoute) != nil {
		return c.Next()
	}
	// River's UI is a separate single-page app that cannot send our token; its
	// JSON API is held to same-origin requests instead.
	if strings.HasPrefix(c.Path(), "/app/jobs/") {
		if !sameOrigin(c) {
			return fiber.NewError(fiber.StatusForbidden, "Solicitud de otro origen rechazada.")
		}
		return c.Next()
	}
	sent := c.Get(csrfHeader)
	if sent == "" {
		sent = c.FormValue(csrfFormField)
	}
	want := csrfToken(c)
	if sent == "" || c.Cookies(csrfCookie) == "" || !hmac.Equal([]byte(sent), []byte(want)) {
		return fiber.NewError(fiber.StatusForbidden,
			"Falta el token de seguridad (CSRF) o no es válido. Recargue la página e intente de nuevo.")
	}
	return c.Next()
}

// rotateCSRF sets a new CSRF cookie and returns its value.
func (s *Server) rotateCSRF(c *fiber.Ctx) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	c.Cookie(&fiber.Cookie{
		Name: csrfCookie, Value: v, Path: "/", HTTPOnly: true, Secure: s.cfg.SecureCookies(),
		SameSite: fiber.CookieSameSiteLaxMode, Expires: time.Now().Add(30 * 24 * time.Hour),
	})
	c.Locals(localCSRFToken, s.csrf.token(v))
	return v
}

// sameOrigin reports whether the browser says the request comes from our own pages.
func sameOrigin(c *fiber.Ctx) bool {
	if site := c.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == c.Hostname()
}
