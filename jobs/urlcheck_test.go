package jobs_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"pasarela/db"
	"pasarela/jobs"
)

func TestACheckTellsUpFromDownTheWayAPersonWould(t *testing.T) {
	t.Parallel()
	var gets atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
	})
	mux.HandleFunc("/no-head", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusMovedPermanently) })
	target := httptest.NewServer(mux)
	t.Cleanup(target.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + closed.Addr().String() + "/"
	closed.Close()

	c := jobs.NewChecker()
	for _, tc := range []struct {
		name, url, method, errorHas string
		ok                          bool
		status                      int
	}{
		{"200 is up", target.URL + "/ok", "HEAD", "", true, 200},
		{"HEAD 405, then GET 200, is up", target.URL + "/no-head", "GET", "", true, 200},
		{"a redirect to a page that answers is up", target.URL + "/moved", "HEAD", "", true, 200},
		{"500 is down", target.URL + "/error", "HEAD", "respondió 500", false, 500},
		{"no answer in time is down", target.URL + "/slow", "GET", "sin respuesta en 300ms", false, 0},
		{"a refused connection is down", refused, "GET", "conexión rechazada", false, 0},
		{"a redirect loop is down, and says so", target.URL + "/loop", "GET", "más de 5 redirecciones", false, 0},
		{"cloud metadata is refused", "http://169.254.169.254/latest/meta-data/", "GET", "link-local", false, 0},
		{"also through a redirect", target.URL + "/to-metadata", "GET", "link-local", false, 0},
		{"and over IPv6", "http://[fe80::1]/", "GET", "link-local", false, 0},
	} {
		r := c.Check(context.Background(), tc.url, 300*time.Millisecond)
		require.Equal(t, tc.ok, r.OK, tc.name+": %+v", r)
		require.Equal(t, tc.method, r.Method, tc.name)
		require.Equal(t, tc.status, r.Status, tc.name)
		if tc.errorHas != "" {
			require.Contains(t, r.Error, tc.errorHas, tc.name)
		}
	}
	require.Equal(t, int32(0), gets.Load(), "a HEAD that answered 200 is not followed by a GET")
}

func addMonitor(t *testing.T, n *notifyEnv, url string, activo bool) int64 {
	t.Helper()
	var id int64
	require.NoError(t, n.env.DB.NewRaw(`INSERT INTO url_monitores (nombre, url, activo) VALUES (?, ?, ?) RETURNING id`,
		"monitor "+url, url, activo).Scan(context.Background(), &id))
	return id
}

func TestTheThresholdAlertsOnceAChangeIsReal(t *testing.T) {
	t.Parallel()
	n := setupNotify(t, 0)
	ctx := context.Background()
	id := addMonitor(t, n, "https://tienda.example.cl/", true)
	record := func(ok bool) {
		t.Helper()
		r := db.CheckResult{At: time.Now(), Method: "HEAD", Status: 200, LatencyMS: 12, OK: ok}
		if !ok {
			r.Status, r.Error = 503, "respondió 503"
		}
		require.NoError(t, jobs.RecordCheck(ctx, n.env.DB, n.env.Pool, n.store, id, r, n.queue.InsertManyPgxTx))
	}
	alerts := func() int {
		var c int
		require.NoError(t, n.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE kind = 'notificacion'
			AND args->>'evento' = 'url_monitor_estado' AND args->>'canal' = 'chat'`).Scan(ctx, &c))
		return c
	}
	record(true)
	require.Equal(t, 0, alerts(), "a first check that is up is no news")
	record(false)
	record(true)
	require.Equal(t, 0, alerts(), "one failure, then a success: a blip, nothing sent")
	record(false)
	record(false)
	require.Equal(t, 1, alerts(), "two failures in a row: down, one alert")
	record(false)
	require.Equal(t, 1, alerts(), "still down: nothing more")
	record(true)
	require.Equal(t, 2, alerts(), "up again after one success")
	var logs int
	require.NoError(t, n.env.DB.NewRaw(`SELECT count(*) FROM url_monitor_log WHERE monitor_id = ?`, id).Scan(ctx, &logs))
	require.Equal(t, 7, logs, "every check is in the log")
}

func TestEachActiveMonitorIsCheckedOnceAMinuteWithTwoWorkers(t *testing.T) {
	t.Parallel()
	n := setupNotify(t, 0)
	ctx := context.Background()
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(target.Close)
	for i := 0; i < 5; i++ {
		addMonitor(t, n, target.URL+"/"+strings.Repeat("x", i), true)
	}
	addMonitor(t, n, target.URL+"/pausado", false)
	// A second worker beside setupNotify's: both work the rounds and the checks.
	workers, _ := jobs.Register(jobs.Deps{DB: n.env.DB, Pool: n.env.Pool, Store: n.store})
	startWorker(t, n.env, "w-second", workers, nil)

	minute := time.Now().UTC().Truncate(time.Minute)
	for i := 0; i < 2; i++ { // the round of one minute, twice (two leaders, a retry)
		require.NoError(t, pgx.BeginFunc(ctx, n.env.Pool, func(tx pgx.Tx) error {
			_, err := n.queue.InsertPgxTx(ctx, tx, jobs.MonitorRoundArgs{}, &river.InsertOpts{ScheduledAt: minute.Add(time.Duration(i) * time.Second)})
			return err
		}))
	}
	require.Eventually(t, func() bool {
		var open int
		err := n.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(ctx, &open)
		return err == nil && open == 0
	}, 20*time.Second, 50*time.Millisecond)
	var perMonitor []int
	require.NoError(t, n.env.DB.NewRaw(`SELECT count(l.monitor_id) FROM url_monitores m
		LEFT JOIN url_monitor_log l ON l.monitor_id = m.id GROUP BY m.id, m.activo ORDER BY m.activo DESC, m.id`).Scan(ctx, &perMonitor))
	require.Equal(t, []int{1, 1, 1, 1, 1, 0}, perMonitor, "each active monitor once; the paused one never")
}

func TestTheCheckerRefusesEveryWayToCloudMetadata(t *testing.T) {
	t.Parallel()
	c := jobs.NewChecker()
	for _, target := range []string{
		"http://[fe80::1%25eth0]/", // with a zone
		"http://[::ffff:169.254.169.254]/",
		"http://[fd00:ec2::254]/",
		"http://100.100.100.200/",
	} {
		r := c.Check(context.Background(), target, 500*time.Millisecond)
		require.False(t, r.OK, target)
		require.Contains(t, r.Error, "link-local", target)
	}
}
