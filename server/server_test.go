package server_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"pasarela/db"
)

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, doc := br.get(path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, "ok", doc.Text(), path)
	}
	require.NoError(t, b.env.DB.Close())
	resp, _ := br.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "readyz reports a database that does not answer")
}

func TestUnknownPagesGetA404InTheLayout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	resp, doc := br.get("/app/no-such-page")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "Página no encontrada", doc.Find(".error-page h1").Text())
	require.NotEmpty(t, doc.Find(".sidebar").Nodes)

	resp, _ = br.get("/static/nothing.js")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestStaticFilesAreVersionedAndCachedForAYear(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	_, doc := br.get("/login")
	src, ok := doc.Find(`script[src*="htmx.min.js"]`).Attr("src")
	require.True(t, ok, "the layout loads htmx from our own static files")
	require.Contains(t, src, "?v=")

	resp, _ := br.get(src)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Cache-Control"), "max-age=31536000")
	require.Contains(t, resp.Header.Get("Content-Type"), "javascript")

	resp, _ = br.get("/static/vendor/htmx/htmx.min.js")
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"), "an unversioned URL must be revalidated")
}

func TestHTMXRequestsGetFragmentsAndVaryOnHXRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	resp, doc := br.get("/modules", "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "HX-Request", resp.Header.Get("Vary"))
	require.Empty(t, doc.Find("html head title").Nodes, "no layout in a fragment")
	require.NotEmpty(t, doc.Find("#modules-table").Nodes)

	_, doc = br.get("/modules", "HX-Request", "true", "HX-History-Restore-Request", "true")
	require.NotEmpty(t, doc.Find(".sidebar").Nodes, "a history restore gets the whole page")
}

func TestClientIPBelievesForwardedForOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	trusted := setup(t, func(c *configT) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")} })
	// app.Test connects from 0.0.0.0; a forged left-most hop is ignored, the
	// right-most untrusted hop is the client.
	got := loginIPOf(t, trusted, "203.0.113.9, 198.51.100.7")
	require.Equal(t, "198.51.100.7", got)

	untrusted := setup(t)
	got = loginIPOf(t, untrusted, "198.51.100.7")
	require.Equal(t, "0.0.0.0", got)
}

// loginIPOf logs in with X-Forwarded-For set and returns the IP the session recorded.
func loginIPOf(t *testing.T, b *bundle, xff string) string {
	t.Helper()
	br := b.browser(t)
	br.get("/login")
	resp, _ := br.post("/login", map[string][]string{"email": {adminEmail}, "password": {testPassword}}, "X-Forwarded-For", xff)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var ip string
	require.NoError(t, b.env.DB.NewSelect().TableExpr("sessions").Column("ip").Limit(1).Scan(t.Context(), &ip))
	return ip
}

func TestADatabaseFailureShowsAGeneric500WithoutInternals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	require.NoError(t, b.env.DB.Close())

	resp, doc := br.get("/app")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Equal(t, "500", doc.Find("[data-status]").AttrOr("data-status", ""))
	require.Contains(t, doc.Text(), "Ocurrió un error inesperado")
	require.NotContains(t, doc.Text(), "sql: database is closed", "internal errors stay in the log")
}

func TestDatesAreShownInTheUsersTimeZone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.InsertWebhook(t.Context(), b.env.Pool, &db.Webhook{NotificationID: "evt-tz", Event: "SALE_APPROVED",
		Status: "aprobado", Environment: "test", Payload: "{}"})
	require.NoError(t, err)
	_, err = b.env.DB.ExecContext(t.Context(), `UPDATE gwa_webhooks SET received_at = '2026-11-20 14:00:00+00'`)
	require.NoError(t, err)
	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app/webhooks/gwa")
	require.Contains(t, doc.Find("tr[data-id]").Text(), "2026-11-20 14:00:00", "UTC by default")

	br.get("/app/perfil")
	resp, _ := br.post("/app/perfil", url.Values{"time_zone": {"America/Santiago"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, doc = br.get("/app/webhooks/gwa")
	require.Contains(t, doc.Find("tr[data-id]").Text(), "2026-11-20 11:00:00", "Santiago is UTC-3 in November")

	resp, doc = br.post("/app/perfil", url.Values{"time_zone": {"Mars/Olympus"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.NotEmpty(t, doc.Find(".field-error").Text())
}
