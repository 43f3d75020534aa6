package db_test

import (
	"context"
	"testing"
	"time"
	_ "time/tzdata" // America/Santiago without the machine's zoneinfo

	"github.com/stretchr/testify/require"

	"pasarela/db"
	"pasarela/db/dbtest"
)

func TestPurgeMetricsRemovesExactlyTheRowsOlderThanSevenDays(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	var id int64
	require.NoError(t, env.DB.NewRaw(`INSERT INTO servidores (nombre, host, token_hash, token_prefix)
		VALUES ('web-1', 'web-1', '\x01', 'pag_x') RETURNING id`).Scan(ctx, &id))
	now := time.Now().Truncate(time.Microsecond) // PostgreSQL's precision
	// Partitions for eleven days back, as the app makes them, then one row
	// every ten minutes for ten days.
	require.NoError(t, s.EnsurePartitions(ctx, env.DB, now.AddDate(0, 0, -11), now.AddDate(0, 0, 1)))
	_, err := env.DB.ExecContext(ctx, `INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
		SELECT ?, ?::timestamptz - make_interval(mins => 10 * m), 1, 2, 3, 4, 5, 6 FROM generate_series(0, 1439) AS m`, id, now)
	require.NoError(t, err)
	cutoff := db.RetentionCutoff(now)
	var keep int
	require.NoError(t, env.DB.NewRaw(`SELECT count(*) FROM servidor_metricas_history WHERE created_at >= ?`, cutoff).Scan(ctx, &keep))

	dropped, _, err := s.PurgeMetrics(ctx, env.DB, now)
	require.NoError(t, err)
	require.GreaterOrEqual(t, dropped, 2, "whole old days are dropped, not deleted row by row")
	var left int
	var oldest time.Time
	require.NoError(t, env.DB.NewRaw(`SELECT count(*), min(created_at) FROM servidor_metricas_history`).Scan(ctx, &left, &oldest))
	require.Equal(t, keep, left, "every row of the last seven days is kept")
	require.False(t, oldest.Before(cutoff), "and none older")

	// Run again: nothing more to do.
	dropped, deleted, err := s.PurgeMetrics(ctx, env.DB, now)
	require.NoError(t, err)
	require.Zero(t, dropped)
	require.Zero(t, deleted)
}

// Partitions run from one 03:00 of the process's zone to the next, so the
// purge, at 03:00, drops whole days and deletes next to nothing. Not
// parallel: it sets the process's zone.
func TestPartitionsStartAtThePurgeHourAndThePurgeThenDropsWholeDays(t *testing.T) {
	santiago, err := time.LoadLocation("America/Santiago")
	require.NoError(t, err)
	local := time.Local
	time.Local = santiago
	t.Cleanup(func() { time.Local = local })
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	at := func(v string) time.Time {
		x, err := time.ParseInLocation("2006-01-02 15:04:05", v, santiago)
		require.NoError(t, err)
		return x
	}
	// A day on UTC bounds, as the first migrations made them, in the way.
	_, err = env.DB.ExecContext(ctx, `SELECT particion_diaria('servidor_metricas_history', '2026-04-10')`)
	require.NoError(t, err)
	// Clocks go back an hour on 5 April 2026 in Santiago.
	require.NoError(t, s.EnsurePartitions(ctx, env.DB, at("2026-04-01 12:00:00"), at("2026-04-13 00:00:00")))
	var bounds []struct {
		Lo, Hi time.Time
	}
	require.NoError(t, env.DB.NewRaw(`SELECT b[1]::timestamptz AS lo, b[2]::timestamptz AS hi FROM (
			SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)') AS b
			FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'servidor_metricas_history'::regclass) p
		WHERE b[1]::timestamptz < '2026-05-01' ORDER BY 1`).Scan(ctx, &bounds))
	require.True(t, bounds[0].Lo.Equal(at("2026-04-01 03:00:00")), "%s", bounds[0].Lo.In(santiago))
	for i, b := range bounds {
		if i > 0 {
			require.True(t, b.Lo.Equal(bounds[i-1].Hi), "no gap, no overlap at %s", b.Lo.In(santiago))
		}
		lo, hi := b.Lo.In(santiago), b.Hi.In(santiago)
		utcDay := b.Lo.Equal(time.Date(2026, 4, 10, 0, 0, 0, 0, time.UTC)) || b.Hi.Equal(time.Date(2026, 4, 10, 0, 0, 0, 0, time.UTC)) ||
			b.Lo.Equal(time.Date(2026, 4, 11, 0, 0, 0, 0, time.UTC))
		if !utcDay {
			require.Equal(t, [2]int{3, 3}, [2]int{lo.Hour(), hi.Hour()}, "from 03:00 to 03:00: %s – %s", lo, hi)
		}
		if lo.Day() == 4 {
			require.Equal(t, 25*time.Hour, b.Hi.Sub(b.Lo), "the night the clocks go back")
		}
	}
	require.True(t, bounds[len(bounds)-1].Hi.After(at("2026-04-13 00:00:00")))

	// A heartbeat every minute, then the purge as scheduled: 03:00 and a few seconds.
	var id int64
	require.NoError(t, env.DB.NewRaw(`INSERT INTO servidores (nombre, host, token_hash, token_prefix)
		VALUES ('web-1', 'web-1', '\x02', 'pag_y') RETURNING id`).Scan(ctx, &id))
	_, err = env.DB.ExecContext(ctx, `INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
		SELECT ?, ?::timestamptz + make_interval(mins => m), 1, 2, 3, 4, 5, 6 FROM generate_series(0, 60 * 24 * 11) AS m`, id, at("2026-04-01 12:00:00"))
	require.NoError(t, err)
	now := at("2026-04-12 03:00:05")
	dropped, deleted, err := s.PurgeMetrics(ctx, env.DB, now)
	require.NoError(t, err)
	require.GreaterOrEqual(t, dropped, 3)
	require.LessOrEqual(t, deleted, int64(1), "seconds of rows, not hours")
	var oldest time.Time
	require.NoError(t, env.DB.NewRaw(`SELECT min(created_at) FROM servidor_metricas_history WHERE servidor_id = ?`, id).Scan(ctx, &oldest))
	require.True(t, oldest.Equal(at("2026-04-05 03:01:00")), "seven calendar days kept, across the change of clocks: %s", oldest.In(santiago))
}

func TestPurgeMonitorLogRemovesExactlyTheChecksOlderThanSevenDays(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	var id int64
	require.NoError(t, env.DB.NewRaw(`INSERT INTO url_monitores (nombre, url) VALUES ('tienda', 'https://tienda.example.cl') RETURNING id`).Scan(ctx, &id))
	now := time.Now().Truncate(time.Microsecond)
	// Ten days of checks, one an hour, and their hourly figures.
	_, err := env.DB.ExecContext(ctx, `SELECT particion_diaria('url_monitor_log', (now() AT TIME ZONE 'UTC')::date - d) FROM generate_series(0, 11) AS d`)
	require.NoError(t, err)
	_, err = env.DB.ExecContext(ctx, `INSERT INTO url_monitor_log (monitor_id, created_at, metodo, status, latencia_ms, ok)
		SELECT ?, ?::timestamptz - make_interval(hours => h), 'HEAD', 200, 12, true FROM generate_series(0, 239) AS h`, id, now)
	require.NoError(t, err)
	_, err = env.DB.ExecContext(ctx, `INSERT INTO url_monitor_horas (monitor_id, hora, checks, ok, latencia_sum)
		SELECT ?, date_trunc('hour', ?::timestamptz) - make_interval(hours => h), 60, 60, 720 FROM generate_series(0, 239) AS h`, id, now)
	require.NoError(t, err)
	cutoff := db.RetentionCutoff(now)
	var keepLog, keepHours int
	require.NoError(t, env.DB.NewRaw(`SELECT count(*) FROM url_monitor_log WHERE created_at >= ?`, cutoff).Scan(ctx, &keepLog))
	require.NoError(t, env.DB.NewRaw(`SELECT count(*) FROM url_monitor_horas WHERE hora >= ?`, cutoff.Truncate(time.Hour)).Scan(ctx, &keepHours))

	dropped, deleted, err := s.PurgeMonitorLog(ctx, env.DB, now)
	require.NoError(t, err)
	require.GreaterOrEqual(t, dropped, 2, "whole old days are dropped")
	require.Positive(t, deleted)
	var leftLog, leftHours int
	var oldest time.Time
	require.NoError(t, env.DB.NewRaw(`SELECT count(*), min(created_at) FROM url_monitor_log`).Scan(ctx, &leftLog, &oldest))
	require.NoError(t, env.DB.NewRaw(`SELECT count(*) FROM url_monitor_horas`).Scan(ctx, &leftHours))
	require.Equal(t, keepLog, leftLog, "every check of the last seven days is kept")
	require.False(t, oldest.Before(cutoff), "and none older")
	require.Equal(t, keepHours, leftHours, "the hourly figures keep the same seven days")

	dropped, deleted, err = s.PurgeMonitorLog(ctx, env.DB, now)
	require.NoError(t, err)
	require.Zero(t, dropped)
	require.Zero(t, deleted)
}
