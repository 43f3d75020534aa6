package db_test

import (
	"context"
	"testing"
	"time"

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
	// Partitions for ten days back, then one row an hour for ten days.
	_, err := env.DB.ExecContext(ctx, `SELECT servidor_metricas_particion((now() AT TIME ZONE 'UTC')::date - d) FROM generate_series(0, 11) AS d`)
	require.NoError(t, err)
	_, err = env.DB.ExecContext(ctx, `INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
		SELECT ?, ?::timestamptz - make_interval(hours => h), 1, 2, 3, 4, 5, 6 FROM generate_series(0, 239) AS h`, id, now)
	require.NoError(t, err)
	var keep int
	require.NoError(t, env.DB.NewRaw(`SELECT count(*) FROM servidor_metricas_history WHERE created_at >= ?`,
		now.Add(-db.MetricsRetention)).Scan(ctx, &keep))

	dropped, deleted, err := s.PurgeMetrics(ctx, env.DB, now)
	require.NoError(t, err)
	require.GreaterOrEqual(t, dropped, 2, "whole old days are dropped, not deleted row by row")
	require.Positive(t, deleted, "the boundary day's old rows are deleted")
	var left int
	var oldest time.Time
	require.NoError(t, env.DB.NewRaw(`SELECT count(*), min(created_at) FROM servidor_metricas_history`).Scan(ctx, &left, &oldest))
	require.Equal(t, keep, left, "every row of the last seven days is kept")
	require.False(t, oldest.Before(now.Add(-db.MetricsRetention)), "and none older")

	// Run again: nothing more to do.
	dropped, deleted, err = s.PurgeMetrics(ctx, env.DB, now)
	require.NoError(t, err)
	require.Zero(t, dropped)
	require.Zero(t, deleted)
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
	cutoff := now.Add(-db.MetricsRetention)
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
