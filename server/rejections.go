package server

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"pasarela/db"
)

// Refused webhook deliveries are counted in memory, per minute, reason and IP,
// and flushed in one statement about once a second: a flood of unsigned junk
// costs the database one write a second, not one per request. Counts stay
// exact: a failed flush keeps them for the next one, and the last flush runs
// at shutdown, after the HTTP server has finished its requests.
const (
	rejectionFlushEvery = time.Second
	// rejectionMaxKeys bounds memory under a flood from many addresses; past
	// it, a minute's further IPs are counted together as rejectionOtherIPs.
	rejectionMaxKeys  = 10000
	rejectionOtherIPs = "(otras)"
)

type rejectionKey struct {
	minute     time.Time
	reason, ip string
}

type rejectionCount struct {
	n, bytes int64
	last     time.Time
}

type rejectionCounter struct {
	mu      sync.Mutex
	pending map[rejectionKey]rejectionCount
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
	db      bun.IDB
	store   *db.Store
	log     *slog.Logger
}

func newRejectionCounter(idb bun.IDB, store *db.Store, log *slog.Logger) *rejectionCounter {
	rc := &rejectionCounter{
		pending: map[rejectionKey]rejectionCount{}, stop: make(chan struct{}), done: make(chan struct{}),
		db: idb, store: store, log: log,
	}
	go rc.run()
	return rc
}

// add counts one refused delivery.
func (rc *rejectionCounter) add(reason, ip string, bodyBytes int) {
	now := time.Now()
	k := rejectionKey{minute: now.Truncate(time.Minute), reason: reason, ip: ip}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, ok := rc.pending[k]; !ok && len(rc.pending) >= rejectionMaxKeys {
		k.ip = rejectionOtherIPs
	}
	c := rc.pending[k]
	c.n++
	c.bytes += int64(bodyBytes)
	c.last = now
	rc.pending[k] = c
}

func (rc *rejectionCounter) run() {
	defer close(rc.done)
	tick := time.NewTicker(rejectionFlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			rc.flush()
		case <-rc.stop:
			rc.flush()
			return
		}
	}
}

// close writes what is still counted and stops the flushing; it may be called
// more than once.
func (rc *rejectionCounter) close() {
	rc.closing.Do(func() { close(rc.stop) })
	<-rc.done
}

func (rc *rejectionCounter) flush() {
	rc.mu.Lock()
	batch := rc.pending
	if len(batch) == 0 {
		rc.mu.Unlock()
		return
	}
	rc.pending = make(map[rejectionKey]rejectionCount, len(batch))
	rc.mu.Unlock()

	rows := make([]db.WebhookRejections, 0, len(batch))
	for k, c := range batch {
		rows = append(rows, db.WebhookRejections{Minute: k.minute, Reason: k.reason, IP: k.ip, Count: c.n, BodyBytes: c.bytes, LastAt: c.last})
	}
	// In key order, so two web processes upserting the same keys lock them in
	// the same order and never deadlock.
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if !a.Minute.Equal(b.Minute) {
			return a.Minute.Before(b.Minute)
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return a.IP < b.IP
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rc.store.AddRejections(ctx, rc.db, rows); err != nil {
		rc.log.Warn("webhook rejection counts kept for the next flush", "error", err)
		rc.mu.Lock()
		for k, c := range batch { // merged back, so nothing counted is lost
			p := rc.pending[k]
			p.n, p.bytes = p.n+c.n, p.bytes+c.bytes
			if c.last.After(p.last) {
				p.last = c.last
			}
			rc.pending[k] = p
		}
		rc.mu.Unlock()
	}
}
