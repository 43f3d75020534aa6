package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"pasarela/db"
	"pasarela/jobs"
)

// The ingester stores webhook deliveries with group commit (groupcommit.go):
// each batch, and one processing job for all its deliveries, in one
// transaction. The transaction runs on pgx, where both statements are
// prepared once per connection (on pgdriver PostgreSQL would parse and plan
// River's insert for every batch: about 0.8 ms of server CPU each).
const (
	ingestWriters  = 2
	ingestMaxBatch = 128
	ingestLinger   = 1000 * time.Microsecond
)

type ingester struct {
	*groupCommit[*db.Webhook, bool]
	pool  *pgxpool.Pool
	store *db.Store
	queue *jobs.Queue
}

func newIngester(pool *pgxpool.Pool, store *db.Store, queue *jobs.Queue, log *slog.Logger) *ingester {
	ing := &ingester{pool: pool, store: store, queue: queue}
	ing.groupCommit = newGroupCommit("webhook ingest", ingestWriters, ingestMaxBatch, ingestLinger, log, ing.insert)
	return ing
}

// storeWebhook submits w and waits until it is committed (or refused).
func (ing *ingester) storeWebhook(ctx context.Context, w *db.Webhook) (duplicate bool, err error) {
	return ing.submit(ctx, w)
}

// insert stores a batch and its processing job in one transaction and says
// which deliveries were already stored.
func (ing *ingester) insert(ctx context.Context, ws []*db.Webhook) ([]bool, error) {
	var dups []bool
	err := pgx.BeginFunc(ctx, ing.pool, func(tx pgx.Tx) error {
		var err error
		if dups, err = ing.store.InsertWebhooks(ctx, tx, ws); err != nil {
			return err
		}
		var fresh []int64
		for i, w := range ws {
			if !dups[i] {
				fresh = append(fresh, w.ID)
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		_, err = ing.queue.InsertPgxTx(ctx, tx, jobs.ProcessWebhookArgs{WebhookIDs: fresh}, nil)
		return err
	})
	return dups, err
}
