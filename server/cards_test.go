package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"pasarela/db"
	"pasarela/db/secretbox"
)

const cardKey = "ck_live_TOPSECRET_7788"

// fakeCards is the virtual-card API as an httptest server; it records what reached it.
type fakeCards struct {
	*httptest.Server
	mu    sync.Mutex
	got   []*http.Request
	body  string
	reply func(w http.ResponseWriter, r *http.Request)
}

func newFakeCards(t *testing.T) *fakeCards {
	f := &fakeCards{reply: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Set-Cookie", "upstream=1")
		w.Header().Set("Proxy-Authenticate", `Basic realm="api"`)
		w.Header().Set("X-Upstream-Internal", "node-7")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.got, f.body = append(f.got, r), string(b)
		reply := f.reply
		f.mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeCards) last(t *testing.T) *http.Request {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.got, "the API was called")
	return f.got[len(f.got)-1]
}

func (f *fakeCards) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

func (f *fakeCards) setReply(reply func(w http.ResponseWriter, r *http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply = reply
}

// cardsSetup is the app with the card API configured through its page.
func cardsSetup(t *testing.T, o options) (*bundle, *fakeCards, *browser, *bytes.Buffer) {
	t.Helper()
	logs := &syncBuffer{}
	o.logs = logs
	b := setupWith(t, o)
	up := newFakeCards(t)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tarjetas/config")
	resp, _ := br.post("/app/tarjetas/config", url.Values{"base_url": {up.URL + "/v1"}, "api_key": {cardKey}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	return b, up, br, &logs.buf
}

// configureCards stores the card API's settings as the config page would.
func (b *bundle) configureCards(t *testing.T, baseURL string) {
	t.Helper()
	box, err := secretbox.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	admin, err := b.store.Authenticate(context.Background(), b.env.DB, adminEmail, testPassword)
	require.NoError(t, err)
	_, err = b.store.SaveGatewaySettings(context.Background(), b.env.DB, box, db.CardService,
		[]db.FieldChange{{Field: "base_url", Value: baseURL}, {Field: "api_key", Value: cardKey}}, admin)
	require.NoError(t, err)
}

// realisticCards answers like a card API with long values: a paged list of
// cards, one card, and a refusal on pagos.
func realisticCards(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v1/tarjetas":
		var rows []string
		for i := 1; i <= 25; i++ {
			rows = append(rows, fmt.Sprintf(`{"id":"tc_%06d","titular":"María Fernanda González Valenzuela %d","email":"maria.fernanda.gonzalez-valenzuela.%d@empresa-distribuidora-del-sur.cl","ultimos4":"%04d","estado":"activa","limite":1500000,"creada":"2026-11-%02dT10:00:00Z","etiquetas":["viajes","corporativa"]}`, i, i, i, 4000+i, i))
		}
		fmt.Fprintf(w, `{"page":1,"total_pages":4,"data":[%s]}`, strings.Join(rows, ","))
	case strings.HasPrefix(r.URL.Path, "/v1/tarjetas/"):
		fmt.Fprintf(w, `{"id":%q,"titular":"María Fernanda González Valenzuela","limite":1500000,"movimientos":[{"monto":12345,"comercio":"SUPERMERCADO DEL SUR SUCURSAL PROVIDENCIA"}]}`,
			strings.TrimPrefix(r.URL.Path, "/v1/tarjetas/"))
	case r.URL.Path == "/v1/pagos":
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":"mantención programada hasta las 06:00"}`)
	default:
		_, _ = io.WriteString(w, `[]`)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// send makes a request with the browser's session and CSRF token.
func (br *browser) send(method, path, body string, headers ...string) (*http.Response, string) {
	br.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-CSRF-Token", br.csrf)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp := br.do(req)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(br.t, err)
	return resp, string(b)
}

func TestTheCardConfigIsSavedMaskedAndAudited(t *testing.T) {
	t.Parallel()
	_, _, br, _ := cardsSetup(t, options{})
	_, doc := br.get("/app/tarjetas/config")
	require.Equal(t, "••••7788", doc.Find(`[data-field="api_key"]`).Text())
	require.Contains(t, doc.Find(`[data-field="base_url"]`).Text(), "/v1")
	html, _ := doc.Html()
	require.NotContains(t, html, cardKey, "the key never reaches the page")
	require.Equal(t, 2, doc.Find(`tr[data-changed-field]`).Length(), "base URL and key, with who and when")
	require.Contains(t, doc.Find("table.changes").Text(), adminEmail)

	for name, tc := range map[string]struct{ url, problem string }{
		"plain http to another machine": {"http://api.example.com", "https"},
		"credentials in the URL":        {"https://user:pw@api.example.com", "Sin usuario"},
		"not a URL":                     {"api.example.com", "URL completa"},
	} {
		resp, doc := br.post("/app/tarjetas/config", url.Values{"base_url": {tc.url}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		require.Contains(t, doc.Find("#base_url-error").Text(), tc.problem, name)
		require.Equal(t, "true", doc.Find("#base_url").AttrOr("aria-invalid", ""), name)
	}
	resp, doc := br.post("/app/tarjetas/config", url.Values{"base_url": {"https://api.example.com/v2"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "the stored key is never sent to another server")
	require.Contains(t, doc.Find("#api_key-error").Text(), "escriba la clave otra vez")
	_, doc = br.get("/app/tarjetas/config")
	current := doc.Find(`[data-field="base_url"]`).Text()
	resp, _ = br.post("/app/tarjetas/config", url.Values{"base_url": {strings.Replace(current, "/v1", "/v2", 1)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "another path on the same server keeps the stored key")
	_, doc = br.get("/app/tarjetas/config")
	require.Equal(t, "••••7788", doc.Find(`[data-field="api_key"]`).Text())
	resp, _ = br.post("/app/tarjetas/config", url.Values{"base_url": {"https://api.example.com/v2"}, "api_key": {"ck_new_1234"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "another server with its key")

	resp, _ = br.post("/app/pasarelas/tarjetas", url.Values{"base_url": {"http://evil.example"}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the gateways' form does not edit the card API")
}

func TestTheCardProxyForwardsEachResourceWithTheKeyAndNothingElse(t *testing.T) {
	t.Parallel()
	_, up, br, _ := cardsSetup(t, options{})
	for _, tc := range []struct{ method, path, body, upstreamPath, query string }{
		{"GET", "/app/tarjetas/api/usuarios?page=2&q=ana", "", "/v1/usuarios", "page=2&q=ana"},
		{"GET", "/app/tarjetas/api/tarjetas/12", "", "/v1/tarjetas/12", ""},
		{"POST", "/app/tarjetas/api/membresias", `{"plan":"oro"}`, "/v1/membresias", ""},
		{"PUT", "/app/tarjetas/api/pagos/7", `{"monto":1000}`, "/v1/pagos/7", ""},
		{"PATCH", "/app/tarjetas/api/transacciones/9/estado", `{"estado":"anulada"}`, "/v1/transacciones/9/estado", ""},
		{"DELETE", "/app/tarjetas/api/logs/3", "", "/v1/logs/3", ""},
		{"GET", "/app/tarjetas/api/mini-sitios/", "", "/v1/mini-sitios", ""},
	} {
		// The session cookie and the CSRF header go with each request, as from a page.
		resp, body := br.send(tc.method, tc.path, tc.body, "Authorization", "Bearer chosen-by-the-browser",
			"Proxy-Authorization", "Basic eDp5", "X-Forwarded-For", "203.0.113.9", "X-Custom", "1")
		require.Equal(t, http.StatusCreated, resp.StatusCode, "%s %s: %s", tc.method, tc.path, body)
		require.JSONEq(t, `{"ok":true}`, body)
		require.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"), "the upstream's content type")
		require.Empty(t, resp.Header.Get("Set-Cookie"), "no cookie of the upstream's reaches the browser")
		require.Empty(t, resp.Header.Get("Proxy-Authenticate"), "nor its hop-by-hop headers")
		require.Empty(t, resp.Header.Get("X-Upstream-Internal"), "nor any other of its headers")
		for k, v := range resp.Header {
			require.NotContains(t, k+strings.Join(v, ","), cardKey)
		}
		got := up.last(t)
		require.Empty(t, got.Header.Get("Proxy-Authorization"), "no hop-by-hop header goes upstream")
		require.Empty(t, got.Header.Get("X-Forwarded-For"))
		require.Empty(t, got.Header.Get("X-Custom"))
		require.Equal(t, tc.method, got.Method)
		require.Equal(t, tc.upstreamPath, got.URL.Path)
		require.Equal(t, tc.query, got.URL.RawQuery)
		require.Equal(t, "Bearer "+cardKey, got.Header.Get("Authorization"))
		require.Empty(t, got.Header.Get("Cookie"), "no cookie goes upstream")
		require.Empty(t, got.Header.Get("X-CSRF-Token"), "nor our CSRF header")
		if tc.body != "" {
			require.JSONEq(t, tc.body, up.body)
			require.Equal(t, "application/json", got.Header.Get("Content-Type"))
		}
	}

	// HEAD too: the route takes any method.
	resp, _ := br.send("HEAD", "/app/tarjetas/api/tarjetas/12", "")
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, "HEAD", up.last(t).Method)

	before := up.calls()
	resp, body := br.send("GET", "/app/tarjetas/api/cuentas/1", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	var refusal struct{ Error string }
	require.NoError(t, json.Unmarshal([]byte(body), &refusal), "errors are JSON, as the API's: %s", body)
	require.Contains(t, refusal.Error, "usuarios, tarjetas")
	require.Equal(t, before, up.calls(), "an unknown resource never reaches the API")

	// An answer past the cap is not passed on, nor read further.
	up.setReply(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`["` + strings.Repeat("a", 5<<20) + `"]`))
	})
	resp, body = br.send("GET", "/app/tarjetas/api/transacciones", "")
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Contains(t, body, "más de 5 MiB")
}

func TestTheCardProxyNeverLeavesTheResource(t *testing.T) {
	t.Parallel()
	_, up, br, _ := cardsSetup(t, options{})
	for _, tc := range []struct{ path, upstream string }{
		{"/app/tarjetas/api/usuarios/../tarjetas/1", "/v1/usuarios/tarjetas/1"},
		{"/app/tarjetas/api/usuarios/../../../admin", "/v1/usuarios/admin"},
		{"/app/tarjetas/api/usuarios/%2e%2e/%2e%2e/secreto", "/v1/usuarios/secreto"},
		{"/app/tarjetas/api/usuarios/%2E%2E%2F%2E%2E%2Fsecreto", "/v1/usuarios/secreto"},
		{"/app/tarjetas/api/usuarios/a/./b//c", "/v1/usuarios/a/b/c"},
	} {
		resp, body := br.send("GET", tc.path, "")
		require.Equal(t, http.StatusCreated, resp.StatusCode, "%s: %s", tc.path, body)
		require.Equal(t, tc.upstream, up.last(t).URL.Path, tc.path)
	}
	// What is not JSON could run as ours: it goes as a download.
	up.setReply(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<script>alert(1)</script>`)
	})
	resp, _ := br.send("GET", "/app/tarjetas/api/logs/x.js", "")
	require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "attachment", resp.Header.Get("Content-Disposition"))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "sandbox")

	before := up.calls()
	for _, p := range []string{"/app/tarjetas/api/usuarios/%252e%252e/x", "/app/tarjetas/api/usuarios/a%5Cb"} {
		resp, _ := br.send("GET", p, "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, p)
	}
	require.Equal(t, before, up.calls(), "a refused path never reaches the API")
}

func TestTheCardProxyRefusesBadBodiesAndPassesUpstreamFailuresBack(t *testing.T) {
	t.Parallel()
	_, up, br, logs := cardsSetup(t, options{upstreamTimeout: 300 * time.Millisecond})

	resp, _ := br.send("POST", "/app/tarjetas/api/pagos", `{"monto": 1`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, _ = br.send("POST", "/app/tarjetas/api/pagos", "monto=1", "Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	resp, _ = br.send("POST", "/app/tarjetas/api/pagos", `{"x":"`+strings.Repeat("a", 1<<20)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	up.setReply(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":"tarjeta bloqueada"}`)
	})
	resp, body := br.send("GET", "/app/tarjetas/api/tarjetas/1", "")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "the API's own error passes through")
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.JSONEq(t, `{"error":"tarjeta bloqueada"}`, body)

	up.setReply(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	})
	resp, body = br.send("GET", "/app/tarjetas/api/tarjetas/1", "")
	require.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
	require.Contains(t, body, "no respondió a tiempo")

	up.Close()
	resp, body = br.send("GET", "/app/tarjetas/api/tarjetas/1", "")
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Contains(t, body, "No se pudo conectar")

	// Every call is on record, without the key, the query or the body.
	_, doc := br.get("/app/tarjetas/config?x=1")
	rows := doc.Find("#cards-calls tr[data-id]")
	require.Equal(t, 3, rows.Length(), "refused requests never called the API")
	require.Equal(t, "0", rows.First().AttrOr("data-status", ""), "no answer, no status")
	require.Contains(t, rows.First().Text(), adminEmail)
	require.Contains(t, rows.First().Text(), "GET/tarjetas/1")
	html, _ := doc.Html()
	require.NotContains(t, html, cardKey)
	require.NotContains(t, logs.String(), cardKey, "nor in any log line")
	require.NotEmpty(t, logs.String(), "the logs were captured")

	_, doc = br.get("/app")
	require.Equal(t, "3", doc.Find(`[data-figure="card-calls"] .tile-value`).Text(), "the Panel counts the calls")
	require.Equal(t, "3", doc.Find(`[data-figure="card-failures"] .tile-value`).Text(), "a 5xx, a timeout and no answer")
}

func TestTheCardProxyNeedsConfigurationTheModuleAndCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.browser(t)
	admin.login(adminEmail)
	admin.get("/app/tarjetas/config")
	resp, body := admin.send("GET", "/app/tarjetas/api/usuarios", "")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, body, "no está configurada")

	resp, _ = admin.send("POST", "/app/tarjetas/api/usuarios", `{}`, "X-CSRF-Token", "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a state-changing call without CSRF")

	operator := b.browser(t)
	operator.login(operatorEmail)
	operator.get("/app")
	for _, p := range []string{"/app/tarjetas/api/usuarios", "/app/tarjetas/config", "/app/tarjetas/usuarios"} {
		resp, _ = operator.send("GET", p, "")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "a role without Tarjetas: %s", p)
	}
}

func TestTheCardPagesShowTheAPIsListsAndDetails(t *testing.T) {
	t.Parallel()
	_, up, br, _ := cardsSetup(t, options{})
	up.setReply(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/tarjetas":
			_, _ = io.WriteString(w, `{"page":2,"total_pages":3,"data":[
				{"id":"tc_1","titular":"Ana <b>Pérez</b>","ultimos4":"4242","activa":true,"limite":150000.5,"meta":{"x":1}},
				{"id":"tc_2","titular":"Luis Soto","ultimos4":"1881","activa":false,"limite":null}]}`)
		case "/v1/tarjetas/tc_1":
			_, _ = io.WriteString(w, `{"id":"tc_1","titular":"Ana Pérez","meta":{"x":1}}`)
		case "/v1/pagos":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"clave inválida"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	_, doc := br.get("/app/tarjetas/tarjetas?page=2")
	require.Equal(t, "page=2", up.last(t).URL.RawQuery, "the page's query goes to the API")
	var cols []string
	doc.Find("#card-list thead th").Each(func(_ int, s *goquerySelection) { cols = append(cols, strings.TrimSpace(s.Text())) })
	require.Equal(t, []string{"id", "titular", "ultimos4", "activa", "limite", "Detalle"}, cols, "scalar keys in the API's order")
	rows := doc.Find("#card-list tbody tr")
	require.Equal(t, 2, rows.Length())
	require.Equal(t, "Ana <b>Pérez</b>", rows.First().Find("td").Eq(1).Text(), "shown as text")
	require.Equal(t, "sí", rows.First().Find("td").Eq(3).Text())
	require.Equal(t, "—", rows.Last().Find("td").Eq(4).Text())
	require.Equal(t, "/app/tarjetas/tarjetas/tc_1", rows.First().Find("a").AttrOr("href", ""))
	require.Contains(t, doc.Find(".pager").Text(), "Anterior")
	require.Contains(t, doc.Find(".pager a").Last().AttrOr("href", ""), "page=3")
	require.Equal(t, "page", doc.Find(`.tabs a[aria-current="page"]`).AttrOr("aria-current", ""), "the resource is marked in the tabs")

	resp, doc := br.get("/app/tarjetas/tarjetas/tc_1", "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 1, doc.Find("#card-detail").Length())
	require.Equal(t, 0, doc.Find("h1").Length(), "htmx gets the detail alone")
	require.Contains(t, doc.Find("pre.payload").Text(), `"titular": "Ana Pérez"`)
	require.Contains(t, doc.Find("table.fields").Text(), `{"x":1}`)

	resp, doc = br.get("/app/tarjetas/pagos")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the page works; the API's refusal is shown in it")
	alert := doc.Find(`#card-list [data-upstream-status="401"]`)
	require.Contains(t, alert.Text(), "401: clave inválida")

	resp, _ = br.get("/app/tarjetas/cuentas")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestProbingTheCardConnectionShowsTheOutcomeInPlace(t *testing.T) {
	t.Parallel()
	_, up, br, _ := cardsSetup(t, options{})
	resp, doc := br.post("/app/tarjetas/config/probar", nil, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", doc.Find("[data-probe]").AttrOr("data-probe", ""))
	require.Contains(t, doc.Find("[data-probe]").Text(), "Conexión correcta")
	require.Equal(t, 1, doc.Find(`#cards-calls[hx-swap-oob] tr[data-id]`).Length(), "the call list updates with it")
	require.Equal(t, "/v1/usuarios", up.last(t).URL.Path)

	up.setReply(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	_, doc = br.post("/app/tarjetas/config/probar", nil, "HX-Request", "true")
	require.Equal(t, "error", doc.Find("[data-probe]").AttrOr("data-probe", ""))
	require.Contains(t, doc.Find("[data-probe]").Text(), "revise la clave")
}
