package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// PurgeSessionsArgs deletes ended sessions and stale login-failure counters (hourly).
type PurgeSessionsArgs struct{}

// Kind is the job's name in River's tables.
func (PurgeSessionsArgs) Kind() string { return "purge_sessions" }

// PurgeSessionsWorker works PurgeSessionsArgs.
type PurgeSessionsWorker struct {
	river.WorkerDefaults[PurgeSessionsArgs]
	db    *bun.DB
	store *db.Store
}

// Timeout bounds one purge. Each delete commits by itself, so a purge cut
// short keeps its progress and the retry finishes it.
func (w *PurgeSessionsWorker) Timeout(*river.Job[PurgeSessionsArgs]) time.Duration {
	return MaxJobTimeout
}

// Work purges; a failure is retried by River.
func (w *PurgeSessionsWorker) Work(ctx context.Context, _ *river.Job[PurgeSessionsArgs]) error {
	_, err := w.store.PurgeExpired(ctx, w.db)
	return err
}
