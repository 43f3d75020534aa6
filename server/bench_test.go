package server_test

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"pasarela/db"
)

// The benchmarks run a fixed workload once (`make bench` passes -benchtime 1x)
// and report their figures as metrics, each beside a baseline measured in the
// same run.

// latencies runs total calls of do over workers goroutines and returns each
// call's duration and the wall time of the whole run.
func latencies(tb testing.TB, workers, total int, do func(i int) error) ([]time.Duration, time.Duration) {
	tb.Helper()
	var next atomic.Int64
	out := make([]time.Duration, total)
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				t0 := time.Now()
				if err := do(i); err != nil {
					failed.Store(err)
					return
				}
				out[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		tb.Fatalf("load run failed: %v", err)
	}
	return out, time.Since(start)
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkWebhookIngest measures the receiver alone: signed deliveries over
// loopback from 32 keep-alive clients to a database that commits durably, no
// worker running. Baseline: plain single-row INSERTs over pgx, prepared, into
// a table of the same width (no index), at the same concurrency, in the same run.
func BenchmarkWebhookIngest(b *testing.B) {
	ingestBenchmark(b, false)
}

// BenchmarkWebhookPipeline measures the pipeline as a one-machine deployment
// runs it (`pasarela dev`: web and worker in one process on the same two
// cores): every delivery stored, then processed by the worker. Against the
// same baseline. Targets: ratio ≥ 0.5, p99 ≤ 25 ms, processing lag
// (processed_at − received_at) p99 ≤ 2 s.
func BenchmarkWebhookPipeline(b *testing.B) {
	ingestBenchmark(b, true)
}

func ingestBenchmark(b *testing.B, withWorker bool) {
	// Two rounds of each, interleaved, so that drift on the machine (it swings
	// by ±15% within seconds) hits both alike. A round lasts several seconds:
	// long enough to show whether processing keeps up, as a lag that grows.
	const clients, total, rounds = 32, 20000, 2
	// The pool `dev` opens (see main.go), shared by the receiver and the worker.
	bb := setupWith(b, options{durable: true, worker: withWorker, poolConns: 25})
	bb.configureGWA(b, "production", testSecret)
	base := serve(b, bb)
	ctx := context.Background()

	// Both sides get their input ready-made: only storing it is timed.
	bodies := make([][]byte, total*rounds)
	sigs := make([]string, total*rounds)
	rows := make([][]any, total*rounds)
	for i := range bodies {
		bodies[i] = []byte(fmt.Sprintf(`{"id":"evt_bench_%d","event":"SALE_APPROVED","created_at":"2026-11-20T14:03:11Z","data":{"payment_id":"pay_%08x","reference":"ORD-%d","payer":{"email":"payer%d@example.com","name":"Ana Pérez"},"amount":"15990.00","currency":"CLP","status":"APPROVED","method":"card"}}`,
			i, i*7919, i, i%5000))
		sigs[i] = "sha256=" + sign(testSecret, bodies[i])
		rows[i] = []any{fmt.Sprintf("evt_bench_%d", i), "SALE_APPROVED", "aprobado", fmt.Sprintf("pay_%08x", i*7919),
			fmt.Sprintf("ORD-%d", i), fmt.Sprintf("payer%d@example.com", i%5000), "15990.00", "CLP", "APPROVED",
			"production", true, "127.0.0.1", string(bodies[i])}
	}
	_, err := bb.env.DB.ExecContext(ctx, `CREATE TABLE bench_plain (LIKE gwa_webhooks INCLUDING DEFAULTS)`)
	require.NoError(b, err)
	// The fastest plain way to write a row: one prepared INSERT per row on its
	// own pgx connection (pgx prepares and caches the statement per connection).
	plainPool, err := db.OpenPool(ctx, bb.env.URL, clients)
	require.NoError(b, err)
	defer plainPool.Close()
	const plainInsert = `INSERT INTO bench_plain (notification_id, event, status, payment_id, reference, payer_email,
		amount, currency, gateway_status, environment, verified, ip, payload)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	// A light load generator, as wrk would be: it shares the two cores with the server.
	client := &fasthttp.Client{MaxConnsPerHost: clients}

	b.ResetTimer()
	var plain, ingest []time.Duration
	var plainWall, ingestWall time.Duration
	for round := 0; round < rounds; round++ {
		off := round * total
		p, pw := latencies(b, clients, total, func(i int) error {
			_, err := plainPool.Exec(ctx, plainInsert, rows[i+off]...)
			return err
		})
		in, iw := latencies(b, clients, total, func(i int) error {
			i += off
			return postSigned(client, base, bodies[i], sigs[i])
		})
		plain, plainWall = append(plain, p...), plainWall+pw
		ingest, ingestWall = append(ingest, in...), ingestWall+iw
		if withWorker {
			// The next baseline round starts only once the worker is idle, so it
			// never shares the machine with processing left over.
			waitProcessed(b, bb, off+total)
		}
	}
	b.StopTimer()

	require.Equal(b, total*rounds, countRows(b, bb, "gwa_webhooks", ""))
	var queued int
	require.NoError(b, bb.env.DB.NewRaw(`SELECT COALESCE(sum(jsonb_array_length(args->'webhook_ids')), 0) FROM river_job
		WHERE kind = 'gwa_process_webhook'`).Scan(ctx, &queued))
	require.Equal(b, total*rounds, queued, "every stored delivery has its processing job")
	batches := countRows(b, bb, "river_job", "kind = 'gwa_process_webhook'")
	b.ReportMetric(float64(total*rounds)/float64(batches), "deliveries/commit")
	ingestRate := float64(total*rounds) / ingestWall.Seconds()
	plainRate := float64(total*rounds) / plainWall.Seconds()
	b.ReportMetric(ingestRate, "ingest_req/s")
	b.ReportMetric(ms(percentile(ingest, 0.99)), "ingest_p99_ms")
	b.ReportMetric(plainRate, "plain_insert/s")
	b.ReportMetric(ms(percentile(plain, 0.99)), "plain_p99_ms")
	b.ReportMetric(ingestRate/plainRate, "ratio")
	if withWorker {
		var lag struct {
			P50 float64 `bun:"p50"`
			P99 float64 `bun:"p99"`
			Max float64 `bun:"max"`
		}
		require.NoError(b, bb.env.DB.NewRaw(`SELECT
			percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)) * 1000 AS p50,
			percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)) * 1000 AS p99,
			max(extract(epoch FROM processed_at - received_at)) * 1000 AS max
			FROM gwa_webhooks JOIN gwa_webhook_processed ON webhook_id = id`).Scan(ctx, &lag))
		b.ReportMetric(lag.P50, "lag_p50_ms")
		b.ReportMetric(lag.P99, "lag_p99_ms")
		b.ReportMetric(lag.Max, "lag_max_ms")
	}
}

// waitProcessed waits until n notifications are processed.
func waitProcessed(tb testing.TB, bb *bundle, n int) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		return countRows(tb, bb, "gwa_webhook_processed", "") >= n
	}, 2*time.Minute, 50*time.Millisecond, "the worker should process every delivery")
}

// BenchmarkWebhookList1M measures the server time of the webhook list with a
// million stored notifications: page 1, page 2,000, a filtered search and the
// Panel (/app, its figures from the hourly counts), each
// against the raw query for 50 newest rows as the baseline. Target: p95 ≤ 30 ms.
func BenchmarkWebhookList1M(b *testing.B) {
	const rows, runs = 1_000_000, 200
	bb := setupWith(b, options{})
	ctx := context.Background()
	load1M(b, bb.env.Pool, rows)

	br := bb.browser(b)
	br.login(adminEmail)
	get := func(path string) func(int) error {
		return func(int) error {
			resp, _ := br.get(path)
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s: status %d", path, resp.StatusCode)
			}
			return nil
		}
	}
	cases := []struct{ name, path string }{
		{"page1", "/app/webhooks/gwa"},
		{"page2000", "/app/webhooks/gwa?page=2000"},
		{"page20000", "/app/webhooks/gwa?page=20000"},
		{"search", "/app/webhooks/gwa?q=" + url.QueryEscape("ORD-765432") + "&status=aprobado"},
		{"panel", "/app"},
	}
	// Sanity: each page shows what it should before it is timed.
	_, doc := br.get(cases[1].path)
	require.Equal(b, "99951", doc.Find("[data-range-from]").AttrOr("data-range-from", ""))
	require.Equal(b, fmt.Sprint(rows), doc.Find("[data-total]").AttrOr("data-total", ""))
	_, doc = br.get(cases[2].path)
	require.Equal(b, "999951", doc.Find("[data-range-from]").AttrOr("data-range-from", ""))
	require.Equal(b, "50", doc.Find("tr[data-id]").First().AttrOr("data-id", ""), "the last page holds the 50 oldest")
	_, doc = br.get(cases[3].path)
	require.Equal(b, 1, doc.Find("tr[data-id]").Length())
	_, doc = br.get("/app")
	received, err := strconv.Atoi(doc.Find(`[data-figure="received"] .tile-value`).Text())
	require.NoError(b, err)
	require.Greater(b, received, 23*3600, "the Panel counts the last 24 h (one notification a second)")

	b.ResetTimer()
	baseline, _ := latencies(b, 1, runs, func(int) error {
		var out []map[string]any
		return bb.env.DB.NewSelect().TableExpr("gwa_webhooks").OrderExpr("id DESC").Limit(50).Scan(ctx, &out)
	})
	base95 := percentile(baseline, 0.95)
	b.ReportMetric(ms(base95), "baseline_p95_ms")
	for _, tc := range cases {
		d, _ := latencies(b, 1, runs, get(tc.path))
		p95 := percentile(d, 0.95)
		b.ReportMetric(ms(p95), tc.name+"_p95_ms")
		b.ReportMetric(float64(p95)/float64(base95), tc.name+"_ratio")
	}
}

// load1M fills gwa_webhooks with n notifications the way a bulk restore would:
// secondary indexes and the count trigger are set aside during the load and
// rebuilt after, from their own definitions.
func load1M(tb testing.TB, pool *pgxpool.Pool, n int) {
	tb.Helper()
	ctx := context.Background()
	// One connection: SET applies to the statements after it.
	conn, err := pool.Acquire(ctx)
	require.NoError(tb, err)
	defer conn.Release()
	exec := func(sql string, args ...any) {
		tb.Helper()
		_, err := conn.Exec(ctx, sql, args...)
		require.NoError(tb, err, sql)
	}
	var names, defs []string
	rows, err := conn.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'gwa_webhooks' AND indexname <> 'gwa_webhooks_pkey'`)
	require.NoError(tb, err)
	for rows.Next() {
		var name, def string
		require.NoError(tb, rows.Scan(&name, &def))
		names, defs = append(names, name), append(defs, def)
	}
	require.NoError(tb, rows.Err())
	for _, name := range names {
		exec("DROP INDEX " + name)
	}
	exec(`ALTER TABLE gwa_webhooks DISABLE TRIGGER gwa_webhooks_count`)
	exec(`
		INSERT INTO gwa_webhooks (notification_id, event, status, payment_id, reference, payer_email, amount,
			currency, gateway_status, event_created_at, environment, verified, ip, payload, received_at)
		SELECT 'evt_' || i, e.event, e.status, 'pay_' || substr(md5(i::text), 1, 12), 'ORD-' || i,
			'payer' || (i % 50000) || '@example.com', (1000 + i % 90000)::numeric, 'CLP', 'APPROVED',
			now() - ($1 - i) * interval '1 second', 'production', true, '203.0.113.7',
			'{"id":"evt_' || i || '","event":"' || e.event || '","data":{"reference":"ORD-' || i || '","amount":"15990.00"}}',
			now() - ($1 - i) * interval '1 second'
		FROM generate_series(1, $1::int) AS i
		CROSS JOIN LATERAL (SELECT CASE WHEN i % 1000 = 0 THEN 'REFUND_CREATED'
		                                WHEN i % 10 < 7 THEN 'SALE_APPROVED' WHEN i % 10 = 7 THEN 'SALE_REJECTED'
		                                WHEN i % 10 = 8 THEN 'SALE_REVERSED' ELSE 'CHARGEBACK' END AS event) ev
		CROSS JOIN LATERAL (SELECT ev.event, CASE ev.event WHEN 'SALE_APPROVED' THEN 'aprobado' WHEN 'SALE_REJECTED' THEN 'rechazado'
		                                WHEN 'SALE_REVERSED' THEN 'reversado' WHEN 'CHARGEBACK' THEN 'contracargo'
		                                ELSE 'desconocido' END AS status) e`, n)
	exec(`ALTER TABLE gwa_webhooks ENABLE TRIGGER gwa_webhooks_count`)
	exec(`INSERT INTO gwa_webhook_processed (webhook_id, processed_at) SELECT id, received_at FROM gwa_webhooks`)
	exec(`INSERT INTO gwa_webhook_counts (bucket, event, status, slot, n)
		SELECT id / 10000, event, status, 0, count(*) FROM gwa_webhooks GROUP BY 1, 2, 3`)
	exec(`INSERT INTO gwa_webhook_hourly (hour, status, currency, slot, n, amount)
		SELECT date_trunc('hour', received_at, 'UTC'), status, currency, 0, count(*), COALESCE(sum(amount), 0)
		FROM gwa_webhooks GROUP BY 1, 2, 3`)
	exec(`SET maintenance_work_mem = '512MB'`)
	for _, def := range defs {
		exec(def)
	}
	exec(`VACUUM ANALYZE gwa_webhooks`)
}

// postSigned posts a delivery and expects 200.
func postSigned(client *fasthttp.Client, base string, body []byte, sig string) error {
	status, reply, err := postRaw(client, base, body, sig)
	if err == nil && status != 200 {
		err = fmt.Errorf("status %d: %s", status, reply)
	}
	return err
}

// postRaw posts a delivery over a real connection; sig "" sends no signature.
func postRaw(client *fasthttp.Client, base string, body []byte, sig string) (int, []byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(base + "/webhooks/gwa")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	if sig != "" {
		req.Header.Set("X-Signature", sig)
	}
	req.SetBodyRaw(body)
	if err := client.Do(req, resp); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

// BenchmarkPages measures the server time of every page of the console on the
// seeded database, as an admin sees it. Baseline: /healthz through the same
// stack (routing, middleware, logging), in the same run. Target: p95 ≤ 30 ms.
func BenchmarkPages(b *testing.B) {
	const runs = 200
	bb := setupWith(b, options{})
	br := bb.browser(b)
	br.login(adminEmail)
	pages := []string{"/app", "/modules", "/app/pasarelas", "/app/webhooks/gwa", "/app/pagos/intentos",
		"/app/api-tokens", "/app/perfil"}
	for _, p := range pages {
		resp, _ := br.get(p)
		require.Equal(b, 200, resp.StatusCode, p)
	}
	b.ResetTimer()
	baseline, _ := latencies(b, 1, runs, func(int) error {
		resp, _ := br.get("/healthz")
		if resp.StatusCode != 200 {
			return fmt.Errorf("healthz: %d", resp.StatusCode)
		}
		return nil
	})
	base95 := percentile(baseline, 0.95)
	b.ReportMetric(ms(base95), "healthz_p95_ms")
	worst := time.Duration(0)
	for _, p := range pages {
		d, _ := latencies(b, 1, runs, func(int) error {
			resp, _ := br.get(p)
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s: status %d", p, resp.StatusCode)
			}
			return nil
		})
		p95 := percentile(d, 0.95)
		worst = max(worst, p95)
		b.ReportMetric(ms(p95), strings.TrimPrefix(strings.ReplaceAll(p, "/", "_"), "_")+"_p95_ms")
	}
	b.ReportMetric(ms(worst), "worst_p95_ms")
	b.ReportMetric(float64(worst)/float64(base95), "worst_ratio")
}
