package server

import (
	"errors"
	"math"
	"net/mail"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// Login throttling: failures allowed per window (db.ThrottleWindow) before
// that account, or that address, must wait for the window to end.
const (
	maxFailuresPerAccount = 5
	maxFailuresPerIP      = 20
)

type loginPage struct {
	Page
	Email  string
	Next   string
	Error  string
	Fields map[string]string
}

func (s *Server) showLogin(c *fiber.Ctx) error {
	if currentUser(c) != nil {
		return c.Redirect(safeNext(c.Query("next")), fiber.StatusSeeOther)
	}
	return s.renderLogin(c, fiber.StatusOK, loginPage{Next: safeNext(c.Query("next"))})
}

func (s *Server) renderLogin(c *fiber.Ctx, status int, data loginPage) error {
	data.Page = s.page(c, "Iniciar sesión")
	if data.Fields == nil {
		data.Fields = map[string]string{}
	}
	// Always the whole page: the login form is a plain form, never a fragment.
	c.Vary("HX-Request")
	return c.Status(status).Render("pages/auth/login", data, "layouts/base")
}

func (s *Server) login(c *fiber.Ctx) error {
	data := loginPage{
		Email:  strings.TrimSpace(c.FormValue("email")),
		Next:   safeNext(c.FormValue("next")),
		Fields: map[string]string{},
	}
	password := c.FormValue("password")
	if _, err := mail.ParseAddress(data.Email); err != nil {
		data.Fields["email"] = "Escriba su correo electrónico."
	}
	if password == "" {
		data.Fields["password"] = "Escriba su contraseña."
	}
	if len(data.Fields) > 0 {
		return s.renderLogin(c, fiber.StatusUnprocessableEntity, data)
	}

	ctx := c.UserContext()
	accountKey := "email:" + strings.ToLower(data.Email)
	ipKey := "ip:" + s.clientIP(c).String()
	wait, err := s.store.ThrottleBlocked(ctx, s.db, map[string]int{accountKey: maxFailuresPerAccount, ipKey: maxFailuresPerIP})
	if err != nil {
		return err
	}
	if wait > 0 {
		secs := int(math.Ceil(wait.Seconds()))
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
		data.Error = "Demasiados intentos fallidos. Espere " + minutesText(secs) + " e intente de nuevo."
		return s.renderLogin(c, fiber.StatusTooManyRequests, data)
	}

	u, err := s.store.Authenticate(ctx, s.db, data.Email, password)
	if errors.Is(err, db.ErrBadCredentials) {
		if err := s.store.ThrottleFail(ctx, s.db, accountKey, ipKey); err != nil {
			return err
		}
		requestLogger(c, s.log).Warn("login failed", "email", data.Email, "ip", s.clientIP(c).String())
		data.Error = "Correo o contraseña incorrectos."
		return s.renderLogin(c, fiber.StatusUnauthorized, data)
	}
	if err != nil {
		return err
	}
	if err := s.store.ThrottleReset(ctx, s.db, accountKey); err != nil {
		return err
	}
	if err := s.startSession(c, u); err != nil {
		return err
	}
	return c.Redirect(data.Next, fiber.StatusSeeOther)
}

// minutesText says secs in whole minutes, rounded up, as the lockout message
// does: the same wait as Retry-After, never less.
func minutesText(secs int) string {
	if m := (secs + 59) / 60; m != 1 {
		return strconv.Itoa(m) + " minutos"
	}
	return "1 minuto"
}

func (s *Server) logout(c *fiber.Ctx) error {
	if token := c.Cookies(sessionCookie); token != "" {
		if err := s.store.DeleteSession(c.UserContext(), s.db, hashToken(token)); err != nil {
			return err
		}
	}
	s.clearSessionCookie(c)
	s.rotateCSRF(c)
	s.setFlash(c, "Sesión cerrada.")
	return c.Redirect("/login", fiber.StatusSeeOther)
}
