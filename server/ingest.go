package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"pasarela/db"
	"pasarela/jobs"
)

// The ingester stores webhook deliveries with group commit: a few writers each
// take every delivery waiting when they come free (no added wait when the
// server is quiet) and store them, and their processing jobs, in one
// transaction. Each request gets its answer only after that commit, so the
// guarantee is unchanged: a 200 means the row and its job are durable.
//
// Why: a delivery alone costs four round trips, an fsync and River's insert.
// Per batch, that cost is paid once, and the batch has one processing job for
// all its rows. The transaction runs on pgx, where both statements are
// prepared once per connection (on pgdriver PostgreSQL would parse and plan
// River's insert for every batch: about 0.8 ms of server CPU each).
const (
	ingestWriters  = 2
	ingestMaxBatch = 128
	// ingestLinger is how long a writer under load waits for more deliveries
	// before committing: a statement costs PostgreSQL about as much for one row
	// as for ten, so under load a fuller batch is cheaper per delivery. An idle
	// server never waits.
	ingestLinger = 1000 * time.Microsecond
	// ingestWait bounds how long a request waits for its commit.
	ingestWait = 30 * time.Second
)

type ingestRequest struct {
	webhook *db.Webhook
	done    chan ingestResult
}

type ingestResult struct {
	duplicate bool
	err       error
}

type ingester struct {
	in    chan *ingestRequest
	stop  chan struct{}
	pool  *pgxpool.Pool
	store *db.Store
	queue *jobs.Queue
	log   *slog.Logger
}

func newIngester(pool *pgxpool.Pool, store *db.Store, queue *jobs.Queue, log *slog.Logger) *ingester {
	ing := &ingester{
		in: make(chan *ingestRequest, ingestMaxBatch*ingestWriters), stop: make(chan struct{}),
		pool: pool, store: store, queue: queue, log: log,
	}
	for range ingestWriters {
		go ing.write()
	}
	return ing
}

// close stops the writers once nothing more will be submitted (after the HTTP
// server has finished its requests).
func (ing *ingester) close() { close(ing.stop) }

// storeWebhook submits w and waits until it is committed (or refused).
func (ing *ingester) storeWebhook(ctx context.Context, w *db.Webhook) (duplicate bool, err error) {
	req := &ingestRequest{webhook: w, done: make(chan ingestResult, 1)}
	timeout := time.NewTimer(ingestWait)
	defer timeout.Stop()
	select {
	case ing.in <- req:
	case <-timeout.C:
		return false, errors.New("ingest queue full")
	case <-ctx.Done():
		return false, ctx.Err()
	}
	// Once submitted, the write happens whatever the client does: wait for it.
	select {
	case r := <-req.done:
		return r.duplicate, r.err
	case <-timeout.C:
		return false, errors.New("ingest commit timed out")
	}
}

func (ing *ingester) write() {
	batch := make([]*ingestRequest, 0, ingestMaxBatch)
	busy := false // the last batch had company: more deliveries are likely on the way
	for {
		select {
		case <-ing.stop:
			for { // what was submitted before the stop is still written
				select {
				case r := <-ing.in:
					ing.commit([]*ingestRequest{r})
				default:
					return
				}
			}
		case first := <-ing.in:
			batch = append(batch[:0], first)
		}
		batch = ing.drain(batch)
		if busy && len(batch) < ingestMaxBatch {
			time.Sleep(ingestLinger)
			batch = ing.drain(batch)
		}
		busy = len(batch) > 1
		ing.commit(batch)
	}
}

// drain adds to batch whatever is waiting, without waiting.
func (ing *ingester) drain(batch []*ingestRequest) []*ingestRequest {
	for len(batch) < ingestMaxBatch {
		select {
		case r := <-ing.in:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// commit stores a batch in one transaction. If it fails, each delivery is
// tried alone, so that one bad delivery fails by itself.
func (ing *ingester) commit(batch []*ingestRequest) {
	// Bounded, so a database that hangs cannot hold a writer for ever.
	ctx, cancel := context.WithTimeout(context.Background(), ingestWait)
	defer cancel()
	dups, err := ing.insert(ctx, batch)
	if err == nil {
		for i, r := range batch {
			r.done <- ingestResult{duplicate: dups[i]}
		}
		return
	}
	if len(batch) > 1 {
		ing.log.Warn("webhook batch failed; storing one by one", "size", len(batch), "error", err)
	}
	for _, r := range batch {
		d, err := ing.insert(ctx, []*ingestRequest{r})
		if err != nil {
			r.done <- ingestResult{err: err}
			continue
		}
		r.done <- ingestResult{duplicate: d[0]}
	}
}

func (ing *ingester) insert(ctx context.Context, batch []*ingestRequest) ([]bool, error) {
	ws := make([]*db.Webhook, len(batch))
	for i, r := range batch {
		ws[i] = r.webhook
	}
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
