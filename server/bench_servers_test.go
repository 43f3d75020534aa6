package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/valyala/fasthttp"

	"pasarela/db"
	"pasarela/jobs"
)

// BenchmarkHeartbeatIngest: 32 agents send heartbeats over loopback to the
// console as deployed (the worker running beside the web, commits durable).
// Baseline: single-row INSERTs of the same row into a table of the same shape,
// prepared, over pgx, 32 at a time.
func BenchmarkHeartbeatIngest(b *testing.B) {
	const clients, servers, total, rounds = 32, 200, 20000, 2
	bb := setupWith(b, options{durable: true, worker: true, poolConns: 25})
	base := serve(b, bb)
	ctx := context.Background()
	tokens := make([]string, servers)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("pag_bench_%d", i)
		_, err := bb.env.DB.ExecContext(ctx, `INSERT INTO servidores (nombre, host, token_hash, token_prefix, estado)
			VALUES (?, 'h', sha256(convert_to(?, 'UTF8')), 'pag_b', 'online')`, fmt.Sprintf("srv-%d", i), tokens[i])
		require.NoError(b, err)
	}
	_, err := bb.env.DB.ExecContext(ctx, `CREATE TABLE bench_beats (LIKE servidor_metricas_history INCLUDING DEFAULTS)`)
	require.NoError(b, err)
	plainPool, err := db.OpenPool(ctx, bb.env.URL, clients)
	require.NoError(b, err)
	defer plainPool.Close()
	client := &fasthttp.Client{MaxConnsPerHost: clients}
	body := []byte(`{"cpu": 12.5, "ram": 40.1, "swap": 0, "disk": 71.3, "tcp": 230, "load1": 0.42}`)

	insertPlain := func(i int) error {
		_, err := plainPool.Exec(ctx, `INSERT INTO bench_beats (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
			VALUES ($1, now(), $2, $3, $4, $5, $6, $7)`, i%servers+1, 12.5, 40.1, 0.0, 71.3, 230, 0.42)
		return err
	}
	send := func(i int) error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(base + "/api/agente/heartbeat")
		req.Header.SetMethod(http.MethodPost)
		req.Header.Set("Authorization", "Bearer "+tokens[i%servers])
		req.Header.SetContentType("application/json")
		req.SetBody(body)
		if err := client.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != http.StatusNoContent {
			return fmt.Errorf("heartbeat: %d %s", resp.StatusCode(), resp.Body())
		}
		return nil
	}

	// Rounds interleaved, so that drift on the machine hits both alike.
	b.ResetTimer()
	var plain, beats []time.Duration
	var plainWall, beatWall time.Duration
	for range rounds {
		p, pw := latencies(b, clients, total, insertPlain)
		h, hw := latencies(b, clients, total, send)
		plain, plainWall, beats, beatWall = append(plain, p...), plainWall+pw, append(beats, h...), beatWall+hw
	}
	b.StopTimer()
	require.Equal(b, total*rounds, countRows(b, bb, "servidor_metricas_history", ""))
	beatRate, plainRate := float64(total*rounds)/beatWall.Seconds(), float64(total*rounds)/plainWall.Seconds()
	b.ReportMetric(beatRate, "heartbeat/s")
	b.ReportMetric(ms(percentile(beats, 0.99)), "heartbeat_p99_ms")
	b.ReportMetric(plainRate, "plain_insert/s")
	b.ReportMetric(ms(percentile(plain, 0.99)), "plain_p99_ms")
	b.ReportMetric(beatRate/plainRate, "ratio")
}

// BenchmarkMetricsHistory: the 168-hour history of one server, with seven
// days of 30-second heartbeats for many servers in the table; and the purge
// of one day for all of them while heartbeats keep arriving. The scale is
// PASARELA_BENCH_SERVERS servers (default 50: 1 M rows; the full
// scale is 1000, ~20 M rows). Baseline: the same rows of that server read raw.
func BenchmarkMetricsHistory(b *testing.B) {
	servers := 50
	if v, err := strconv.Atoi(os.Getenv("PASARELA_BENCH_SERVERS")); err == nil && v > 0 {
		servers = v
	}
	const runs = 100
	bb := setupWith(b, options{durable: true})
	br := bb.browser(b)
	br.login(adminEmail)
	ctx := context.Background()
	// Partitions as the app makes them (from one 03:00 of the process's zone to the next).
	require.NoError(b, bb.store.EnsurePartitions(ctx, bb.env.DB, time.Now().AddDate(0, 0, -10), time.Now().AddDate(0, 0, 1)))
	_, err := bb.env.DB.ExecContext(ctx, `INSERT INTO servidores (nombre, host, token_hash, token_prefix, estado)
		SELECT 'srv-' || s, 'h', sha256(convert_to('pag_hist_' || s, 'UTF8')), 'pag_h', 'online' FROM generate_series(1, ?) AS s`, servers)
	require.NoError(b, err)
	// Nine days, so that one whole partition's day is old enough to purge.
	// In time order, servers interleaved, as heartbeats arrive (pgx: at full
	// scale the statement outlasts bun's read timeout).
	_, err = bb.env.Pool.Exec(ctx, `INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
		SELECT s.id, now() - make_interval(secs => 30 * i), random() * 100, random() * 100, 0, 70, 100, 1
		FROM generate_series(9 * 2880 - 1, 0, -1) AS i, servidores s`)
	require.NoError(b, err)
	// As autovacuum leaves it: the visibility map set, so index-only scans stay in the index.
	_, err = bb.env.Pool.Exec(ctx, `VACUUM ANALYZE servidor_metricas_history`)
	require.NoError(b, err)
	var id int64
	require.NoError(b, bb.env.DB.NewRaw(`SELECT id FROM servidores ORDER BY id OFFSET ? LIMIT 1`, servers/2).Scan(ctx, &id))
	path := fmt.Sprintf("/app/servidor/%d/metricas-history?horas=168", id)

	b.ResetTimer()
	raw, _ := latencies(b, 1, runs, func(int) error {
		rows, err := bb.env.Pool.Query(ctx, `SELECT created_at, cpu, ram, swap, disk, tcp, load1 FROM servidor_metricas_history
			WHERE servidor_id = $1 AND created_at >= now() - interval '168 hours' ORDER BY created_at`, id)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	})
	history, _ := latencies(b, 1, runs, func(int) error {
		resp := br.do(withCookies(br, path))
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("history: %d", resp.StatusCode)
		}
		return nil
	})
	b.ReportMetric(float64(countRows(b, bb, "servidor_metricas_history", "")), "rows")
	b.ReportMetric(ms(percentile(raw, 0.95)), "raw_rows_p95_ms")
	b.ReportMetric(ms(percentile(history, 0.95)), "history_p95_ms")

	// The purge of the oldest day, with 32 agents beating meanwhile.
	base := serve(b, bb)
	client := &fasthttp.Client{MaxConnsPerHost: 32}
	body := []byte(`{"cpu": 12.5, "ram": 40.1, "swap": 0, "disk": 71.3, "tcp": 230, "load1": 0.42}`)
	var stop atomic.Bool
	done := make(chan []time.Duration, 1)
	go func() {
		var all []time.Duration
		for !stop.Load() {
			d, _ := latencies(b, 32, 320, func(i int) error {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI(base + "/api/agente/heartbeat")
				req.Header.SetMethod(http.MethodPost)
				req.Header.Set("Authorization", "Bearer pag_hist_"+strconv.Itoa(i%servers+1))
				req.Header.SetContentType("application/json")
				req.SetBody(body)
				if err := client.Do(req, resp); err != nil {
					return err
				}
				if resp.StatusCode() != http.StatusNoContent {
					return fmt.Errorf("heartbeat: %d", resp.StatusCode())
				}
				return nil
			})
			all = append(all, d...)
		}
		done <- all
	}()
	// The purge as scheduled: at 03:00 of the process's zone, a few seconds in.
	purgeAt := db.NextPartitionStart(time.Now()).AddDate(0, 0, -1).Add(5 * time.Second)
	var old int
	require.NoError(b, bb.env.DB.NewRaw(`SELECT count(*) FROM servidor_metricas_history WHERE created_at < ?`,
		db.RetentionCutoff(purgeAt)).Scan(ctx, &old))
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	dropped, deleted, err := bb.store.PurgeMetrics(ctx, bb.env.DB, purgeAt)
	purge := time.Since(start)
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	during := <-done
	require.NoError(b, err)
	require.Positive(b, dropped, "a whole day was old enough to drop")
	b.ReportMetric(float64(dropped), "days_dropped")
	b.ReportMetric(float64(old), "rows_purged")
	b.ReportMetric(float64(deleted), "rows_deleted")
	b.ReportMetric(ms(purge), "purge_ms")
	b.ReportMetric(ms(percentile(during, 0.99)), "heartbeat_p99_during_purge_ms")
}

// BenchmarkMonitorRound: 10,000 active monitors against local targets (10 %
// answering after 2 s, 5 % refusing the connection), one round as the worker
// runs it. Figures: how long after the round starts the last check is
// recorded, checks per monitor, and the process's peak RSS (web, worker and
// targets share it; the targets are a small part).
func BenchmarkMonitorRound(b *testing.B) {
	const monitors = 10000
	bb := setupWith(b, options{poolConns: 25})
	ctx := context.Background()
	target := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/lento") {
			time.Sleep(2 * time.Second)
		}
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = target.Serve(ln) }()
	defer target.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	refused := closed.Addr().String()
	closed.Close()
	_, err = bb.env.DB.ExecContext(ctx, `INSERT INTO url_monitores (nombre, url, timeout_s)
		SELECT 'm' || i, CASE WHEN i % 20 = 0 THEN 'http://' || ? || '/x' || i
		                      WHEN i % 10 = 1 THEN 'http://' || ? || '/lento/' || i
		                      ELSE 'http://' || ? || '/ok/' || i END, 10
		FROM generate_series(1, ?) AS i`, refused, ln.Addr().String(), ln.Addr().String(), monitors)
	require.NoError(b, err)

	workers, _ := jobs.Register(jobs.Deps{DB: bb.env.DB, Pool: bb.env.Pool, Store: bb.store})
	client, err := jobs.NewWorkerClient(bb.env.Pool, workers, nil, quietLogger(), jobs.WorkerOptions{})
	require.NoError(b, err)
	require.NoError(b, client.Start(ctx))
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()
	queue, err := jobs.NewQueue(bb.env.DB, bb.env.Pool, workers, quietLogger())
	require.NoError(b, err)

	b.ResetTimer()
	start := time.Now()
	require.NoError(b, bb.env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := queue.InsertTx(ctx, tx, jobs.MonitorRoundArgs{}, nil)
		return err
	}))
	var peakRSS int64
	for {
		n := countRows(b, bb, "url_monitor_log", "")
		peakRSS = max(peakRSS, rssBytes())
		if n >= monitors {
			break
		}
		if time.Since(start) > 3*time.Minute {
			b.Fatalf("after 3 minutes only %d of %d monitors were checked", n, monitors)
		}
		time.Sleep(200 * time.Millisecond)
	}
	round := time.Since(start)
	b.StopTimer()
	var dup int
	require.NoError(b, bb.env.DB.NewRaw(`SELECT count(*) FROM (SELECT monitor_id FROM url_monitor_log GROUP BY 1 HAVING count(*) > 1) d`).Scan(ctx, &dup))
	require.Zero(b, dup, "each monitor checked exactly once")
	var down int
	require.NoError(b, bb.env.DB.NewRaw(`SELECT count(*) FROM url_monitor_log WHERE NOT ok`).Scan(ctx, &down))
	b.ReportMetric(round.Seconds(), "round_s")
	b.ReportMetric(float64(down), "failed_checks")
	b.ReportMetric(float64(peakRSS)/(1<<20), "peak_rss_MB")

	// The list at 10,000 monitors, with their hourly figures.
	// (pgx: a statement of 1.7 M rows outlasts bun's read timeout.)
	_, err = bb.env.Pool.Exec(ctx, `INSERT INTO url_monitor_horas (monitor_id, hora, checks, ok, latencia_sum)
		SELECT m.id, date_trunc('hour', now()) - make_interval(hours => h), 60, 59, 6000
		FROM url_monitores m, generate_series(1, 167) AS h ON CONFLICT DO NOTHING`)
	require.NoError(b, err)
	_, err = bb.env.Pool.Exec(ctx, `VACUUM ANALYZE url_monitor_horas`)
	require.NoError(b, err)
	br := bb.browser(b)
	br.login(adminEmail)
	list, _ := latencies(b, 1, 100, func(i int) error {
		resp := br.do(withCookies(br, fmt.Sprintf("/app/url-monitor?page=%d", 1+i%200)))
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("list: %d", resp.StatusCode)
		}
		return nil
	})
	b.ReportMetric(ms(percentile(list, 0.95)), "list_p95_ms")
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// rssBytes is this process's resident set size (Linux).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
