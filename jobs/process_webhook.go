package jobs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"pasarela/db"
)

// ProcessWebhookArgs applies stored checkout-gateway notifications. It is
// inserted in the transaction that stores them: the receiver commits
// concurrent deliveries together, with one job for the lot (see server/ingest.go).
type ProcessWebhookArgs struct {
	WebhookIDs []int64 `json:"webhook_ids"`
}

// Kind is the job's name in River's tables.
func (ProcessWebhookArgs) Kind() string { return "gwa_process_webhook" }

// InsertOpts puts processing on its own queue (see QueueWebhooks).
func (ProcessWebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueWebhooks}
}

// ProcessWebhookWorker works ProcessWebhookArgs.
type ProcessWebhookWorker struct {
	river.WorkerDefaults[ProcessWebhookArgs]
	pool  *pgxpool.Pool
	store *db.Store
}

// Timeout bounds one run: two set-based statements for at most one batch
// (ingestMaxBatch notifications), normally a few milliseconds.
func (w *ProcessWebhookWorker) Timeout(*river.Job[ProcessWebhookArgs]) time.Duration {
	return 20 * time.Second
}

// Work applies the job's notifications together, in one transaction. A
// failure is retried by River (processing again is harmless); a notification
// that no longer exists is skipped.
func (w *ProcessWebhookWorker) Work(ctx context.Context, job *river.Job[ProcessWebhookArgs]) error {
	return w.store.ProcessWebhooks(ctx, w.pool, job.Args.WebhookIDs)
}
