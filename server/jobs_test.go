package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRiverUIIsMountedForAdministratorsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.browser(t)
	admin.login(adminEmail)

	resp, _ := admin.get("/app/jobs")
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/app/jobs/", resp.Header.Get("Location"))
	resp, doc := admin.get("/app/jobs/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, strings.ToLower(doc.Find("title").Text()), "river")
	back := doc.Find(`body > a[href="/app"]`)
	require.Equal(t, "← Volver a Pasarela", back.Text(), "River's UI has a way back to the console")

	resp, _ = admin.get("/app/jobs/api/jobs?state=completed&limit=20")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json")

	// Its JSON API cannot be driven from another site.
	req := httptest.NewRequest(http.MethodPost, "/app/jobs/api/jobs/cancel", strings.NewReader(`{"ids":["1"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, admin.do(req).StatusCode)

	op := b.browser(t)
	op.login(operatorEmail)
	resp, _ = op.get("/app/jobs")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	anon := b.browser(t)
	resp, _ = anon.get("/app/jobs/api/jobs?state=completed")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}
