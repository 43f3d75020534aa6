package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// ProcessWebhookArgs applies one stored checkout-gateway notification. It is
// inserted in the transaction that stores the notification.
type ProcessWebhookArgs struct {
	WebhookID int64 `json:"webhook_id"`
}

// Kind is the job's name in River's tables.
func (ProcessWebhookArgs) Kind() string { return "gwa_process_webhook" }

// ProcessWebhookWorker works ProcessWebhookArgs.
type ProcessWebhookWorker struct {
	river.WorkerDefaults[ProcessWebhookArgs]
	db    *bun.DB
	store *db.Store
}

// Timeout bounds one run; processing is a few small statements.
func (w *ProcessWebhookWorker) Timeout(*river.Job[ProcessWebhookArgs]) time.Duration {
	return 30 * time.Second
}

// Work processes the notification; a database error is retried by River, a
// notification that no longer exists is not.
func (w *ProcessWebhookWorker) Work(ctx context.Context, job *river.Job[ProcessWebhookArgs]) error {
	err := w.store.ProcessWebhook(ctx, w.db, job.Args.WebhookID)
	if errors.Is(err, db.ErrNotFound) {
		return river.JobCancel(err)
	}
	return err
}
