package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// PurgePaymentLogsArgs trims the payment logs that grow with traffic (daily):
// idempotency keys, upstream calls and refused webhook deliveries.
type PurgePaymentLogsArgs struct{}

// Kind is the job's name in River's tables.
func (PurgePaymentLogsArgs) Kind() string { return "purge_payment_logs" }

// PurgePaymentLogsWorker works PurgePaymentLogsArgs.
type PurgePaymentLogsWorker struct {
	river.WorkerDefaults[PurgePaymentLogsArgs]
	db    *bun.DB
	store *db.Store
}

// Timeout bounds one purge. Each delete commits by itself, so a purge cut
// short keeps its progress and the retry finishes it.
func (w *PurgePaymentLogsWorker) Timeout(*river.Job[PurgePaymentLogsArgs]) time.Duration {
	return MaxJobTimeout
}

// Work purges; a failure is retried by River.
func (w *PurgePaymentLogsWorker) Work(ctx context.Context, _ *river.Job[PurgePaymentLogsArgs]) error {
	_, err := w.store.PurgePaymentLogs(ctx, w.db)
	return err
}
