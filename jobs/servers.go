package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// SilentServersArgs marks offline the servers that missed three heartbeats
// and emits servidor_caido for each (CONTRACT §8).
type SilentServersArgs struct{}

// Kind is the job's name in River's tables.
func (SilentServersArgs) Kind() string { return "servidores_sin_latido" }

// SilentServersWorker works SilentServersArgs.
type SilentServersWorker struct {
	river.WorkerDefaults[SilentServersArgs]
	db    *bun.DB
	pool  *pgxpool.Pool
	store *db.Store
}

// Timeout bounds one round: one UPDATE and the delivery jobs.
func (w *SilentServersWorker) Timeout(*river.Job[SilentServersArgs]) time.Duration {
	return 30 * time.Second
}

// Work marks the servers and inserts their deliveries in one transaction:
// a server is marked offline if and only if its alert goes out.
func (w *SilentServersWorker) Work(ctx context.Context, _ *river.Job[SilentServersArgs]) error {
	cfg, err := w.store.EventConfig(ctx, w.db, "servidor_caido")
	if err != nil {
		return err
	}
	to, err := w.store.UsersWithModule(ctx, w.db, db.ModuleServers)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		servers, err := w.store.MarkOfflineServers(ctx, tx)
		if err != nil || len(servers) == 0 {
			return err
		}
		var params []river.InsertManyParams
		for _, s := range servers {
			params = append(params, deliveries(cfg, Event{Evento: "servidor_caido",
				Titulo: fmt.Sprintf("El servidor «%s» no responde", s.Nombre),
				Texto:  "Su agente no envió latidos durante tres intervalos.",
				Enlace: fmt.Sprintf("/app/servidor/%d", s.ID), UserIDs: to})...)
		}
		if len(params) == 0 {
			return nil
		}
		if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertManyTx(ctx, tx, params); err != nil {
			return fmt.Errorf("insert %d server-down deliveries: %w", len(params), err)
		}
		return nil
	})
}

// MetricPartitionsArgs creates the coming days' partitions of the metrics history.
type MetricPartitionsArgs struct{}

// Kind is the job's name in River's tables.
func (MetricPartitionsArgs) Kind() string { return "servidor_metricas_particiones" }

// MetricPartitionsWorker works MetricPartitionsArgs.
type MetricPartitionsWorker struct {
	river.WorkerDefaults[MetricPartitionsArgs]
	db    *bun.DB
	store *db.Store
}

// Timeout bounds the few CREATE TABLEs.
func (w *MetricPartitionsWorker) Timeout(*river.Job[MetricPartitionsArgs]) time.Duration {
	return 30 * time.Second
}

// Work creates what is missing of yesterday to three days ahead.
func (w *MetricPartitionsWorker) Work(ctx context.Context, _ *river.Job[MetricPartitionsArgs]) error {
	return w.store.EnsureMetricPartitions(ctx, w.db)
}

// PurgeMetricsArgs removes heartbeats older than seven days (CONTRACT §8:
// daily at 03:00 in the process's time zone).
type PurgeMetricsArgs struct{}

// Kind is the job's name in River's tables.
func (PurgeMetricsArgs) Kind() string { return "purge_servidor_metricas" }

// PurgeMetricsWorker works PurgeMetricsArgs.
type PurgeMetricsWorker struct {
	river.WorkerDefaults[PurgeMetricsArgs]
	db    *bun.DB
	store *db.Store
	log   *slog.Logger
}

// Timeout bounds the purge: detaching a day waits for the transactions that
// use it, dropping it is quick, the boundary day's delete is at most a day's rows.
func (w *PurgeMetricsWorker) Timeout(*river.Job[PurgeMetricsArgs]) time.Duration {
	return MaxJobTimeout
}

// Work drops the old days and deletes the boundary day's old rows, of the
// metrics history and of the URL checks.
func (w *PurgeMetricsWorker) Work(ctx context.Context, _ *river.Job[PurgeMetricsArgs]) error {
	dropped, deleted, err := w.store.PurgeMetrics(ctx, w.db, time.Now())
	if err != nil {
		return err
	}
	w.log.Info("metrics history purged", "days_dropped", dropped, "rows_deleted", deleted)
	if dropped, deleted, err = w.store.PurgeMonitorLog(ctx, w.db, time.Now()); err != nil {
		return err
	}
	w.log.Info("URL checks purged", "days_dropped", dropped, "rows_deleted", deleted)
	return nil
}

// dailyAt is a schedule that fires every day at an hour of the process's time zone.
type dailyAt struct{ hour int }

func (d dailyAt) Next(t time.Time) time.Time {
	t = t.Local()
	next := time.Date(t.Year(), t.Month(), t.Day(), d.hour, 0, 0, 0, time.Local)
	if !next.After(t) {
		next = next.AddDate(0, 0, 1)
	}
	return next
}
