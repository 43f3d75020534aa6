package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

const (
	sessionCookie = "pasarela_session"
	localUser     = "user"
	// localLiveToken is the live-update mark taken as the request began.
	localLiveToken = "live_token"
)

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// currentUser is the logged-in user of the request, or nil.
func currentUser(c *fiber.Ctx) *db.User {
	u, _ := c.Locals(localUser).(*db.User)
	return u
}

// loadSession puts the session's user, if any, in the request. A cookie that
// names no live session is cleared.
func (s *Server) loadSession(c *fiber.Ctx) error {
	token := c.Cookies(sessionCookie)
	if token == "" {
		return c.Next()
	}
	// A page's event stream reconnects by itself while the tab is open: it is
	// not the user's activity, so it does not keep an idle session alive.
	touch := c.Path() != liveEventsPath
	u, err := s.store.UserBySession(c.UserContext(), s.db, hashToken(token), touch)
	switch {
	case errors.Is(err, db.ErrNotFound):
		s.clearSessionCookie(c)
	case err != nil:
		return err
	default:
		c.Locals(localUser, u)
	}
	// The catch-up mark of the page, taken before anything the page shows is
	// read: a change committed meanwhile is then newer than the mark (live.go).
	c.Locals(localLiveToken, s.live.token())
	return c.Next()
}

// requireUser sends a visitor without a session to the login page: a page
// request by 303, an htmx request by 401 with HX-Redirect (CONTRACT §2).
func requireUser(c *fiber.Ctx) error {
	if currentUser(c) != nil {
		return c.Next()
	}
	if c.Get("HX-Request") == "true" {
		c.Set("HX-Redirect", "/login")
		return c.Status(fiber.StatusUnauthorized).SendString("Sesión requerida")
	}
	to := "/login"
	if c.Method() == fiber.MethodGet {
		to += "?next=" + url.QueryEscape(c.OriginalURL())
	}
	return c.Redirect(to, fiber.StatusSeeOther)
}

// requireModule lets through only users whose role has the module.
func requireModule(module string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if u := currentUser(c); u == nil || !u.HasModule(module) {
			return fiber.NewError(fiber.StatusForbidden, "Su rol no tiene el módulo "+module+".")
		}
		return c.Next()
	}
}

// startSession replaces any session of this browser with a new one for u:
// a fresh token at every login, so a token planted before login is worthless.
func (s *Server) startSession(c *fiber.Ctx, u *db.User) error {
	if old := c.Cookies(sessionCookie); old != "" {
		if err := s.store.DeleteSession(c.UserContext(), s.db, hashToken(old)); err != nil {
			return err
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	sess := &db.Session{
		TokenHash: hashToken(token), UserID: u.ID,
		IP: s.clientIP(c).String(), UserAgent: cleanText(c.Get(fiber.HeaderUserAgent), 300),
	}
	if err := s.store.CreateSession(c.UserContext(), s.db, sess); err != nil {
		return err
	}
	// A browser-session cookie: closing the browser logs out; the server also
	// ends idle sessions (db.SessionIdle).
	c.Cookie(&fiber.Cookie{
		Name: sessionCookie, Value: token, Path: "/", HTTPOnly: true,
		Secure: s.cfg.SecureCookies(), SameSite: fiber.CookieSameSiteLaxMode,
	})
	s.rotateCSRF(c)
	return nil
}

func (s *Server) clearSessionCookie(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{
		Name: sessionCookie, Value: "", Path: "/", HTTPOnly: true, Expires: time.Unix(0, 0),
		Secure: s.cfg.SecureCookies(), SameSite: fiber.CookieSameSiteLaxMode,
	})
}

// safeNext keeps a post-login redirect on this site: a local path, never
// "//host" or a scheme.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/app"
	}
	return next
}
