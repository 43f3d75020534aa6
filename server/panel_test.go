package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pasarela/db"
)

func TestPanelShowsTheLast24HoursFromRowsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// Now: stored through the receiver's insert, counted by the trigger.
	insert := func(id, event, amount string) {
		t.Helper()
		w := &db.Webhook{NotificationID: id, Event: event, Status: db.StatusForEvent(event), Reference: "ORD-" + id,
			Currency: "CLP", Environment: "test", Payload: "{}", Amount: &amount}
		_, err := b.store.InsertWebhook(ctx, b.env.Pool, w)
		require.NoError(t, err)
	}
	// Earlier hours: counted as the trigger would have counted them then.
	earlier := func(status, amount string, hoursAgo int) {
		t.Helper()
		_, err := b.env.DB.ExecContext(ctx, `INSERT INTO gwa_webhook_hourly (hour, status, currency, slot, n, amount)
			VALUES (date_trunc('hour', now() - make_interval(hours => ?), 'UTC'), ?, 'CLP', 0, 1, ?::numeric)`, hoursAgo, status, amount)
		require.NoError(t, err)
	}
	insert("a1", "SALE_APPROVED", "12345678.00")
	insert("r1", "SALE_REJECTED", "500")
	earlier("aprobado", "1000.50", 2)
	earlier("contracargo", "700", 3)
	earlier("aprobado", "99999", 30) // outside the 24 h
	// Attempts: one pendiente for an hour, one pendiente for ten minutes, one paid.
	for _, ref := range []string{"ORD-x1", "ORD-x2", "ORD-a1"} {
		require.NoError(t, b.store.RecordAttempt(ctx, b.env.DB, &db.Attempt{Reference: ref, Params: []byte(`{}`)}))
	}
	_, err := b.env.DB.ExecContext(ctx, `UPDATE payment_attempts SET created_at = now() - interval '1 hour' WHERE reference IN ('ORD-x1', 'ORD-a1')`)
	require.NoError(t, err)
	_, err = b.env.DB.ExecContext(ctx, `UPDATE payment_attempts SET created_at = now() - interval '10 minutes' WHERE reference = 'ORD-x2'`)
	require.NoError(t, err)
	_, err = b.env.DB.ExecContext(ctx, `INSERT INTO gwa_webhook_rejections (minute, reason, ip, n, body_bytes, last_at)
		VALUES (date_trunc('minute', now()), 'firma inválida', '203.0.113.9', 7, 0, now()),
		       (now() - interval '2 days', 'firma inválida', '203.0.113.9', 100, 0, now() - interval '2 days')`)
	require.NoError(t, err)

	br := b.browser(t)
	br.login(adminEmail)
	resp, doc := br.get("/app")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	figure := func(name string) string {
		return strings.Join(strings.Fields(doc.Find(`[data-figure="`+name+`"] .tile-value`).Text()), " ")
	}
	require.Equal(t, "4", figure("received"), "five stored, one older than 24 h")
	require.Equal(t, "$12.346.678,50", figure("approved-amount"), "12,345,678 + 1,000.50 approved, never rounded")
	require.Equal(t, "1", figure("pending-attempts"), "only the attempt pendiente for more than 30 minutes")
	require.Equal(t, "7", figure("rejected"))
	require.Equal(t, "/app/pagos/intentos?status=pendiente", doc.Find(`[data-figure="pending-attempts"]`).AttrOr("href", ""))
	byStatus := map[string]string{}
	doc.Find(".status-list li").Each(func(_ int, s *goquerySelection) {
		byStatus[s.AttrOr("data-status", "")] = strings.TrimSpace(s.Find(".num").Text())
	})
	require.Equal(t, map[string]string{"aprobado": "2", "rechazado": "1", "reversado": "0", "contracargo": "1", "desconocido": "0"}, byStatus)
	points := doc.Find("#hourly-chart").AttrOr("data-points", "")
	require.Regexp(t, `^\[\[(\d+,){23}\d+\],\[(\d+,){23}\d+\]\]$`, points, "24 hours for the chart")
	var chart [2][]int64
	require.NoError(t, json.Unmarshal([]byte(points), &chart))
	require.Equal(t, []int64{1, 1, 0, 2}, chart[1][20:], "3 h ago 1, 2 h ago 1, an hour ago 0, this hour 2")

	// An operator without the module sees no payment figures.
	op := b.browser(t)
	op.login(operatorEmail)
	_, doc = op.get("/app")
	require.Empty(t, doc.Find(`[data-figure]`).Nodes)
}

func TestPanelWarnsWhenProductionIsSilent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "production", testSecret)
	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app")
	require.Empty(t, doc.Find("#silence-alert").Nodes, "no warning until the admin sets a threshold")

	resp, doc := br.post("/app/panel/aviso-silencio", url.Values{"minutos": {"-5"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, "true", doc.Find("#minutos").AttrOr("aria-invalid", ""))

	resp, _ = br.post("/app/panel/aviso-silencio", url.Values{"minutos": {"15"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, doc = br.get("/app")
	require.Contains(t, doc.Find("#silence-alert").Text(), "15 minutos", "no notification ever: production is silent")

	_, err := b.store.InsertWebhook(context.Background(), b.env.Pool, &db.Webhook{NotificationID: fmt.Sprint("evt-now"),
		Event: "SALE_APPROVED", Status: "aprobado", Environment: "production", Payload: "{}"})
	require.NoError(t, err)
	_, doc = br.get("/app")
	require.Empty(t, doc.Find("#silence-alert").Nodes, "a notification just arrived")
}

func TestEmptyListsTellNoDataFromNoMatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	cases := []struct{ path, want, clear string }{
		{"/app/webhooks/gwa", "no-data", ""},
		{"/app/webhooks/gwa?status=rechazado", "no-match", "/app/webhooks/gwa"},
		{"/app/pagos/intentos", "no-data", ""},
		{"/app/pagos/intentos?q=ORD-NADA", "no-match", "/app/pagos/intentos"},
		{"/app/api-tokens", "no-data", ""},
	}
	for _, tc := range cases {
		_, doc := br.get(tc.path)
		empty := doc.Find("[data-empty]")
		require.Equal(t, tc.want, empty.AttrOr("data-empty", ""), tc.path)
		if tc.clear != "" {
			require.Equal(t, tc.clear, empty.Find("a").AttrOr("href", ""), "%s offers to clear the filters", tc.path)
		} else {
			require.NotEmpty(t, strings.TrimSpace(empty.Find("strong").Text()), "%s says there is nothing yet", tc.path)
		}
	}
}
