package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// addServer creates a server through the page and returns its id and agent token.
func addServer(t *testing.T, br *browser, name string, extra ...string) (int64, string) {
	t.Helper()
	br.get("/app/servidores")
	form := url.Values{"nombre": {name}, "host": {name + ".example.cl"}}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	resp, _ := br.post("/app/servidores", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var id int64
	_, err := fmt.Sscanf(resp.Header.Get("Location"), "/app/servidor/%d", &id)
	require.NoError(t, err, resp.Header.Get("Location"))
	return id, revealedToken(t, br, id)
}

// revealedToken reads the agent token the server's page shows once after a
// creation or a rotation, and checks that a reload shows it no more.
func revealedToken(t *testing.T, br *browser, id int64) string {
	t.Helper()
	page := fmt.Sprintf("/app/servidor/%d", id)
	resp, doc := br.get(page)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "a page with a secret is not cached")
	token := doc.Find("[data-token]").AttrOr("data-token", "")
	require.True(t, strings.HasPrefix(token, "pag_"), "the token is shown once: %q", token)
	_, doc = br.get(page)
	require.Zero(t, doc.Find("[data-token]").Length(), "and only once")
	return token
}

func heartbeat(t *testing.T, b *bundle, token, contentType, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/agente/heartbeat", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

const goodBeat = `{"cpu": 12.5, "ram": 40.1, "swap": 0, "disk": 71.3, "tcp": 230, "load1": 0.42}`

func TestAServerIsAddedWithATokenShownOnceAndStoredHashed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	id, token := addServer(t, br, "web-1")
	var stored []byte
	require.NoError(t, b.env.DB.NewRaw("SELECT token_hash FROM servidores WHERE id = ?", id).Scan(context.Background(), &stored))
	require.NotContains(t, string(stored), token, "only a hash is kept")
	_, doc := br.get(fmt.Sprintf("/app/servidor/%d", id))
	html, _ := doc.Html()
	require.NotContains(t, html, token, "and it is never shown again")
	require.Equal(t, "pendiente", doc.Find("#server").AttrOr("data-estado", ""))
	_, doc = br.get("/app/servidores")
	require.Equal(t, "pendiente", doc.Find(fmt.Sprintf(`tr[data-id="%d"]`, id)).AttrOr("data-estado", ""))

	resp, doc := br.post("/app/servidores", url.Values{"nombre": {""}, "host": {"a b"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, "true", doc.Find("#nombre").AttrOr("aria-invalid", ""))
	require.Equal(t, "true", doc.Find("#host").AttrOr("aria-invalid", ""))

	op := b.browser(t)
	op.login(operatorEmail)
	resp, _ = op.get("/app/servidores")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a role without Servidores")
}

func TestAHeartbeatIsStoredAndBadOnesAreRefusedClearly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	id, token := addServer(t, br, "db-1")

	status, _ := heartbeat(t, b, token, "application/json", goodBeat)
	require.Equal(t, http.StatusNoContent, status)
	var row struct {
		CPU  float64
		TCP  int
		Disk float64
	}
	require.NoError(t, b.env.DB.NewRaw("SELECT cpu, tcp, disk FROM servidor_metricas_history WHERE servidor_id = ?", id).
		Scan(context.Background(), &row.CPU, &row.TCP, &row.Disk))
	require.Equal(t, 12.5, row.CPU)
	require.Equal(t, 230, row.TCP)
	_, doc := br.get(fmt.Sprintf("/app/servidor/%d", id))
	require.Equal(t, "online", doc.Find("#server").AttrOr("data-estado", ""))
	_, doc = br.get("/app")
	require.Equal(t, "1", doc.Find(`[data-figure="servers-online"] .tile-value`).Text(), "the Panel counts it online")
	require.Equal(t, "/app/servidores?estado=online", doc.Find(`[data-figure="servers-online"]`).AttrOr("href", ""), "and links to them")
	addServer(t, br, "db-2") // pendiente
	for query, want := range map[string][]string{
		"?estado=online": {"online"}, "?estado=pendiente": {"pendiente"}, "?estado=offline": nil, "?estado=otro": {"online", "pendiente"},
	} {
		_, doc := br.get("/app/servidores" + query)
		var got []string
		doc.Find("#servers tr[data-id]").Each(func(_ int, s *goquerySelection) { got = append(got, s.AttrOr("data-estado", "")) })
		require.ElementsMatch(t, want, got, query)
	}
	_, doc = br.get("/app/servidores?estado=offline")
	require.Equal(t, "no-match", doc.Find("[data-empty]").AttrOr("data-empty", ""), "a filter that matches nothing says so")

	for name, tc := range map[string]struct {
		token, contentType, body string
		status                   int
		field                    string
	}{
		"no token":           {"", "application/json", goodBeat, 401, ""},
		"a wrong token":      {"pag_nope", "application/json", goodBeat, 401, ""},
		"cpu over 100":       {token, "application/json", strings.Replace(goodBeat, "12.5", "140", 1), 422, "cpu"},
		"negative tcp":       {token, "application/json", strings.Replace(goodBeat, "230", "-1", 1), 422, "tcp"},
		"fractional tcp":     {token, "application/json", strings.Replace(goodBeat, "230", "2.5", 1), 422, "tcp"},
		"a missing figure":   {token, "application/json", `{"cpu": 1, "ram": 1, "swap": 1, "disk": 1, "tcp": 1}`, 422, "load1"},
		"a figure as text":   {token, "application/json", strings.Replace(goodBeat, "0.42", `"0.42"`, 1), 422, "load1"},
		"a figure as null":   {token, "application/json", strings.Replace(goodBeat, "12.5", "null", 1), 422, "cpu"},
		"not JSON":           {token, "application/json", `cpu=12`, 400, ""},
		"another media type": {token, "text/plain", goodBeat, 415, ""},
		"a body over 4 KiB":  {token, "application/json", `{"x":"` + strings.Repeat("a", 5000) + `"}`, 413, ""},
	} {
		status, body := heartbeat(t, b, tc.token, tc.contentType, tc.body)
		require.Equal(t, tc.status, status, name)
		if tc.field != "" {
			var out struct{ Fields map[string]string }
			require.NoError(t, json.Unmarshal([]byte(body), &out), name)
			require.Contains(t, out.Fields, tc.field, name)
		}
	}
	// A compressed body is refused before anything unpacks it (a gzip bomb).
	req := httptest.NewRequest(http.MethodPost, "/api/agente/heartbeat", strings.NewReader("\x1f\x8b..."))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)

	var n int
	require.NoError(t, b.env.DB.NewRaw("SELECT count(*) FROM servidor_metricas_history").Scan(context.Background(), &n))
	require.Equal(t, 1, n, "refused heartbeats store nothing")

	// A rotated token: the old one is refused at once, the new one works.
	resp, _ = br.post(fmt.Sprintf("/app/servidor/%d/token", id), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	fresh := revealedToken(t, br, id)
	require.NotEqual(t, token, fresh)
	status, _ = heartbeat(t, b, token, "application/json", goodBeat)
	require.Equal(t, http.StatusUnauthorized, status, "the replaced token")
	status, _ = heartbeat(t, b, fresh, "application/json", goodBeat)
	require.Equal(t, http.StatusNoContent, status)
}

func TestARecoveryAndADiskCrossingAreAnnouncedOnceEach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	id, token := addServer(t, br, "app-1", "umbral_disco", "90")
	ctx := context.Background()
	events := func() map[string]int {
		var rows []struct {
			Evento string
			N      int
		}
		require.NoError(t, b.env.DB.NewRaw(`SELECT args->>'evento' AS evento, count(*) AS n FROM river_job
			WHERE kind = 'notificacion' AND args->>'canal' = 'sistema' GROUP BY 1`).Scan(ctx, &rows))
		out := map[string]int{}
		for _, r := range rows {
			out[r.Evento] = r.N
		}
		return out
	}
	beat := func(disk string) {
		t.Helper()
		status, body := heartbeat(t, b, token, "application/json", strings.Replace(goodBeat, "71.3", disk, 1))
		require.Equal(t, http.StatusNoContent, status, body)
	}
	beat("50")
	require.Empty(t, events(), "a first heartbeat is no recovery")
	beat("95")
	beat("96")
	require.Equal(t, map[string]int{"servidor_umbral": 1}, events(), "once per crossing, not per heartbeat over it")
	beat("50")
	beat("97")
	require.Equal(t, map[string]int{"servidor_umbral": 2}, events(), "back under and over again: a second crossing")

	_, err := b.env.DB.ExecContext(ctx, "UPDATE servidores SET estado = 'offline' WHERE id = ?", id)
	require.NoError(t, err)
	beat("97")
	beat("97")
	require.Equal(t, map[string]int{"servidor_umbral": 2, "servidor_recuperado": 1}, events())
}

func TestTheMetricsHistoryIsBucketedBoundedAndPerServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	id, _ := addServer(t, br, "hist-1")
	other, _ := addServer(t, br, "hist-2")
	ctx := context.Background()
	_, err := b.env.DB.ExecContext(ctx, `SELECT servidor_metricas_particion((now() AT TIME ZONE 'UTC')::date - d) FROM generate_series(0, 8) AS d`)
	require.NoError(t, err)
	// Seven days of 30-second heartbeats; cpu alternates 10 and 30 (average 20).
	_, err = b.env.DB.ExecContext(ctx, `INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
		SELECT ?, now() - make_interval(secs => 30 * i), CASE WHEN i % 2 = 0 THEN 10 ELSE 30 END, 50, 0, 70, 100, 1
		FROM generate_series(0, 20159) AS i`, id)
	require.NoError(t, err)
	_, err = b.env.DB.ExecContext(ctx, `INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
		SELECT ?, now() - make_interval(secs => 30 * i), 99, 99, 99, 99, 999, 9 FROM generate_series(0, 100) AS i`, other)
	require.NoError(t, err)

	type history struct {
		ServidorID int64 `json:"servidor_id"`
		Horas      int
		Puntos     []struct {
			T   string
			CPU float64
			TCP float64
		}
	}
	get := func(q string) (int, history) {
		t.Helper()
		resp, err := b.app.Test(withCookies(br, fmt.Sprintf("/app/servidor/%d/metricas-history%s", id, q)), -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		var h history
		if resp.StatusCode == 200 {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
		}
		return resp.StatusCode, h
	}
	status, h := get("")
	require.Equal(t, 200, status)
	require.Equal(t, 24, h.Horas, "24 hours by default")
	require.Equal(t, id, h.ServidorID)

	status, h = get("?horas=168")
	require.Equal(t, 200, status)
	require.LessOrEqual(t, len(h.Puntos), 1000)
	require.Greater(t, len(h.Puntos), 900, "a week in ~10-minute buckets")
	const bucket = 606                                // seconds: ceil(168 h / 999)
	for _, p := range h.Puntos[1 : len(h.Puntos)-1] { // whole buckets
		var want float64
		require.NoError(t, b.env.DB.NewRaw(`SELECT avg(cpu) FROM servidor_metricas_history WHERE servidor_id = ?
			AND created_at >= ?::timestamptz AND created_at < ?::timestamptz + make_interval(secs => ?)`, id, p.T, p.T, bucket).Scan(ctx, &want))
		require.InDelta(t, want, p.CPU, 0.01, "the average of the bucket at %s", p.T)
		require.Equal(t, 100.0, p.TCP, "never another server's rows")
	}
	first, err := time.Parse(time.RFC3339, h.Puntos[0].T)
	require.NoError(t, err)
	last, _ := time.Parse(time.RFC3339, h.Puntos[len(h.Puntos)-1].T)
	require.True(t, first.Before(last), "oldest first")

	status, h = get("?horas=1&raw=1")
	require.Equal(t, 200, status)
	require.InDelta(t, 120, len(h.Puntos), 1, "raw=1: every heartbeat of the hour")

	for _, q := range []string{"?horas=0", "?horas=169", "?horas=abc", "?horas=2.5"} {
		status, _ = get(q)
		require.Equal(t, http.StatusUnprocessableEntity, status, q)
	}
	resp, err := b.app.Test(withCookies(br, "/app/servidor/999999/metricas-history"), -1)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func withCookies(br *browser, path string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range br.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	return req
}
