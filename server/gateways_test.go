package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pasarela/db"
)

func TestGatewaySettingsAreSavedMaskedAndAudited(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *configT) { c.BaseURL = "https://console.example.com" })
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/pasarelas")

	resp, _ := br.post("/app/pasarelas/gwa", url.Values{
		"environment": {"production"}, "api_key_production": {"pk_live_ABCDEFGH1234"},
		"secret_key_production": {"whsec_live_9999"}, "callback_url": {"https://shop.example/return"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/app/pasarelas", resp.Header.Get("Location"))

	_, doc := br.get("/app/pasarelas")
	gwa := doc.Find("#gateway-gwa")
	require.Equal(t, "production", gwa.AttrOr("data-environment", ""))
	require.Equal(t, "••••1234", gwa.Find(`[data-field="active_key"]`).Text())
	require.Equal(t, "https://shop.example/return", gwa.Find(`[data-field="callback_url"]`).Text())
	require.Equal(t, "https://console.example.com/webhooks/gwa", gwa.Find(`[data-field="webhook_url"]`).Text())
	html, _ := doc.Html()
	require.NotContains(t, html, "pk_live_ABCDEFGH1234", "a key never reaches the page")
	require.NotContains(t, html, "whsec_live_9999")
	require.Contains(t, doc.Find("#alerts").Text(), "Configuración guardada")
	require.Equal(t, 4, gwa.Find("table.changes tr[data-changed-field]").Length(), "who/when/which field, four fields")
	require.Contains(t, gwa.Find("table.changes").Text(), adminEmail)

	// A blank key keeps the stored one; clear_ empties it.
	br.post("/app/pasarelas/gwa", url.Values{"environment": {"production"}, "callback_url": {"https://shop.example/return"}})
	_, doc = br.get("/app/pasarelas")
	require.Equal(t, "••••1234", doc.Find(`#gateway-gwa [data-field="active_key"]`).Text())
	br.post("/app/pasarelas/gwa", url.Values{"environment": {"production"}, "callback_url": {"https://shop.example/return"}, "clear_api_key_production": {"on"}})
	_, doc = br.get("/app/pasarelas")
	require.Contains(t, doc.Find(`#gateway-gwa [data-field="active_key"]`).Text(), "sin configurar")

	// gwb: the active access key and URL follow the environment.
	br.post("/app/pasarelas/gwb", url.Values{"environment": {"sandbox"}, "access_key_sandbox": {"ak_sb_5678"},
		"access_key_production": {"ak_pr_0000"}, "url_sandbox": {"https://sandbox.gwb.example"}, "url_production": {"https://api.gwb.example"}})
	_, doc = br.get("/app/pasarelas")
	gwb := doc.Find("#gateway-gwb")
	require.Equal(t, "••••5678", gwb.Find(`[data-field="active_key"]`).Text())
	require.Equal(t, "https://sandbox.gwb.example", gwb.Find(`[data-field="active_url"]`).Text())
}

func TestGatewaySettingsRejectBadValuesWith422(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/pasarelas")
	cases := []struct {
		gateway string
		form    url.Values
		field   string
	}{
		{"gwa", url.Values{"environment": {"sandbox"}}, "environment"},
		{"gwa", url.Values{"environment": {"test"}, "callback_url": {"javascript:alert(1)"}}, "callback_url"},
		{"gwa", url.Values{"environment": {"test"}, "api_key_test": {"has space"}}, "api_key_test"},
		{"gwb", url.Values{"environment": {"test"}}, "environment"},
		{"gwb", url.Values{"environment": {"sandbox"}, "url_sandbox": {"not a url"}}, "url_sandbox"},
	}
	for _, tc := range cases {
		resp, doc := br.post("/app/pasarelas/"+tc.gateway, tc.form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%v", tc.form)
		require.NotEmpty(t, doc.Find("#gateway-"+tc.gateway+" .field-error").Text(), "%v", tc.form)
	}
	resp, _ := br.post("/app/pasarelas/gwz", url.Values{"environment": {"test"}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Zero(t, countRows(t, b, "gateway_settings", ""), "nothing saved")
}

func TestWebhookListPagesFiltersAndEscapes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i := 0; i < 120; i++ {
		event := []string{"SALE_APPROVED", "SALE_REJECTED", "CHARGEBACK"}[i%3]
		ref := fmt.Sprintf("ORD-%03d", i)
		if i == 7 {
			ref = `<script>alert("x")</script>`
		}
		_, err := b.store.InsertWebhook(ctx, b.env.Pool, &db.Webhook{NotificationID: fmt.Sprintf("evt-%03d", i), Event: event,
			Status: db.StatusForEvent(event), Reference: ref, Environment: "test", Payload: fmt.Sprintf(`{"id":"evt-%03d","ref":%q}`, i, ref)})
		require.NoError(t, err)
	}
	br := b.browser(t)
	br.login(adminEmail)

	resp, doc := br.get("/app/webhooks/gwa")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 50, doc.Find("tr[data-id]").Length())
	rng := doc.Find("[data-total]")
	require.Equal(t, []string{"1", "50", "120"}, []string{rng.AttrOr("data-range-from", ""), rng.AttrOr("data-range-to", ""), rng.AttrOr("data-total", "")})
	next := doc.Find(`a[rel="next"]`)
	require.Equal(t, "/app/webhooks/gwa?page=2", next.AttrOr("href", ""))
	require.Equal(t, "true", next.AttrOr("hx-push-url", ""))

	resp, doc = br.get("/app/webhooks/gwa?page=3&event=SALE_REJECTED", "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, doc.Find("h1").Nodes, "htmx gets only the list")
	rng = doc.Find("[data-total]")
	require.Equal(t, []string{"1", "40", "40"}, []string{rng.AttrOr("data-range-from", ""), rng.AttrOr("data-range-to", ""), rng.AttrOr("data-total", "")},
		"a page past the end answers the last page, never an empty range")
	require.Equal(t, 40, doc.Find("tr[data-id]").Length())

	_, doc = br.get("/app/webhooks/gwa?event=SALE_REJECTED&status=rechazado")
	require.Equal(t, "40", doc.Find("[data-total]").AttrOr("data-total", ""))
	doc.Find("tr[data-id]").Each(func(_ int, s *goquerySelection) {
		require.Equal(t, "SALE_REJECTED", s.AttrOr("data-event", ""))
		require.Equal(t, "rechazado", s.AttrOr("data-status", ""))
	})

	_, doc = br.get("/app/webhooks/gwa?q=" + url.QueryEscape("<script>"))
	require.Equal(t, 1, doc.Find("tr[data-id]").Length())
	html, _ := doc.Find("tr[data-id]").Html()
	require.Contains(t, html, "&lt;script&gt;", "escaped in the list")
	require.Empty(t, doc.Find("tbody script").Nodes)

	id := doc.Find("tr[data-id]").AttrOr("data-id", "")
	resp, doc = br.get("/app/webhooks/gwa/" + id)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, doc.Find("main script").Nodes, "escaped in the detail")
	require.Contains(t, doc.Find("#payload").Text(), "\n  \"ref\": \"<script>alert", "pretty-printed raw payload, shown as text")

	for _, bad := range []string{"?page=0", "?page=abc", "?status=pagado"} {
		resp, doc = br.get("/app/webhooks/gwa" + bad)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, bad)
		require.NotEmpty(t, doc.Find("#webhook-list .alert-error").Text(), bad)
	}
	resp, _ = br.get("/app/webhooks/gwa/999999")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = br.get("/app/webhooks/gwa/abc")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestReprocessingQueuesTheJobAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "test", testSecret)
	body := fixture(t, "sale_reversed.json")
	_, reply := b.postWebhook(t, body, "X-Signature", sign(testSecret, body))
	br := b.browser(t)
	br.login(adminEmail)
	br.get(fmt.Sprintf("/app/webhooks/gwa/%d", reply.ID))
	resp, _ := br.post(fmt.Sprintf("/app/webhooks/gwa/%d/reprocesar", reply.ID), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, 2, countRows(t, b, "river_job", "kind = 'gwa_process_webhook'"))
	resp, _ = br.post("/app/webhooks/gwa/999999/reprocesar", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestAttemptListFiltersByStatusAndNeedsTheAdminModule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, ref := range []string{"A-1", "A-2", "A-3"} {
		resp, err := b.app.Test(newGet("/gwa/retorno?reference="+ref), -1)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
	}
	_, err := b.env.DB.NewUpdate().Table("payment_attempts").Set("status = 'pagado'").Where("reference = 'A-2'").Exec(context.Background())
	require.NoError(t, err)
	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app/pagos/intentos?status=pagado")
	require.Equal(t, 1, doc.Find("tr[data-id]").Length())
	require.Equal(t, "pagado", doc.Find("tr[data-id]").AttrOr("data-status", ""))
	_, doc = br.get("/app/pagos/intentos")
	require.Equal(t, "3", doc.Find("[data-total]").AttrOr("data-total", ""))
	resp, _ := br.get("/app/pagos/intentos?status=aprobado")
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	op := b.browser(t)
	op.login(operatorEmail)
	for _, path := range []string{"/app/pagos/intentos", "/app/webhooks/gwa", "/app/pasarelas", "/app/api-tokens"} {
		resp, _ := op.get(path)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
	}
	require.True(t, strings.HasPrefix(doc.Find("title").Text(), "Intentos de pago"))
}

func TestAReferenceLinksToExactlyItsAttemptsAndNotifications(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, ref := range []string{"ORD-1", "ORD-10"} {
		_, err := b.store.InsertWebhook(ctx, b.env.Pool, &db.Webhook{NotificationID: "evt-" + ref, Event: "SALE_APPROVED",
			Status: "aprobado", Reference: ref, Environment: "test", Payload: "{}"})
		require.NoError(t, err)
		require.NoError(t, b.store.RecordAttempt(ctx, b.env.DB, &db.Attempt{Reference: ref, Params: []byte(`{}`)}))
	}
	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app/webhooks/gwa?reference=ORD-1")
	require.Equal(t, 1, doc.Find("tr[data-id]").Length(), "ORD-10 is another order")
	id := doc.Find("tr[data-id]").AttrOr("data-id", "")

	// From the notification to its attempts, and back.
	_, doc = br.get("/app/webhooks/gwa/" + id)
	href := doc.Find(`#webhook-detail a[href^="/app/pagos/intentos?reference="]`).AttrOr("href", "")
	require.Equal(t, "/app/pagos/intentos?reference=ORD-1", href)
	_, doc = br.get(href)
	require.Equal(t, 1, doc.Find("tr[data-id]").Length())
	require.Equal(t, "ORD-1", doc.Find("[data-reference-filter]").AttrOr("data-reference-filter", ""))
	_, doc = br.get("/app/pagos/intentos/" + doc.Find("tr[data-id]").AttrOr("data-id", ""))
	require.Equal(t, "/app/webhooks/gwa?reference=ORD-1",
		doc.Find(`#attempt-detail a[href^="/app/webhooks/gwa?reference="]`).AttrOr("href", ""))
}

func TestADetailPageLinksBackToTheListItCameFrom(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.InsertWebhook(context.Background(), b.env.Pool, &db.Webhook{NotificationID: "evt-back", Event: "SALE_APPROVED",
		Status: "aprobado", Environment: "test", Payload: "{}"})
	require.NoError(t, err)
	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app/webhooks/gwa")
	id := doc.Find("tr[data-id]").AttrOr("data-id", "")
	cases := []struct{ referer, want string }{
		{"http://example.com/app/webhooks/gwa?page=3&status=aprobado", "/app/webhooks/gwa?page=3&status=aprobado"},
		{"http://evil.example/app/webhooks/gwa?page=3", "/app/webhooks/gwa"}, // another site: never followed
		{"http://example.com/app/pasarelas", "/app/webhooks/gwa"},            // not the list
		{"", "/app/webhooks/gwa"},
	}
	for _, tc := range cases {
		_, doc := br.get("/app/webhooks/gwa/"+id, "Referer", tc.referer)
		require.Equal(t, tc.want, doc.Find(".back a").AttrOr("href", ""), "Referer %q", tc.referer)
	}
}
