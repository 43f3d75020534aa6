package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// seedBoard puts n tasks on the board, spread over the four columns, half of
// them assigned, some overdue, and returns their ids.
func seedBoard(tb testing.TB, bb *bundle, n int) []int64 {
	tb.Helper()
	var ids []int64
	err := bb.env.DB.NewRaw(`
		INSERT INTO tareas (titulo, descripcion, prioridad, estado, posicion, asignado_id, fecha_limite, creado_por)
		SELECT 'Revisar la conciliación del lote ' || g, 'Detalle de la tarea ' || g,
		       (ARRAY['baja','media','alta','urgente'])[1 + g % 4],
		       (ARRAY['por_hacer','en_progreso','revisión','hecho'])[1 + (g / 7) % 4],
		       g * 1024,
		       CASE WHEN g % 2 = 0 THEN (SELECT id FROM users WHERE email = ?) END,
		       current_date + (g % 30 - 10),
		       (SELECT id FROM users WHERE email = ?)
		FROM generate_series(1, ?) AS g
		RETURNING id`, adminEmail, adminEmail, n).Scan(context.Background(), &ids)
	require.NoError(tb, err)
	return ids
}

// BenchmarkTaskBoard measures the server time of the full board page with
// 2,000 tasks (query, grouping, template) beside its raw query over pgx.
func BenchmarkTaskBoard(b *testing.B) {
	const tasks, runs = 2000, 200
	bb := setupWith(b, options{worker: true})
	seedBoard(b, bb, tasks)
	br := bb.browser(b)
	br.login(adminEmail)
	resp, doc := br.get("/app/tareas")
	require.Equal(b, 200, resp.StatusCode)
	require.Equal(b, tasks, doc.Find("li.task-card").Length(), "the board shows every task")
	ctx := context.Background()
	const raw = `SELECT t.*, COALESCE(u.email, '') AS asignado_email
		FROM tareas AS t LEFT JOIN users AS u ON u.id = t.asignado_id ORDER BY t.posicion, t.id`

	b.ResetTimer()
	baseline, _ := latencies(b, 1, runs, func(int) error {
		rows, err := bb.env.Pool.Query(ctx, raw)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			if _, err := rows.Values(); err != nil {
				return err
			}
			n++
		}
		if n != tasks {
			return fmt.Errorf("raw query: %d rows", n)
		}
		return rows.Err()
	})
	board, _ := latencies(b, 1, runs, func(int) error {
		// The body is read, not parsed: the server's time, not the client's.
		resp := br.do(newGet("/app/tareas"))
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("board: %d", resp.StatusCode)
		}
		return nil
	})
	b.ReportMetric(ms(percentile(baseline, 0.95)), "raw_query_p95_ms")
	b.ReportMetric(ms(percentile(board, 0.95)), "board_p95_ms")
	b.ReportMetric(float64(percentile(board, 0.95))/float64(percentile(baseline, 0.95)), "board_to_query")
}

// BenchmarkTaskMoves: 16 movers drag cards at once over loopback (the JSON
// form of PUT /tarea/:id/estado, as curl or a script uses it), 2,000 tasks on
// the board, the worker running, commits durable. Each mover moves its own cards, so no move
// is refused. Baseline: the same number of single-row UPDATEs over pgx,
// prepared, at the same concurrency.
func BenchmarkTaskMoves(b *testing.B) {
	const tasks, movers, moves = 2000, 16, 4000
	bb := setupWith(b, options{worker: true, durable: true})
	ids := seedBoard(b, bb, tasks)
	base := serve(b, bb)
	br := bb.browser(b)
	br.login(adminEmail)
	br.get("/app/tareas")
	var cookie strings.Builder
	for k, v := range br.cookies {
		fmt.Fprintf(&cookie, "%s=%s; ", k, v)
	}
	states := []string{"por_hacer", "en_progreso", "revisión", "hecho"}
	ctx := context.Background()

	b.ResetTimer()
	baseline, _ := latencies(b, movers, moves, func(i int) error {
		_, err := bb.env.Pool.Exec(ctx, "UPDATE tareas SET estado = $1, posicion = $2, version = version + 1, updated_at = now() WHERE id = $3",
			states[i%4], -int64(i+1)*1024, ids[i%len(ids)]) // places no card has
		return err
	})
	// Versions as the movers know them; mover w owns the tasks i ≡ w (mod 16).
	var current []struct {
		ID      int64
		Version int
	}
	require.NoError(b, bb.env.DB.NewRaw("SELECT id, version FROM tareas").Scan(ctx, &current))
	versions := map[int64]int{}
	for _, c := range current {
		versions[c.ID] = c.Version
	}
	var mu sync.Mutex
	client := &fasthttp.Client{MaxConnsPerHost: movers}
	own := make([][]int64, movers)
	for i, id := range ids {
		own[i%movers] = append(own[i%movers], id)
	}
	var next [movers]int
	var nextMu sync.Mutex
	moved, _ := latencies(b, movers, moves, func(i int) error {
		nextMu.Lock()
		w := i % movers
		id := own[w][next[w]%len(own[w])]
		next[w]++
		nextMu.Unlock()
		mu.Lock()
		version := versions[id]
		mu.Unlock()
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(fmt.Sprintf("%s/tarea/%d/estado", base, id))
		req.Header.SetMethod(http.MethodPut)
		req.Header.Set("Cookie", cookie.String())
		req.Header.Set("X-CSRF-Token", br.csrf)
		req.Header.Set("Accept", "application/json")
		req.Header.SetContentType("application/json")
		req.SetBodyString(fmt.Sprintf(`{"estado": %q, "despues_de": 0, "version": %d}`, states[rand.IntN(4)], version))
		if err := client.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != 200 {
			return fmt.Errorf("move %d: %d %s", id, resp.StatusCode(), resp.Body())
		}
		var got struct{ Version int }
		if err := json.Unmarshal(resp.Body(), &got); err != nil {
			return err
		}
		mu.Lock()
		versions[id] = got.Version
		mu.Unlock()
		return nil
	})
	b.ReportMetric(ms(percentile(baseline, 0.99)), "update_p99_ms")
	b.ReportMetric(ms(percentile(moved, 0.99)), "move_p99_ms")
	b.ReportMetric(ms(percentile(moved, 0.50)), "move_p50_ms")
	b.ReportMetric(float64(percentile(moved, 0.99))/float64(percentile(baseline, 0.99)), "move_to_update_p99")
}

// BenchmarkLiveUpdates: 200 open pages (event streams over loopback) and 20
// moves, one after the other; for each move, the time from sending it to each
// page hearing of it. Baseline: the move's own round trip.
func BenchmarkLiveUpdates(b *testing.B) {
	const pages, rounds = 200, 20
	bb := setupWith(b, options{worker: true})
	ids := seedBoard(b, bb, 200)
	base := serve(b, bb)
	br := bb.browser(b)
	br.login(adminEmail)
	mark := liveMark(b, br)

	arrivals := make(chan time.Time, pages*rounds)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: pages}
	var connected sync.WaitGroup
	for range pages {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/app/eventos?desde="+mark, nil)
		require.NoError(b, err)
		for k, v := range br.cookies {
			req.AddCookie(&http.Cookie{Name: k, Value: v})
		}
		resp, err := transport.RoundTrip(req)
		require.NoError(b, err)
		require.Equal(b, 200, resp.StatusCode)
		connected.Add(1)
		go func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			first := true
			for sc.Scan() {
				if first && strings.HasPrefix(sc.Text(), "retry:") {
					connected.Done()
					first = false
				}
				if sc.Text() == "event: tablero" {
					arrivals <- time.Now()
				}
			}
		}()
	}
	connected.Wait()

	b.ResetTimer()
	var delays, roundTrips []time.Duration
	for r := range rounds {
		id := ids[r]
		start := time.Now()
		resp, _ := br.put(fmt.Sprintf("/tarea/%d/estado", id), map[string][]string{"estado": {"hecho"}, "version": {"1"}},
			"Accept", "application/json")
		require.Equal(b, 200, resp.StatusCode)
		roundTrips = append(roundTrips, time.Since(start))
		for range pages {
			select {
			case at := <-arrivals:
				delays = append(delays, at.Sub(start))
			case <-time.After(10 * time.Second):
				b.Fatalf("round %d: %d pages heard of the move", r, len(delays)-r*pages)
			}
		}
	}
	b.ReportMetric(ms(percentile(roundTrips, 0.99)), "move_p99_ms")
	b.ReportMetric(ms(percentile(delays, 0.50)), "heard_p50_ms")
	b.ReportMetric(ms(percentile(delays, 0.99)), "heard_p99_ms")
}
