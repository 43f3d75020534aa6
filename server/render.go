package server

import (
	"encoding/base64"
	"time"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// Page is the data every full page needs; page data structs embed it.
type Page struct {
	Title  string
	User   *db.User
	CSRF   string
	Flash  string
	Nav    []NavSection
	Unread int
	// TZ is the user's time zone; dates are shown in it.
	TZ string
	// Charts loads uPlot and its stylesheet on the page.
	Charts bool
	// DragDrop loads SortableJS (the task board).
	DragDrop bool
	// Live is the catch-up token of the page's event stream (live.go).
	Live string
}

// page fills the common data of a page for the current request and consumes
// the pending flash message.
func (s *Server) page(c *fiber.Ctx, title string) Page {
	u := currentUser(c)
	p := Page{Title: title, User: u, CSRF: csrfToken(c), Flash: s.takeFlash(c), TZ: "UTC"}
	if u != nil {
		p.Nav = navFor(u, c.Path())
		p.Live, _ = c.Locals(localLiveToken).(string)
		p.TZ = u.TimeZone
		n, err := s.store.UnreadCount(c.UserContext(), s.db, u.ID)
		if err != nil { // the badge is not worth failing a page for
			requestLogger(c, s.log).Error("unread count", "error", err)
		}
		p.Unread = n
	}
	return p
}

// isHTMX reports whether the request wants a fragment: an htmx request that is
// neither a boosted navigation nor a history restore (both want the whole page).
func isHTMX(c *fiber.Ctx) bool {
	return c.Get("HX-Request") == "true" && c.Get("HX-Boosted") != "true" &&
		c.Get("HX-History-Restore-Request") != "true"
}

// render is the one place that decides full page or fragment. A plain request
// gets view inside the layout; an htmx request gets fragment alone (or view
// alone when fragment is empty).
func (s *Server) render(c *fiber.Ctx, status int, view, fragment string, data any) error {
	c.Vary("HX-Request")
	c.Status(status)
	if isHTMX(c) {
		if fragment == "" {
			fragment = view
		}
		return c.Render(fragment, data)
	}
	return c.Render(view, data, "layouts/base")
}

// redirectAfterPost answers a successful form POST: 303 for a plain request,
// HX-Location for htmx (which then loads the page as a navigation).
func redirectAfterPost(c *fiber.Ctx, to string) error {
	if isHTMX(c) {
		c.Set("HX-Location", to)
		return c.SendStatus(fiber.StatusNoContent)
	}
	return c.Redirect(to, fiber.StatusSeeOther)
}

const flashCookie = "pasarela_flash"

// setFlash leaves a one-line message for the next page the browser shows.
func (s *Server) setFlash(c *fiber.Ctx, msg string) {
	c.Cookie(&fiber.Cookie{
		Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(msg)), Path: "/",
		HTTPOnly: true, Secure: s.cfg.SecureCookies(), SameSite: fiber.CookieSameSiteLaxMode,
		Expires: time.Now().Add(time.Minute),
	})
}

func (s *Server) takeFlash(c *fiber.Ctx) string {
	v := c.Cookies(flashCookie)
	if v == "" {
		return ""
	}
	c.Cookie(&fiber.Cookie{Name: flashCookie, Value: "", Path: "/", Expires: time.Unix(0, 0), HTTPOnly: true})
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) > 500 {
		return ""
	}
	return string(b)
}
