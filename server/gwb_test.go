package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"pasarela/db"
	"pasarela/db/secretbox"
)

// fakeGWB is the subscription gateway's API as an httptest server.
type fakeGWB struct {
	*httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	last  *http.Request
	body  string
	reply func(w http.ResponseWriter, r *http.Request)
}

func newFakeGWB(t *testing.T) *fakeGWB {
	f := &fakeGWB{}
	f.reply = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"plan_1","ok":true}`)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.last, f.body = r, string(b)
		reply := f.reply
		f.mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// apiToken creates a token through the page and returns it.
func (b *bundle) apiToken(t *testing.T, br *browser) string {
	t.Helper()
	br.get("/app/api-tokens")
	resp, _ := br.post("/app/api-tokens", url.Values{"name": {"tienda"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, doc := br.get(resp.Header.Get("Location"))
	token := doc.Find("[data-token]").AttrOr("data-token", "")
	require.True(t, strings.HasPrefix(token, "psk_"), "token shown once: %q", token)
	return token
}

func (b *bundle) configureGWB(t *testing.T, baseURL string) {
	t.Helper()
	box, err := secretbox.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	admin, err := b.store.Authenticate(context.Background(), b.env.DB, adminEmail, testPassword)
	require.NoError(t, err)
	_, err = b.store.SaveGatewaySettings(context.Background(), b.env.DB, box, "gwb", []db.FieldChange{
		{Field: "environment", Value: "sandbox"}, {Field: "access_key_sandbox", Value: "ak_sandbox_SECRET"},
		{Field: "url_sandbox", Value: baseURL},
	}, admin)
	require.NoError(t, err)
}

// gwbSetup is an app whose subscription gateway is a fake, and a live API token.
func gwbSetup(t *testing.T, o options) (*bundle, *fakeGWB, *browser, string) {
	t.Helper()
	b := setupWith(t, o)
	up := newFakeGWB(t)
	b.configureGWB(t, up.URL)
	br := b.browser(t)
	br.login(adminEmail)
	return b, up, br, b.apiToken(t, br)
}

func call(t *testing.T, b *bundle, method, path, token, body string, headers ...string) (int, map[string]any, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.app.Test(req, 15000)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, resp.Header
}

func TestAPITokensAreShownOnceStoredHashedAndRevocable(t *testing.T) {
	t.Parallel()
	b, _, br, token := gwbSetup(t, options{})

	_, doc := br.get("/app/api-tokens")
	require.Empty(t, doc.Find("[data-token]").Nodes, "a second look does not show it")
	require.Zero(t, countRows(t, b, "api_tokens", "prefix = ?", token), "only a prefix and a hash are stored")

	status, _, _ := call(t, b, "GET", "/v1/gwb/subscription/ver-plan/plan_1", token, "")
	require.Equal(t, http.StatusCreated, status)

	id := doc.Find("#token-list tr[data-id]").AttrOr("data-id", "")
	resp, doc := br.post("/app/api-tokens/"+id+"/revocar", nil, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "true", doc.Find(`tr[data-id="`+id+`"]`).AttrOr("data-revoked", ""))

	status, body, _ := call(t, b, "GET", "/v1/gwb/subscription/ver-plan/plan_1", token, "")
	require.Equal(t, http.StatusUnauthorized, status, "a revoked token is refused")
	require.NotEmpty(t, body["error"])
	status, _, _ = call(t, b, "GET", "/v1/gwb/subscription/ver-plan/plan_1", "psk_made_up", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _, _ = call(t, b, "GET", "/v1/gwb/subscription/ver-plan/plan_1", "", "")
	require.Equal(t, http.StatusUnauthorized, status)

	resp, doc = br.post("/app/api-tokens", url.Values{"name": {"  "}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.NotEmpty(t, doc.Find(".field-error").Text())
}

func TestGWBValidatesBeforeCallingUpstream(t *testing.T) {
	t.Parallel()
	b, up, _, token := gwbSetup(t, options{})

	cases := []struct {
		name, method, path, body string
		fields                   []string
	}{
		{"plan without anything", "POST", "/v1/gwb/subscription/crear-plan", `{}`, []string{"name", "amount", "currency", "interval"}},
		{"plan with bad values", "POST", "/v1/gwb/subscription/crear-plan",
			`{"name":"","amount":0,"currency":"PESOS","interval":"hour"}`, []string{"name", "amount", "currency", "interval"}},
		{"plan name too long", "POST", "/v1/gwb/subscription/crear-plan",
			`{"name":"` + strings.Repeat("n", 201) + `","amount":10,"currency":"CLP","interval":"month"}`, []string{"name"}},
		{"empty update", "PATCH", "/v1/gwb/subscription/actualizar-plan/plan_1", `{}`, []string{"plan"}},
		{"update with a bad amount", "PATCH", "/v1/gwb/subscription/actualizar-plan/plan_1", `{"amount":"-5"}`, []string{"amount"}},
		{"payment out of range", "POST", "/v1/gwb/payment/crear-pago", `{"amount":"1e400","currency":"CLP","email":"a@example.com"}`, []string{"amount"}},
		{"payment without email", "POST", "/v1/gwb/payment/crear-pago", `{"amount":10,"currency":"CLP"}`, []string{"email"}},
		{"payment with a bad plan id", "POST", "/v1/gwb/payment/crear-pago",
			`{"amount":10,"currency":"CLP","email":"a@example.com","plan_id":"../x"}`, []string{"plan_id"}},
	}
	for _, tc := range cases {
		status, body, _ := call(t, b, tc.method, tc.path, token, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, status, tc.name)
		fields, _ := body["fields"].(map[string]any)
		for _, f := range tc.fields {
			require.NotEmpty(t, fields[f], "%s: field %s", tc.name, f)
		}
	}
	for _, amount := range []string{`"1e400"`, `1000000000000000000`, `10.001`} {
		_, body, _ := call(t, b, "POST", "/v1/gwb/subscription/crear-plan", token,
			`{"name":"Plan","amount":`+amount+`,"currency":"CLP","interval":"month"}`)
		fields, _ := body["fields"].(map[string]any)
		require.Contains(t, fields["amount"], "fuera de rango", "amount %s", amount)
	}
	status, _, _ := call(t, b, "POST", "/v1/gwb/subscription/crear-plan", token, `[1,2]`)
	require.Equal(t, http.StatusBadRequest, status)
	req := httptest.NewRequest("POST", "/v1/gwb/subscription/crear-plan", strings.NewReader("name=x"))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	require.Zero(t, up.calls.Load(), "nothing invalid reaches the gateway")
}

func TestGWBForwardsWithTheActiveAccessKeyAndPassesErrorsBack(t *testing.T) {
	t.Parallel()
	b, up, br, token := gwbSetup(t, options{upstreamTimeout: 300 * time.Millisecond})

	plan := `{"name":"Plan Oro","amount":"9990","currency":"CLP","interval":"month"}`
	status, body, _ := call(t, b, "POST", "/v1/gwb/subscription/crear-plan", token, plan)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "plan_1", body["id"])
	require.Equal(t, "/plans", up.last.URL.Path)
	require.Equal(t, "Bearer ak_sandbox_SECRET", up.last.Header.Get("Authorization"))
	require.JSONEq(t, plan, up.body)

	status, _, _ = call(t, b, "PATCH", "/v1/gwb/subscription/actualizar-plan/plan_1", token, `{"amount":12000}`)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "PATCH", up.last.Method)
	require.Equal(t, "/plans/plan_1", up.last.URL.Path)

	// The gateway's own error is passed back as it came.
	up.mu.Lock()
	up.reply = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		_, _ = io.WriteString(w, `{"message":"upstream exploded"}`)
	}
	up.mu.Unlock()
	status, body, _ = call(t, b, "GET", "/v1/gwb/subscription/ver-plan/plan_1", token, "")
	require.Equal(t, 500, status)
	require.Equal(t, "upstream exploded", body["message"])

	// Slow: 504.
	up.mu.Lock()
	up.reply = func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}
	up.mu.Unlock()
	status, body, _ = call(t, b, "GET", "/v1/gwb/subscription/ver-plan/plan_1", token, "")
	require.Equal(t, http.StatusGatewayTimeout, status)
	require.NotEmpty(t, body["error"])

	// Down: 502.
	up.Close()
	status, body, _ = call(t, b, "GET", "/v1/gwb/subscription/ver-plan/plan_1", token, "")
	require.Equal(t, http.StatusBadGateway, status)
	require.NotEmpty(t, body["error"])

	// Every call is logged on the settings page, without the key.
	_, doc := br.get("/app/pasarelas")
	rows := doc.Find("#upstream-calls tr[data-id]")
	require.Equal(t, 5, rows.Length())
	require.Equal(t, "0", rows.First().AttrOr("data-status", ""), "the failed call has no status")
	html, _ := doc.Html()
	require.NotContains(t, html, "ak_sandbox_SECRET")
}

func TestGWBWithoutConfigurationAnswers503(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	token := b.apiToken(t, br)
	status, body, _ := call(t, b, "GET", "/v1/gwb/subscription/ver-plan/p1", token, "")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, body["error"], "sandbox")
}

func TestCrearPagoWithAnIdempotencyKeyCallsUpstreamOnce(t *testing.T) {
	t.Parallel()
	b, up, br, token := gwbSetup(t, options{})

	pay := `{"amount":15990,"currency":"CLP","email":"ana@example.com","plan_id":"plan_1","description":"Suscripción"}`
	s1, b1, h1 := call(t, b, "POST", "/v1/gwb/payment/crear-pago", token, pay, "Idempotency-Key", "order-1001")
	s2, b2, h2 := call(t, b, "POST", "/v1/gwb/payment/crear-pago", token, pay, "Idempotency-Key", "order-1001")
	require.Equal(t, http.StatusCreated, s1)
	require.Equal(t, s1, s2)
	require.Equal(t, b1, b2)
	require.Empty(t, h1.Get("Idempotent-Replayed"))
	require.Equal(t, "true", h2.Get("Idempotent-Replayed"))
	require.EqualValues(t, 1, up.calls.Load(), "the repeat did not call the gateway")

	s3, body, _ := call(t, b, "POST", "/v1/gwb/payment/crear-pago", token, `{"amount":1,"currency":"CLP","email":"ana@example.com"}`, "Idempotency-Key", "order-1001")
	require.Equal(t, http.StatusUnprocessableEntity, s3, "the same key with another body is refused")
	require.NotEmpty(t, body["fields"])

	s4, _, _ := call(t, b, "POST", "/v1/gwb/payment/crear-pago", token, pay)
	require.Equal(t, http.StatusCreated, s4)
	require.EqualValues(t, 2, up.calls.Load(), "without a key every call goes through")
	require.Equal(t, "/payments", up.last.URL.Path)

	// A session with CSRF works as well as a token.
	req := httptest.NewRequest("POST", "/v1/gwb/payment/crear-pago", strings.NewReader(pay))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", br.csrf)
	require.Equal(t, http.StatusCreated, br.do(req).StatusCode)
	req = httptest.NewRequest("POST", "/v1/gwb/payment/crear-pago", strings.NewReader(pay))
	req.Header.Set("Content-Type", "application/json")
	require.Equal(t, http.StatusForbidden, br.do(req).StatusCode, "a session without CSRF is refused")
}

func TestAPICallsWithoutCredentialsGet401JSONNeverACSRFError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct{ name, method, path, auth string }{
		{"POST without Authorization", "POST", "/v1/gwb/subscription/crear-plan", ""},
		{"POST with Basic auth", "POST", "/v1/gwb/payment/crear-pago", "Basic dXNlcjpwYXNz"},
		{"PATCH without Authorization", "PATCH", "/v1/gwb/subscription/actualizar-plan/plan_1", ""},
		{"GET without Authorization", "GET", "/v1/gwb/subscription/ver-plan/plan_1", ""},
	}
	for _, tc := range cases {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{"amount":1}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := b.app.Test(req, -1)
		require.NoError(t, err)
		var body map[string]string
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), tc.name)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, tc.name)
		require.Contains(t, body["error"], "Bearer", tc.name)
		require.NotContains(t, body["error"], "CSRF", tc.name)
	}

	// A session still needs its CSRF token: the cookie alone is not enough.
	br := b.browser(t)
	br.login(adminEmail)
	req := httptest.NewRequest("POST", "/v1/gwb/subscription/crear-plan", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	resp := br.do(req)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestAMethodARouteDoesNotHaveGets405WithAllow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	cases := []struct{ method, path, allow string }{
		{"PUT", "/gwa/retorno", "GET, HEAD, POST"},
		{"DELETE", "/webhooks/gwa", "POST"},
		{"PUT", "/modules", "GET, HEAD, POST"},
		{"DELETE", "/app/pasarelas", "GET, HEAD"},
		{"GET", "/v1/gwb/payment/crear-pago", "POST"},
		{"POST", "/app/webhooks/gwa/12", "GET, HEAD"},
	}
	for _, tc := range cases {
		resp := br.do(httptest.NewRequest(tc.method, tc.path, nil))
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s", tc.method, tc.path)
		require.Equal(t, tc.allow, resp.Header.Get("Allow"), "%s %s", tc.method, tc.path)
	}
	resp := br.do(httptest.NewRequest("PUT", "/no/such/page", nil))
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a path no route has is still 404")
}
