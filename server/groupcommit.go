package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// groupCommit writes what concurrent requests submit in shared statements
// (group commit): a few writers each take every item waiting when they come
// free (no added wait when the server is quiet) and store them together. Each
// request gets its answer only after that write, so the guarantee is a
// single write's: an answer means the item is durable.
//
// Why: one item alone costs its round trips and a commit (an fsync); per
// batch that cost is paid once. The webhook receiver (ingest.go) and the
// heartbeat (heartbeat.go) use it.
type groupCommit[T, R any] struct {
	in       chan *pendingItem[T, R]
	stop     chan struct{}
	writers  sync.WaitGroup
	maxBatch int
	// linger is how long a writer under load waits for more items before
	// writing: a statement costs PostgreSQL about as much for one row as for
	// ten, so under load a fuller batch is cheaper per item. An idle server
	// never waits.
	linger time.Duration
	// write stores a batch, answering each item, in order; an error fails
	// the batch, whose items are then written alone, so that one bad item
	// fails by itself.
	write func(ctx context.Context, batch []T) ([]R, error)
	log   *slog.Logger
	what  string
}

type pendingItem[T, R any] struct {
	item T
	done chan itemResult[R]
}

type itemResult[R any] struct {
	res R
	err error
}

// groupWait bounds how long a request waits for its write, and a write itself.
const groupWait = 30 * time.Second

func newGroupCommit[T, R any](what string, writers, maxBatch int, linger time.Duration, log *slog.Logger,
	write func(context.Context, []T) ([]R, error)) *groupCommit[T, R] {
	g := &groupCommit[T, R]{in: make(chan *pendingItem[T, R], maxBatch*writers), stop: make(chan struct{}),
		maxBatch: maxBatch, linger: linger, write: write, log: log, what: what}
	for range writers {
		g.writers.Add(1)
		go func() {
			defer g.writers.Done()
			g.run()
		}()
	}
	return g
}

// close stops the writers once nothing more will be submitted (after the
// HTTP server has finished its requests) and waits until what was submitted
// is written: the database connections close after it.
func (g *groupCommit[T, R]) close() {
	close(g.stop)
	g.writers.Wait()
}

// submit hands item to a writer and waits until it is written (or refused).
func (g *groupCommit[T, R]) submit(ctx context.Context, item T) (R, error) {
	var zero R
	p := &pendingItem[T, R]{item: item, done: make(chan itemResult[R], 1)}
	timeout := time.NewTimer(groupWait)
	defer timeout.Stop()
	select {
	case g.in <- p:
	case <-timeout.C:
		return zero, errors.New(g.what + ": queue full")
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	// Once submitted, the write happens whatever the client does: wait for it.
	select {
	case r := <-p.done:
		return r.res, r.err
	case <-timeout.C:
		return zero, errors.New(g.what + ": write timed out")
	}
}

func (g *groupCommit[T, R]) run() {
	batch := make([]*pendingItem[T, R], 0, g.maxBatch)
	busy := false // the last batch had company: more items are likely on the way
	for {
		select {
		case <-g.stop:
			for { // what was submitted before the stop is still written
				select {
				case p := <-g.in:
					g.commit([]*pendingItem[T, R]{p})
				default:
					return
				}
			}
		case first := <-g.in:
			batch = append(batch[:0], first)
		}
		batch = g.drain(batch)
		if busy && len(batch) < g.maxBatch {
			time.Sleep(g.linger)
			batch = g.drain(batch)
		}
		busy = len(batch) > 1
		g.commit(batch)
	}
}

// drain adds to batch whatever is waiting, without waiting.
func (g *groupCommit[T, R]) drain(batch []*pendingItem[T, R]) []*pendingItem[T, R] {
	for len(batch) < g.maxBatch {
		select {
		case p := <-g.in:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

func (g *groupCommit[T, R]) commit(batch []*pendingItem[T, R]) {
	// Bounded, so a database that hangs cannot hold a writer for ever.
	ctx, cancel := context.WithTimeout(context.Background(), groupWait)
	defer cancel()
	items := make([]T, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	res, err := g.write(ctx, items)
	if err == nil {
		for i, p := range batch {
			p.done <- itemResult[R]{res: res[i]}
		}
		return
	}
	if len(batch) > 1 {
		g.log.Warn(g.what+": batch failed; writing one by one", "size", len(batch), "error", err)
	}
	for _, p := range batch {
		r, err := g.write(ctx, []T{p.item})
		if err != nil {
			p.done <- itemResult[R]{err: err}
			continue
		}
		p.done <- itemResult[R]{res: r[0]}
	}
}
