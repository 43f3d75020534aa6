package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"pasarela/db"
	"pasarela/db/dbtest"
	"pasarela/jobs"
)

// probeArgs is a job that only reports that it ran.
type probeArgs struct {
	Label string `json:"label"`
}

func (probeArgs) Kind() string { return "test_probe" }

type probeWorker struct {
	river.WorkerDefaults[probeArgs]
	ran chan string
}

func (w *probeWorker) Work(_ context.Context, job *river.Job[probeArgs]) error {
	w.ran <- job.Args.Label
	return nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func startWorker(t *testing.T, env *dbtest.Env, id string, workers *river.Workers, periodic []*river.PeriodicJob) *river.Client[pgx.Tx] {
	t.Helper()
	client, err := jobs.NewWorkerClient(env.Pool, workers, periodic, quiet, jobs.WorkerOptions{ID: id})
	require.NoError(t, err)
	require.NoError(t, client.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(ctx))
	})
	return client
}

func TestJobInsertedInATransactionRunsOnlyIfTheTransactionCommits(t *testing.T) {
	t.Parallel()
	// errRollBack makes a transaction roll back.
	errRollBack := errors.New("roll back")
	// Both ways the app enqueues: in a bun transaction (everywhere) and in a
	// pgx one (the webhook receiver).
	enqueuers := []struct {
		name    string
		enqueue func(ctx context.Context, env *dbtest.Env, q *jobs.Queue, label string, commit bool) error
	}{
		{"bun", func(ctx context.Context, env *dbtest.Env, q *jobs.Queue, label string, commit bool) error {
			return env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if _, err := q.InsertTx(ctx, tx, probeArgs{Label: label}, nil); err != nil || commit {
					return err
				}
				return errRollBack
			})
		}},
		{"pgx", func(ctx context.Context, env *dbtest.Env, q *jobs.Queue, label string, commit bool) error {
			return pgx.BeginFunc(ctx, env.Pool, func(tx pgx.Tx) error {
				if _, err := q.InsertPgxTx(ctx, tx, probeArgs{Label: label}, nil); err != nil || commit {
					return err
				}
				return errRollBack
			})
		}},
	}
	for _, tc := range enqueuers {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := dbtest.New(t)
			ctx := context.Background()
			workers, _ := jobs.Register(jobs.Deps{DB: env.DB, Pool: env.Pool, Store: &db.Store{}})
			probe := &probeWorker{ran: make(chan string, 10)}
			river.AddWorker(workers, probe)
			queue, err := jobs.NewQueue(env.DB, env.Pool, workers, quiet)
			require.NoError(t, err)

			require.ErrorIs(t, tc.enqueue(ctx, env, queue, "rolled back", false), errRollBack)
			require.NoError(t, tc.enqueue(ctx, env, queue, "committed", true))

			startWorker(t, env, "w1", workers, nil)
			select {
			case label := <-probe.ran:
				require.Equal(t, "committed", label)
			case <-time.After(10 * time.Second):
				t.Fatal("the committed job did not run within 10 s")
			}
			select {
			case label := <-probe.ran:
				t.Fatalf("a second job ran: %q", label)
			case <-time.After(500 * time.Millisecond):
			}
			var n int
			require.NoError(t, env.DB.NewSelect().TableExpr("river_job").ColumnExpr("count(*)").Where("kind = 'test_probe'").Scan(ctx, &n))
			require.Equal(t, 1, n, "the rolled-back job must leave no row")
		})
	}
}

func TestQueueRefusesAKindNoWorkerHandles(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	workers, _ := jobs.Register(jobs.Deps{DB: env.DB, Pool: env.Pool, Store: &db.Store{}})
	queue, err := jobs.NewQueue(env.DB, env.Pool, workers, quiet)
	require.NoError(t, err)
	err = env.DB.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := queue.InsertTx(ctx, tx, probeArgs{}, nil)
		return err
	})
	require.Error(t, err)
}

func TestTwoWorkersElectOneLeaderAndAPeriodicJobFiresOncePerPeriod(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	const period = time.Second
	tick := func() []*river.PeriodicJob {
		return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(period),
			func() (river.JobArgs, *river.InsertOpts) { return probeArgs{Label: "tick"}, nil },
			&river.PeriodicJobOpts{ID: "tick"})}
	}
	probe := &probeWorker{ran: make(chan string, 100)}
	for _, id := range []string{"worker-a", "worker-b"} {
		workers := river.NewWorkers()
		river.AddWorker(workers, probe)
		startWorker(t, env, id, workers, tick())
	}

	// Election takes a moment on a busy machine: count from the first tick.
	ticks := func() []time.Time {
		var created []time.Time
		require.NoError(t, env.DB.NewSelect().TableExpr("river_job").Column("created_at").
			Where("kind = 'test_probe'").OrderExpr("created_at").Scan(ctx, &created))
		return created
	}
	require.Eventually(t, func() bool { return len(ticks()) > 0 }, 30*time.Second, 50*time.Millisecond, "no periodic job fired")
	time.Sleep(3*period + period/2)

	var leaders int
	require.NoError(t, env.DB.NewSelect().TableExpr("river_leader").ColumnExpr("count(*)").Scan(ctx, &leaders))
	require.Equal(t, 1, leaders, "exactly one River leader")

	created := ticks()
	require.GreaterOrEqual(t, len(created), 3, "the periodic job should have fired about four times in 3.5 s after the first")
	require.LessOrEqual(t, len(created), 5, "more than one insert per period means two schedulers ran")
	sort.Slice(created, func(i, j int) bool { return created[i].Before(created[j]) })
	for i := 1; i < len(created); i++ {
		gap := created[i].Sub(created[i-1])
		require.Greater(t, gap, period/2, "two ticks %v apart: the schedule ran twice in one period", gap)
	}
}

func TestAWebhookJobThatFailsIsKeptForRetryWithItsError(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	store := &db.Store{}
	w := &db.Webhook{NotificationID: "evt-fail", Event: "SALE_APPROVED", Status: "aprobado", Reference: "ORD-F",
		Environment: "test", Payload: "{}"}
	_, err := store.InsertWebhook(ctx, env.Pool, w)
	require.NoError(t, err)
	// Processing cannot succeed while the outcomes table is gone.
	_, err = env.DB.ExecContext(ctx, "ALTER TABLE gwa_reference_outcomes RENAME TO outcomes_away")
	require.NoError(t, err)

	workers, _ := jobs.Register(jobs.Deps{DB: env.DB, Pool: env.Pool, Store: store})
	queue, err := jobs.NewQueue(env.DB, env.Pool, workers, quiet)
	require.NoError(t, err)
	require.NoError(t, env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := queue.InsertTx(ctx, tx, jobs.ProcessWebhookArgs{WebhookIDs: []int64{w.ID}}, nil)
		return err
	}))
	startWorker(t, env, "w-retry", workers, nil)

	var state, errs string
	require.Eventually(t, func() bool {
		err := env.DB.NewRaw(`SELECT state::text, errors::text FROM river_job WHERE kind = 'gwa_process_webhook'`).Scan(ctx, &state, &errs)
		return err == nil && state == "retryable"
	}, 10*time.Second, 50*time.Millisecond, "the failed job should wait for a retry")
	require.Contains(t, errs, "gwa_reference_outcomes", "the error is kept for /app/jobs")
	got, err := store.Webhook(ctx, env.DB, w.ID)
	require.NoError(t, err)
	require.False(t, got.Processed, "a failed run leaves the notification unprocessed")
}

// slowArgs is a job that takes two seconds unless its context is cancelled.
type slowArgs struct{}

func (slowArgs) Kind() string { return "test_slow" }

type slowWorker struct {
	river.WorkerDefaults[slowArgs]
	started chan struct{}
}

func (w *slowWorker) Work(ctx context.Context, _ *river.Job[slowArgs]) error {
	close(w.started)
	select {
	case <-time.After(2 * time.Second):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cancelled mid-job: %w", ctx.Err())
	}
}

func TestASignalLetsARunningJobFinishBeforeTheWorkerStops(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	workers := river.NewWorkers()
	slow := &slowWorker{started: make(chan struct{})}
	river.AddWorker(workers, slow)
	client, err := jobs.NewWorkerClient(env.Pool, workers, nil, quiet, jobs.WorkerOptions{ID: "w-stop"})
	require.NoError(t, err)

	signal, sendSignal := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- jobs.Run(signal, client, quiet) }()
	_, err = client.Insert(ctx, slowArgs{}, nil)
	require.NoError(t, err)
	select {
	case <-slow.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow job did not start")
	}
	signalAt := time.Now()
	sendSignal()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not stop")
	}
	require.GreaterOrEqual(t, time.Since(signalAt), time.Second, "the worker waited for the running job")
	var state string
	require.NoError(t, env.DB.NewRaw(`SELECT state::text FROM river_job WHERE kind = 'test_slow'`).Scan(ctx, &state))
	require.Equal(t, "completed", state, "the job running at the signal finished instead of being cancelled")
}
