package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

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

// Work processes each notification in its own transaction, so one that fails
// does not undo the others. A failure is retried by River (processing again is
// harmless); a notification that no longer exists is skipped.
func (w *ProcessWebhookWorker) Work(ctx context.Context, job *river.Job[ProcessWebhookArgs]) error {
	var errs []error
	for _, id := range job.Args.WebhookIDs {
		err := w.store.ProcessWebhook(ctx, w.db, id)
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			errs = append(errs, fmt.Errorf("webhook %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
