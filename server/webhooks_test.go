package server_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/valyala/fasthttp"

	"pasarela/db"
	"pasarela/db/secretbox"
)

const testSecret = "whsec_test"

// fixture reads a sample delivery from testdata/gwa (the gateway's samples).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gwa", name))
	require.NoError(t, err)
	return b
}

func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// configureGWA stores the checkout gateway's environment and secret directly.
func (b *bundle) configureGWA(t testing.TB, env, secret string) {
	t.Helper()
	box, err := secretbox.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	admin, err := b.store.Authenticate(context.Background(), b.env.DB, adminEmail, testPassword)
	require.NoError(t, err)
	changes := []db.FieldChange{{Field: "environment", Value: env}, {Field: "secret_key_" + env, Value: secret, Clear: secret == ""}}
	_, err = b.store.SaveGatewaySettings(context.Background(), b.env.DB, box, "gwa", changes, admin)
	require.NoError(t, err)
}

type webhookReply struct {
	ID        int64  `json:"id"`
	Duplicate bool   `json:"duplicate"`
	Error     string `json:"error"`
}

func (b *bundle) postWebhook(t *testing.T, body []byte, headers ...string) (int, webhookReply) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhooks/gwa", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	var r webhookReply
	raw, _ := io.ReadAll(resp.Body)
	require.NoError(t, json.Unmarshal(raw, &r), "JSON answer: %s", raw)
	return resp.StatusCode, r
}

func countRows(t testing.TB, b *bundle, table, where string, args ...any) int {
	t.Helper()
	q := b.env.DB.NewSelect().TableExpr(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	n, err := q.Count(context.Background())
	require.NoError(t, err)
	return n
}

// rejected waits for the refused deliveries counted in memory to be flushed
// (about once a second) and returns their total once it reaches want.
func rejected(t testing.TB, b *bundle, want int) int {
	t.Helper()
	var n int
	require.Eventually(t, func() bool {
		err := b.env.DB.NewSelect().TableExpr("gwa_webhook_rejections").ColumnExpr("COALESCE(sum(n), 0)").
			Scan(context.Background(), &n)
		return err == nil && n >= want
	}, 10*time.Second, 20*time.Millisecond, "expected %d refused deliveries counted", want)
	time.Sleep(1200 * time.Millisecond) // one more flush: nothing beyond want arrives
	require.NoError(t, b.env.DB.NewSelect().TableExpr("gwa_webhook_rejections").ColumnExpr("COALESCE(sum(n), 0)").
		Scan(context.Background(), &n))
	return n
}

func TestWebhookSignatureIsCheckedOnTheRawBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "test", testSecret)
	body := fixture(t, "sale_approved.json")
	sig := sign(testSecret, body)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, body))

	cases := []struct {
		name    string
		body    []byte
		headers []string
		want    int
	}{
		{"sha256= prefix, lower hex", body, []string{"X-Signature", "sha256=" + sig}, 200},
		{"bare upper hex", body, []string{"X-Signature", strings.ToUpper(sig)}, 200},
		{"wrong signature", body, []string{"X-Signature", "sha256=" + sign("other", body)}, 401},
		{"missing signature", body, nil, 401},
		{"garbage signature", body, []string{"X-Signature", "sha256=zz"}, 401},
		{"body re-serialised by a proxy", compact.Bytes(), []string{"X-Signature", "sha256=" + sig}, 401},
	}
	for _, tc := range cases {
		status, reply := b.postWebhook(t, tc.body, tc.headers...)
		require.Equal(t, tc.want, status, tc.name)
		if tc.want == 401 {
			require.NotEmpty(t, reply.Error, tc.name)
		}
	}
	require.Equal(t, 1, countRows(t, b, "gwa_webhooks", ""), "only verified deliveries are stored (one id)")
	require.Equal(t, 4, rejected(t, b, 4))
	require.Equal(t, 1, countRows(t, b, "gwa_webhooks", "verified"))
}

func TestWebhookWithAnEmptySecretDependsOnTheEnvironment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := fixture(t, "sale_rejected.json")

	b.configureGWA(t, "test", "")
	status, reply := b.postWebhook(t, body)
	require.Equal(t, 200, status, "test without a secret accepts")
	w, err := b.store.Webhook(context.Background(), b.env.DB, reply.ID)
	require.NoError(t, err)
	require.False(t, w.Verified, "stored as unverified")

	p := setup(t)
	p.configureGWA(t, "production", "")
	status, _ = p.postWebhook(t, body, "X-Signature", sign("anything", body))
	require.Equal(t, 401, status, "production without a secret fails closed")
	require.Zero(t, countRows(t, p, "gwa_webhooks", ""))
}

func TestFiftyConcurrentCopiesOfOneDeliveryStoreOneRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "test", testSecret)
	base := serve(t, b)
	body := fixture(t, "chargeback.json")
	sig := "sha256=" + sign(testSecret, body)

	var wg sync.WaitGroup
	replies := make([]webhookReply, 50)
	statuses := make([]int, 50)
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/gwa", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Signature", sig)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			statuses[i] = resp.StatusCode
			_ = json.NewDecoder(resp.Body).Decode(&replies[i])
		}()
	}
	close(start)
	wg.Wait()
	fresh := 0
	for i := range replies {
		require.Equal(t, 200, statuses[i])
		require.Equal(t, replies[0].ID, replies[i].ID, "every copy names the same local id")
		if !replies[i].Duplicate {
			fresh++
		}
	}
	require.Equal(t, 1, fresh, "exactly one copy is new")
	require.Equal(t, 1, countRows(t, b, "gwa_webhooks", ""))
	require.Equal(t, 1, countRows(t, b, "river_job", "kind = 'gwa_process_webhook'"), "one processing job")
}

func TestBadDeliveriesGetClearErrorsAndAreCounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "test", testSecret)
	signed := func(body []byte) []string { return []string{"X-Signature", sign(testSecret, body)} }

	big := append([]byte(`{"id":"x","event":"SALE_APPROVED","pad":"`), bytes.Repeat([]byte("a"), 1<<20)...)
	big = append(big, `"}`...)
	status, reply := b.postWebhook(t, big, signed(big)...)
	require.Equal(t, 413, status)
	require.Contains(t, reply.Error, "1 MiB")

	req := httptest.NewRequest(http.MethodPost, "/webhooks/gwa", strings.NewReader("id=1"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	require.Equal(t, 415, resp.StatusCode)

	broken := []byte(`{"id": "evt", "event": `)
	status, _ = b.postWebhook(t, broken, signed(broken)...)
	require.Equal(t, 400, status)
	noEvent := []byte(`{"id": "evt-no-event", "data": {}}`)
	status, _ = b.postWebhook(t, noEvent, signed(noEvent)...)
	require.Equal(t, 400, status)

	unknown := []byte(`{"id": "evt-refund-1", "event": "REFUND_CREATED", "data": {"reference": "ORD-9", "amount": 10}}`)
	status, reply = b.postWebhook(t, unknown, signed(unknown)...)
	require.Equal(t, 200, status)
	w, err := b.store.Webhook(context.Background(), b.env.DB, reply.ID)
	require.NoError(t, err)
	require.Equal(t, "desconocido", w.Status)
	require.Equal(t, "10.00", *w.Amount, "a numeric amount is read")
	require.Equal(t, string(unknown), w.Payload, "the raw payload is kept byte for byte")

	require.Equal(t, 4, rejected(t, b, 4))
	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app/webhooks/gwa")
	require.Equal(t, "4", doc.Find("#rejections").AttrOr("data-rejected", ""))
	require.Contains(t, doc.Find("#rejections").Text(), "cuerpo demasiado grande")
	require.Contains(t, doc.Find("#rejections").Text(), "JSON inválido")
}

func TestAnAmountPostgreSQLCannotStoreIsKeptOnlyInThePayload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "test", testSecret)
	cases := []struct {
		amount string // as it appears in the JSON
		stored string // "" when no amount is stored
	}{
		{`"1500.50"`, "1500.50"},
		{`-3`, "-3.00"},
		{`"1e3"`, "1000.00"},
		{`"999999999999999999.99"`, "999999999999999999.99"}, // the largest the column holds
		{`"1e400"`, ""},               // once stored as a 401-digit number
		{`"1000000000000000000"`, ""}, // 19 integer digits
		{`12.345`, ""},                // a third decimal would be rounded away
		{`"12.340"`, "12.34"},
		{`"0x1p-2"`, ""}, // a Go float, not a number to PostgreSQL
		{`"NaN"`, ""},
		{`"Infinity"`, ""},
		{`"1_000"`, ""},
		{`"12 CLP"`, ""},
		{`{"value": 5}`, ""},
	}
	for i, tc := range cases {
		body := []byte(fmt.Sprintf(`{"id":"evt-amount-%d","event":"SALE_APPROVED","data":{"reference":"ORD-A%d","amount":%s}}`, i, i, tc.amount))
		status, reply := b.postWebhook(t, body, "X-Signature", sign(testSecret, body))
		require.Equal(t, 200, status, "amount %s", tc.amount)
		w, err := b.store.Webhook(context.Background(), b.env.DB, reply.ID)
		require.NoError(t, err)
		if tc.stored == "" {
			require.Nil(t, w.Amount, "amount %s", tc.amount)
		} else {
			require.NotNil(t, w.Amount, "amount %s", tc.amount)
			require.Equal(t, tc.stored, *w.Amount, "amount %s", tc.amount)
		}
		require.Equal(t, string(body), w.Payload)
	}
}

func TestOddBytesInADeliveryAreStoredOrRefusedNever500(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "test", testSecret)
	post := func(body []byte) (int, webhookReply) {
		return b.postWebhook(t, body, "X-Signature", sign(testSecret, body))
	}

	// A NUL escape is valid JSON: the field is stored without it, the payload as sent.
	nul := []byte(`{"id":"evt-nul","event":"SALE_APPROVED","data":{"reference":"A\u0000B"}}`)
	status, reply := post(nul)
	require.Equal(t, 200, status)
	w, err := b.store.Webhook(context.Background(), b.env.DB, reply.ID)
	require.NoError(t, err)
	require.Equal(t, "AB", w.Reference)
	require.Equal(t, string(nul), w.Payload)

	// A reference at the limit, in multi-byte characters, is stored whole.
	long := []byte(`{"id":"evt-long","event":"SALE_APPROVED","data":{"reference":"` + strings.Repeat("é", 255) + `"}}`)
	status, reply = post(long)
	require.Equal(t, 200, status)
	w, err = b.store.Webhook(context.Background(), b.env.DB, reply.ID)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", 255), w.Reference)

	// Bytes that are not UTF-8 are not JSON.
	status, reply = post([]byte("{\"id\":\"evt-utf\",\"event\":\"SALE_APPROVED\",\"data\":{\"reference\":\"A\xffB\"}}"))
	require.Equal(t, 400, status)
	require.Contains(t, reply.Error, "UTF-8")
}

func TestPaymentFlowsWithARealWorker(t *testing.T) {
	t.Parallel()
	b := setupWith(t, options{worker: true})
	b.configureGWA(t, "test", testSecret)
	deliver := func(body []byte) int64 {
		status, reply := b.postWebhook(t, body, "X-Signature", sign(testSecret, body))
		require.Equal(t, 200, status)
		require.Eventually(t, func() bool {
			w, err := b.store.Webhook(context.Background(), b.env.DB, reply.ID)
			return err == nil && w.Processed
		}, 10*time.Second, 20*time.Millisecond, "the worker processes the notification")
		return reply.ID
	}
	event := func(id, event, ref string, at time.Time) []byte {
		return []byte(fmt.Sprintf(`{"id":%q,"event":%q,"created_at":%q,"data":{"payment_id":"pay-%s","reference":%q,"payer":{"email":"p@example.com"},"amount":"100.00","currency":"CLP","status":"X"}}`,
			id, event, at.UTC().Format(time.RFC3339), id, ref))
	}
	visit := func(ref string) *http.Response {
		req := httptest.NewRequest(http.MethodGet, "/gwa/retorno?reference="+url.QueryEscape(ref)+"&email=p%40example.com&payment_link=https%3A%2F%2Fpay.example%2Fx", nil)
		resp, err := b.app.Test(req, -1)
		require.NoError(t, err)
		return resp
	}
	attempt := func(ref string) (status, outcome string) {
		require.NoError(t, b.env.DB.NewRaw(`SELECT a.status, COALESCE(o.outcome, '') FROM payment_attempts a
			LEFT JOIN gwa_reference_outcomes o USING (reference) WHERE a.reference = ? ORDER BY a.id DESC LIMIT 1`, ref).
			Scan(context.Background(), &status, &outcome))
		return status, outcome
	}
	now := time.Now()

	// Approval before the return visit: the visit starts paid.
	deliver(fixture(t, "sale_approved.json")) // reference ORD-1001
	resp := visit("ORD-1001")
	doc := parse(t, resp)
	require.Equal(t, "pagado", doc.Find("#payment-status").AttrOr("data-status", ""))
	require.Contains(t, doc.Find("#payment-status").Text(), "pago confirmado")
	st, _ := attempt("ORD-1001")
	require.Equal(t, "pagado", st)

	// Reversal before approval: the outcome stays reversed.
	visit("ORD-R")
	deliver(event("evt-r-rev", "SALE_REVERSED", "ORD-R", now.Add(time.Minute)))
	deliver(event("evt-r-app", "SALE_APPROVED", "ORD-R", now))
	st, outcome := attempt("ORD-R")
	require.Equal(t, "reversado", outcome)
	require.Equal(t, "pagado", st)

	// Two return visits, one approval: both paid; the payer's page polls and turns.
	visit("ORD-2V")
	doc = parse(t, visit("ORD-2V"))
	require.Equal(t, "pendiente", doc.Find("#payment-status").AttrOr("data-status", ""))
	poll, ok := doc.Find("#payment-status").Attr("hx-get")
	require.True(t, ok, "the pending page polls with htmx")
	deliver(event("evt-2v", "SALE_APPROVED", "ORD-2V", now))
	require.Equal(t, 2, countRows(t, b, "payment_attempts", "reference = 'ORD-2V' AND status = 'pagado'"))
	resp, err := b.app.Test(httptest.NewRequest(http.MethodGet, poll, nil), -1)
	require.NoError(t, err)
	doc = parse(t, resp)
	require.Equal(t, "pagado", doc.Find("#payment-status").AttrOr("data-status", ""))
	_, polling := doc.Find("#payment-status").Attr("hx-trigger")
	require.False(t, polling, "a paid status stops polling")
}

func TestReturnVisitRecordsEverythingAndExplainsAMissingReference(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *configT) { c.TrustedProxies = nil })
	form := url.Values{"reference": {"ORD-77"}, "email": {"ana@example.com"}, "payment_link": {"https://pay.example/l/1"}, "extra": {"a", "b"}}
	req := httptest.NewRequest(http.MethodPost, "/gwa/retorno?source=gw", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "Payer/1.0")
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	var a db.Attempt
	require.NoError(t, b.env.DB.NewSelect().Model(&a).Where("reference = 'ORD-77'").Scan(context.Background()))
	require.Equal(t, "pendiente", a.Status)
	require.Equal(t, "ana@example.com", a.Email)
	require.Equal(t, "https://pay.example/l/1", a.PaymentLink)
	require.Equal(t, "Payer/1.0", a.UserAgent)
	require.Equal(t, "0.0.0.0", a.IP)
	var params map[string]any
	require.NoError(t, json.Unmarshal(a.Params, &params))
	require.Equal(t, "gw", params["source"])
	require.Equal(t, []any{"a", "b"}, params["extra"])

	resp, err = b.app.Test(httptest.NewRequest(http.MethodGet, "/gwa/retorno?email=x@example.com", nil), -1)
	require.NoError(t, err)
	doc := parse(t, resp)
	require.NotEmpty(t, doc.Find("#reference-missing").Nodes)
	require.Equal(t, 1, countRows(t, b, "payment_attempts", "reference = ''"), "recorded anyway")

	resp, err = b.app.Test(httptest.NewRequest(http.MethodGet, "/gwa/retorno/estado", nil), -1)
	require.NoError(t, err)
	require.Equal(t, 422, resp.StatusCode)

	// NUL and bytes that are not UTF-8, in parameters and headers, are still recorded.
	req = httptest.NewRequest(http.MethodGet, "/gwa/retorno?reference=ODD-%00%FF&x%00=%00", nil)
	req.Header.Set("User-Agent", "Odd\xff")
	resp, err = b.app.Test(req, -1)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	var odd db.Attempt
	require.NoError(t, b.env.DB.NewSelect().Model(&odd).Where("reference LIKE 'ODD-%'").Scan(context.Background()))
	require.Equal(t, "ODD-\uFFFD", odd.Reference)
	require.Equal(t, "Odd\uFFFD", odd.UserAgent)
	require.NotContains(t, string(odd.Params), `\u0000`)
}

func TestTwoLongIdsThatDifferOnlyAtTheEndNeverCollide(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "test", testSecret)
	post := func(id, ref string) (int, webhookReply) {
		body := []byte(fmt.Sprintf(`{"id":%q,"event":"SALE_APPROVED","data":{"payment_id":"pay-%s","reference":%q}}`, id, ref, ref))
		return b.postWebhook(t, body, "X-Signature", sign(testSecret, body))
	}
	// The pair of the report: ids equal for their first 200 characters.
	first, second := "evt_longid_"+strings.Repeat("i", 189), "evt_longid_"+strings.Repeat("i", 189)+"_DIFFERENT_TAIL"
	status, reply := post(first, "ORD-L1")
	require.Equal(t, 200, status)
	require.False(t, reply.Duplicate)
	status, reply = post(second, "ORD-L2")
	require.Equal(t, 200, status)
	require.False(t, reply.Duplicate, "a different id is a different notification")
	require.Equal(t, 2, countRows(t, b, "gwa_webhooks", "notification_id IN (?, ?)", first, second), "both stored whole")

	// Past the limit an identifier is refused, never cut, and the refusal is counted.
	tooLong := []struct{ name, body string }{
		{"id", `{"id":"` + strings.Repeat("x", 256) + `","event":"SALE_APPROVED","data":{}}`},
		{"data.reference", `{"id":"evt-ref","event":"SALE_APPROVED","data":{"reference":"` + strings.Repeat("R", 256) + `"}}`},
		{"data.payment_id", `{"id":"evt-pay","event":"SALE_APPROVED","data":{"payment_id":"` + strings.Repeat("P", 256) + `"}}`},
		{"event", `{"id":"evt-ev","event":"` + strings.Repeat("E", 101) + `","data":{}}`},
		{"data.payer.email", `{"id":"evt-mail","event":"SALE_APPROVED","data":{"payer":{"email":"` + strings.Repeat("m", 321) + `"}}}`},
	}
	for _, tc := range tooLong {
		status, reply := b.postWebhook(t, []byte(tc.body), "X-Signature", sign(testSecret, []byte(tc.body)))
		require.Equal(t, 400, status, tc.name)
		require.Contains(t, reply.Error, tc.name, "the message names the field")
	}
	require.Equal(t, len(tooLong), rejected(t, b, len(tooLong)))
	var reason string
	require.NoError(t, b.env.DB.NewSelect().TableExpr("gwa_webhook_rejections").Column("reason").Limit(1).Scan(context.Background(), &reason))
	require.Equal(t, "identificador demasiado largo", reason)

	// The return page records the visit, but never with a cut reference that
	// could match another order: one that long is no reference at all.
	req := httptest.NewRequest(http.MethodGet, "/gwa/retorno?reference="+strings.Repeat("R", 256), nil)
	resp, err := b.app.Test(req, -1)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, parse(t, resp).Find("#reference-missing").Text(), "no es válida")
	require.Equal(t, 1, countRows(t, b, "payment_attempts", "reference = ''"))
}

func TestAFloodOfRefusedDeliveriesIsCountedExactlyInAFewWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.configureGWA(t, "production", testSecret)
	writes := &statementCounter{match: "INSERT INTO \"gwa_webhook_rejections\""}
	b.env.DB.AddQueryHook(writes)
	base := serve(t, b)
	const n = 2000
	junk := []byte(`{"id":"evt-junk","event":"SALE_APPROVED"}`)
	client := &fasthttp.Client{MaxConnsPerHost: 16}
	start := time.Now()
	_, _ = latencies(t, 16, n, func(i int) error {
		sig := "" // half without a signature, half with a wrong one
		if i%2 == 1 {
			sig = "sha256=00"
		}
		status, _, err := postRaw(client, base, junk, sig)
		if err == nil && status != 401 {
			err = fmt.Errorf("status %d", status)
		}
		return err
	})
	elapsed := time.Since(start)
	require.Equal(t, n, rejected(t, b, n), "every refused delivery is counted")

	var byReason []struct {
		Reason string `bun:"reason"`
		IP     string `bun:"ip"`
		N      int    `bun:"n"`
	}
	require.NoError(t, b.env.DB.NewSelect().TableExpr("gwa_webhook_rejections").ColumnExpr("reason, ip, sum(n) AS n").
		GroupExpr("reason, ip").OrderExpr("reason").Scan(context.Background(), &byReason))
	require.Len(t, byReason, 2)
	require.Equal(t, "falta la firma", byReason[0].Reason)
	require.Equal(t, n/2, byReason[0].N)
	require.Equal(t, "firma inválida", byReason[1].Reason)
	require.Equal(t, n/2, byReason[1].N)
	require.Equal(t, "127.0.0.1", byReason[0].IP)

	// One statement a flush: writes grow with seconds, not with requests.
	require.Positive(t, writes.n.Load())
	require.LessOrEqual(t, int(writes.n.Load()), int(elapsed/time.Second)+3,
		"%d refused deliveries in %s took %d statements", n, elapsed, writes.n.Load())
}

// statementCounter counts the statements bun sends that contain match.
type statementCounter struct {
	match string
	n     atomic.Int64
}

func (c *statementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *statementCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.Contains(e.Query, c.match) {
		c.n.Add(1)
	}
}
