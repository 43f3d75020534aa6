package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// tokenPrefix marks Pasarela's API tokens, so a leaked one is recognisable.
const tokenPrefix = "psk_"

// revealCookie carries a just-created secret to the page that shows it once
// (revealOnce).
const revealCookie = "pasarela_reveal"

type tokensPage struct {
	Page
	Tokens   []db.APIToken
	NewToken string
	NewID    int64
	Name     string
	Problem  string
}

func (s *Server) tokensData(c *fiber.Ctx) (tokensPage, error) {
	data := tokensPage{Page: s.page(c, "Tokens de API")}
	var err error
	data.Tokens, err = s.store.APITokens(c.UserContext(), s.db)
	return data, err
}

func (s *Server) listTokens(c *fiber.Ctx) error {
	data, err := s.tokensData(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/tokens/index", "partials/tokens/list", data)
}

func (s *Server) createToken(c *fiber.Ctx) error {
	name := strings.TrimSpace(c.FormValue("name"))
	if name == "" || len([]rune(name)) > 100 {
		data, err := s.tokensData(c)
		if err != nil {
			return err
		}
		data.Name, data.Problem = name, "Escriba un nombre de 1 a 100 caracteres que diga quién usará el token."
		return s.render(c, fiber.StatusUnprocessableEntity, "pages/tokens/index", "partials/tokens/list", data)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	secret := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	u := currentUser(c)
	t := &db.APIToken{Name: name, TokenHash: hashToken(secret), Prefix: secret[:len(tokenPrefix)+6], CreatedBy: &u.ID}
	if err := s.store.CreateAPIToken(c.UserContext(), s.db, t); err != nil {
		return err
	}
	if isHTMX(c) {
		data, err := s.tokensData(c)
		if err != nil {
			return err
		}
		data.NewToken, data.NewID = secret, t.ID
		return s.render(c, fiber.StatusCreated, "pages/tokens/index", "partials/tokens/list", data)
	}
	page := "/app/api-tokens/" + strconv.FormatInt(t.ID, 10)
	s.revealOnce(c, page, secret)
	return c.Redirect(page, fiber.StatusSeeOther)
}

// revealOnce hands a just-made secret from a POST to the page it redirects
// to (POST, redirect, GET: reloading that page creates nothing again), in a
// cookie sealed for that page only, which takeReveal opens once and clears.
func (s *Server) revealOnce(c *fiber.Ctx, page, secret string) {
	c.Cookie(&fiber.Cookie{
		Name: revealCookie, Value: base64.RawURLEncoding.EncodeToString(s.box.Seal(secret, "reveal"+page)),
		Path: page, HTTPOnly: true, Secure: s.cfg.SecureCookies(),
		SameSite: fiber.CookieSameSiteStrictMode, Expires: time.Now().Add(time.Minute),
	})
}

// takeReveal returns the secret revealOnce left for this page ("" when none),
// and clears it.
func (s *Server) takeReveal(c *fiber.Ctx, page string) string {
	v := c.Cookies(revealCookie)
	if v == "" {
		return ""
	}
	c.Cookie(&fiber.Cookie{Name: revealCookie, Value: "", Path: page, Expires: time.Unix(0, 0), HTTPOnly: true})
	sealed, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	secret, err := s.box.Open(sealed, "reveal"+page)
	if err != nil {
		return ""
	}
	return secret
}

// showToken is a new token's page: the list, with the token shown this once.
func (s *Server) showToken(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil {
		return fiber.NewError(fiber.StatusNotFound, "No existe ese token.")
	}
	data, err := s.tokensData(c)
	if err != nil {
		return err
	}
	found := false
	for _, t := range data.Tokens {
		found = found || t.ID == id
	}
	if !found {
		return fiber.NewError(fiber.StatusNotFound, "No existe ese token.")
	}
	if secret := s.takeReveal(c, "/app/api-tokens/"+strconv.FormatInt(id, 10)); secret != "" {
		data.NewToken, data.NewID = secret, id
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.render(c, fiber.StatusOK, "pages/tokens/index", "partials/tokens/list", data)
}

func (s *Server) revokeToken(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err == nil {
		err = s.store.RevokeAPIToken(c.UserContext(), s.db, id)
	}
	if errors.Is(err, db.ErrNotFound) || id < 1 {
		return fiber.NewError(fiber.StatusNotFound, "No existe ese token.")
	}
	if err != nil {
		return err
	}
	if isHTMX(c) {
		data, err := s.tokensData(c)
		if err != nil {
			return err
		}
		return s.render(c, fiber.StatusOK, "pages/tokens/index", "partials/tokens/list", data)
	}
	s.setFlash(c, "Token revocado.")
	return c.Redirect("/app/api-tokens", fiber.StatusSeeOther)
}
