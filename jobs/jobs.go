// Package jobs holds Pasarela's background work on River: every job kind, the
// periodic schedules, and the two River clients the app uses.
//
// Two clients, one database. The working client runs on pgx (riverpgxv5) with
// its own pool: leader election, LISTEN/NOTIFY and periodic jobs need it, and
// River's elector does not work on bun's pgdriver (see README). The Queue is an
// insert-only client on database/sql over bun's own connections, so that a job
// is inserted inside the same bun transaction as the row it belongs to (and,
// for the webhook receiver alone, an insert-only client on pgx: see InsertPgxTx).
package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// Deps is what the workers may use; each worker keeps only what it needs.
type Deps struct {
	DB    *bun.DB
	Store *db.Store
}

// Register lists every worker and periodic job of the app, in one place.
func Register(deps Deps) (*river.Workers, []*river.PeriodicJob) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &PurgeSessionsWorker{db: deps.DB, store: deps.Store})
	river.AddWorker(workers, &ProcessWebhookWorker{db: deps.DB, store: deps.Store})
	river.AddWorker(workers, &PurgePaymentLogsWorker{db: deps.DB, store: deps.Store})

	periodic := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return PurgeSessionsArgs{}, nil },
			&river.PeriodicJobOpts{ID: "purge_sessions", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(24*time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return PurgePaymentLogsArgs{}, nil },
			&river.PeriodicJobOpts{ID: "purge_payment_logs", RunOnStart: true}),
	}
	return workers, periodic
}

// WorkerOptions tunes the working client; the zero value is production's.
type WorkerOptions struct {
	// ID names the client in River's tables; empty lets River choose.
	ID         string
	MaxWorkers int
}

// NewWorkerClient returns the client that works jobs and, when elected leader,
// runs the periodic schedules and River's maintenance.
func NewWorkerClient(pool *pgxpool.Pool, workers *river.Workers, periodic []*river.PeriodicJob, logger *slog.Logger, opts WorkerOptions) (*river.Client[pgx.Tx], error) {
	if opts.MaxWorkers == 0 {
		opts.MaxWorkers = 20
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:           opts.ID,
		Logger:       logger.With("component", "river"),
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.MaxWorkers}},
		Workers:      workers,
		PeriodicJobs: periodic,
		JobTimeout:   time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("river worker client: %w", err)
	}
	return client, nil
}

// Queue enqueues jobs inside the transaction of the row they belong to, so a
// job exists if and only if that transaction commits.
type Queue struct {
	bun *river.Client[*sql.Tx]
	pgx *river.Client[pgx.Tx]
}

// NewQueue returns a Queue for bun's transactions and pgx's. workers is used
// only to refuse a kind that no worker handles.
func NewQueue(bdb *bun.DB, pool *pgxpool.Pool, workers *river.Workers, logger *slog.Logger) (*Queue, error) {
	cfg := func() *river.Config {
		return &river.Config{Logger: logger.With("component", "river"), Workers: workers}
	}
	onBun, err := river.NewClient(riverdatabasesql.New(bdb.DB), cfg())
	if err != nil {
		return nil, fmt.Errorf("river queue client (bun): %w", err)
	}
	onPgx, err := river.NewClient(riverpgxv5.New(pool), cfg())
	if err != nil {
		return nil, fmt.Errorf("river queue client (pgx): %w", err)
	}
	return &Queue{bun: onBun, pgx: onPgx}, nil
}

// InsertTx enqueues args inside a bun transaction: how the app enqueues.
func (q *Queue) InsertTx(ctx context.Context, tx bun.Tx, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	res, err := q.bun.InsertTx(ctx, tx.Tx, args, opts)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", args.Kind(), err)
	}
	return res.Job.ID, nil
}

// InsertPgxTx enqueues args inside a pgx transaction. Only the webhook
// receiver's hot path uses it: there River's insert is a prepared statement,
// while on database/sql over pgdriver PostgreSQL parses and plans it anew each
// time (most of the cost of a small batch).
func (q *Queue) InsertPgxTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	res, err := q.pgx.InsertTx(ctx, tx, args, opts)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", args.Kind(), err)
	}
	return res.Job.ID, nil
}
