package server_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoginWithTheRightPasswordOpensTheDashboard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.get("/login")
	resp, _ := br.post("/login", url.Values{"email": {"ADMIN@example.com"}, "password": {testPassword}, "next": {"/modules"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/modules", resp.Header.Get("Location"))

	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "pasarela_session" {
			session = c
		}
	}
	require.NotNil(t, session, "login sets the session cookie")
	require.True(t, session.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, session.SameSite)
	require.False(t, session.Secure, "not Secure while BASE_URL is http")

	resp, doc := br.get("/app")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "Panel", doc.Find("h1#dashboard").Text())
	require.Contains(t, doc.Find(".sidebar").Text(), "Módulos y roles")
	require.Equal(t, "0", doc.Find("#unread-notifications").AttrOr("data-unread", ""), "the unread slot is in the layout")
}

func TestSessionCookieIsSecureWhenBaseURLIsHTTPS(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *configT) { c.BaseURL = "https://console.example.com" })
	br := b.browser(t)
	br.get("/login")
	resp, _ := br.post("/login", url.Values{"email": {adminEmail}, "password": {testPassword}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.NotEmpty(t, resp.Cookies())
	for _, c := range resp.Cookies() {
		require.True(t, c.Secure, "cookie %s must be Secure over https", c.Name)
	}
}

func TestLoginRotatesTheSessionToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	first := br.cookies["pasarela_session"]
	br.login(adminEmail)
	second := br.cookies["pasarela_session"]
	require.NotEqual(t, first, second)

	// The first token no longer opens anything.
	stale := b.browser(t)
	stale.cookies["pasarela_session"] = first
	resp, _ := stale.get("/app")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestLoginFailuresAnswerClearly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name, email, password string
		status                int
		message               string
	}{
		{"wrong password", adminEmail, "not-the-password", http.StatusUnauthorized, "Correo o contraseña incorrectos."},
		{"unknown user", "ghost@example.com", testPassword, http.StatusUnauthorized, "Correo o contraseña incorrectos."},
		{"empty form", "", "", http.StatusUnprocessableEntity, "Escriba su contraseña."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			br := b.browser(t)
			br.get("/login")
			resp, doc := br.post("/login", url.Values{"email": {tc.email}, "password": {tc.password}})
			require.Equal(t, tc.status, resp.StatusCode)
			require.Contains(t, doc.Find("#login-form").Text(), tc.message)
			require.Empty(t, br.cookies["pasarela_session"])
			require.Equal(t, tc.email, doc.Find("#email").AttrOr("value", ""), "the e-mail stays filled in")
		})
	}
}

func TestLoginIsThrottledAfterRepeatedFailuresForTheAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.get("/login")
	for i := 0; i < 5; i++ {
		resp, _ := br.post("/login", url.Values{"email": {adminEmail}, "password": {"wrong"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	resp, doc := br.post("/login", url.Values{"email": {adminEmail}, "password": {testPassword}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "even the right password waits once the account is throttled")
	// The message and Retry-After agree: a fresh 15-minute window.
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.InDelta(t, 900, retry, 5)
	require.Contains(t, doc.Find("#login-error").Text(), "Demasiados intentos")
	require.Contains(t, doc.Find("#login-error").Text(), "Espere 15 minutos")

	// Another account from the same address is not locked by this one.
	resp, _ = br.post("/login", url.Values{"email": {operatorEmail}, "password": {testPassword}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestLoginIsThrottledPerAddressAcrossAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.get("/login")
	for i := 0; i < 20; i++ {
		br.post("/login", url.Values{"email": {"user" + strings.Repeat("x", i) + "@example.com"}, "password": {"wrong"}})
	}
	resp, _ := br.post("/login", url.Values{"email": {operatorEmail}, "password": {testPassword}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
}

func TestLogoutEndsTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app")
	token := br.cookies["pasarela_session"]
	resp, _ := br.post("/logout", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/login", resp.Header.Get("Location"))

	replay := b.browser(t)
	replay.cookies["pasarela_session"] = token
	resp, _ = replay.get("/app")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the old cookie must not open a session")
}

func TestPagesWithoutSessionGoToLogin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	for _, path := range []string{"/app", "/modules", "/app/anything"} {
		resp, _ := br.get(path)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"), path)
	}
	resp, _ := br.get("/app", "HX-Request", "true")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "/login", resp.Header.Get("HX-Redirect"))
}

func TestLoginRedirectStaysOnThisSite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, next := range []string{"https://evil.example", "//evil.example", "/\\evil.example"} {
		br := b.browser(t)
		br.get("/login")
		resp, _ := br.post("/login", url.Values{"email": {adminEmail}, "password": {testPassword}, "next": {next}})
		require.Equal(t, "/app", resp.Header.Get("Location"), "next=%q", next)
	}
}

func TestStateChangingRequestsNeedTheCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/modules")

	cases := []struct {
		name  string
		form  url.Values
		extra []string
		want  int
	}{
		{"missing token", url.Values{"_csrf": {""}, "action": {"seed"}}, nil, http.StatusForbidden},
		{"wrong token", url.Values{"_csrf": {"forged"}, "action": {"seed"}}, nil, http.StatusForbidden},
		{"form token", url.Values{"action": {"seed"}}, nil, http.StatusSeeOther},
		{"htmx header token", url.Values{"_csrf": {""}, "action": {"seed"}}, []string{"X-CSRF-Token", br.csrf, "HX-Request", "true"}, http.StatusOK},
	}
	for _, tc := range cases {
		resp, doc := br.post("/modules", tc.form, tc.extra...)
		require.Equal(t, tc.want, resp.StatusCode, tc.name)
		if tc.want == http.StatusForbidden {
			require.Contains(t, doc.Text(), "CSRF", tc.name)
		}
	}

	// Login itself is protected too.
	fresh := b.browser(t)
	resp, _ := fresh.post("/login", url.Values{"email": {adminEmail}, "password": {testPassword}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
