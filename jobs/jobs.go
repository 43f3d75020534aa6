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
	DB *bun.DB
	// Channels deliver notifications by e-mail and chat; BaseURL makes links whole.
	Channels *Channels
	BaseURL  string
	Logger   *slog.Logger
	// Pool is pgx's pool: webhook processing runs on it (prepared statements).
	Pool  *pgxpool.Pool
	Store *db.Store
}

// Time limits. A job left running by a worker that died (SIGKILL, a lost
// machine) is handed to another worker once it has run for rescueAfter: River's
// rescuer runs every 30 s on the leader, and a new leader is elected within
// about 15 s, so a dead worker's jobs run again within two minutes. Every job
// kind must finish (or be cancelled) well before that, or a slow job that is
// still running would be run twice: addWorker enforces it.
const (
	// MaxJobTimeout is the longest any job kind may run.
	MaxJobTimeout = 45 * time.Second
	// defaultJobTimeout applies to a kind that does not set its own.
	defaultJobTimeout = 30 * time.Second
	rescueAfter       = 60 * time.Second
	fetchCooldown     = 10 * time.Millisecond
	// fetchPoll bounds how long a job waits when no insert notification
	// reached this worker (River's default: a second).
	fetchPoll = 200 * time.Millisecond
)

// QueueWebhooks is the queue of webhook processing. Its jobs are short and
// CPU-bound on the database the receiver shares. Measured on two cores at full
// ingest: twenty at once took the CPU from the receiver in bursts (p99 49 ms),
// two fell behind (lag 6 s), eight kept up (lag p99 0.1 s, p99 22 ms).
const QueueWebhooks = "webhooks"

const webhookWorkers = 8

// Register lists every worker and periodic job of the app, in one place.
func Register(deps Deps) (*river.Workers, []*river.PeriodicJob) {
	if deps.Channels == nil {
		deps.Channels = &Channels{} // nothing configured: e-mail and chat are skipped
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	workers := river.NewWorkers()
	addWorker(workers, &PurgeSessionsWorker{db: deps.DB, store: deps.Store})
	addWorker(workers, &ProcessWebhookWorker{pool: deps.Pool, store: deps.Store})
	addWorker(workers, &PurgePaymentLogsWorker{db: deps.DB, store: deps.Store})
	addWorker(workers, &OverdueTasksWorker{db: deps.DB, store: deps.Store})
	addWorker(workers, &NotifyWorker{db: deps.DB, store: deps.Store, channels: deps.Channels, baseURL: deps.BaseURL, log: deps.Logger})
	addWorker(workers, &SilentServersWorker{db: deps.DB, pool: deps.Pool, store: deps.Store})
	addWorker(workers, &MetricPartitionsWorker{db: deps.DB, store: deps.Store})
	addWorker(workers, &PurgeMetricsWorker{db: deps.DB, store: deps.Store, log: deps.Logger})
	addWorker(workers, &MonitorRoundWorker{db: deps.DB, store: deps.Store})
	addWorker(workers, &MonitorCheckWorker{db: deps.DB, pool: deps.Pool, store: deps.Store, checker: NewChecker()})

	periodic := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return PurgeSessionsArgs{}, nil },
			&river.PeriodicJobOpts{ID: "purge_sessions", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(24*time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return PurgePaymentLogsArgs{}, nil },
			&river.PeriodicJobOpts{ID: "purge_payment_logs", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(24*time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return OverdueTasksArgs{}, nil },
			&river.PeriodicJobOpts{ID: "tareas_vencidas", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(30*time.Second),
			func() (river.JobArgs, *river.InsertOpts) { return SilentServersArgs{}, nil },
			&river.PeriodicJobOpts{ID: "servidores_sin_latido", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return MetricPartitionsArgs{}, nil },
			&river.PeriodicJobOpts{ID: "servidor_metricas_particiones", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return MonitorRoundArgs{}, nil },
			&river.PeriodicJobOpts{ID: "url_monitor_ronda", RunOnStart: true}),
		river.NewPeriodicJob(dailyAt{hour: db.PurgeHour},
			func() (river.JobArgs, *river.InsertOpts) { return PurgeMetricsArgs{}, nil },
			&river.PeriodicJobOpts{ID: "purge_servidor_metricas"}),
	}
	return workers, periodic
}

// addWorker registers w after checking that its kind runs for a bounded time
// shorter than the rescue delay (see MaxJobTimeout). A kind that breaks the
// rule is a programming error, caught at start and by every test.
func addWorker[T river.JobArgs](workers *river.Workers, w river.Worker[T]) {
	if d := w.Timeout(&river.Job[T]{}); d <= 0 || d > MaxJobTimeout {
		var args T
		panic(fmt.Sprintf("jobs: %s must set a Timeout between 0 and %s (has %s)", args.Kind(), MaxJobTimeout, d))
	}
	river.AddWorker(workers, w)
}

// WorkerOptions tunes the working client; the zero value is production's.
type WorkerOptions struct {
	// ID names the client in River's tables; empty lets River choose.
	ID         string
	MaxWorkers int
	// CheckConcurrency is how many URL checks run at once (0: DefaultCheckConcurrency).
	CheckConcurrency int
}

// NewWorkerClient returns the client that works jobs and, when elected leader,
// runs the periodic schedules and River's maintenance.
func NewWorkerClient(pool *pgxpool.Pool, workers *river.Workers, periodic []*river.PeriodicJob, logger *slog.Logger, opts WorkerOptions) (*river.Client[pgx.Tx], error) {
	if opts.MaxWorkers == 0 {
		opts.MaxWorkers = 20
	}
	if opts.CheckConcurrency == 0 {
		opts.CheckConcurrency = DefaultCheckConcurrency
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:     opts.ID,
		Logger: logger.With("component", "river"),
		Queues: map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: opts.MaxWorkers},
			QueueWebhooks:      {MaxWorkers: webhookWorkers},
			QueueURLChecks:     {MaxWorkers: opts.CheckConcurrency},
		},
		Workers:      workers,
		PeriodicJobs: periodic,
		JobTimeout:   defaultJobTimeout,
		// River fetches at most once per cooldown, up to MaxWorkers jobs: with
		// its default (100 ms), 20 workers cap throughput at 200 jobs a second
		// however short the jobs, and webhook processing fell behind ingest
		// (see README, Performance). Fetches still happen only when jobs are
		// inserted (LISTEN/NOTIFY) or every fetchPoll, so an idle worker costs
		// five small queries a second.
		FetchCooldown:     fetchCooldown,
		FetchPollInterval: fetchPoll,
		// See MaxJobTimeout: a dead worker's jobs are picked up again soon.
		RescueStuckJobsAfter: rescueAfter,
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
