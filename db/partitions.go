package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
)

// DailyTables are the tables kept in daily partitions for RetentionDays.
var DailyTables = []string{"servidor_metricas_history", "url_monitor_log"}

// PurgeHour is the hour of the process's time zone at which the daily purge
// runs (CONTRACT §8) and at which each daily partition starts. The purge
// then finds whole partitions to drop and seconds of rows to delete: with
// partitions on UTC days, the boundary day's older rows were deleted row by
// row, up to 2.9 M rows at 1,000 servers, and the heartbeats committing
// meanwhile waited behind that WAL (README, Performance).
const PurgeHour = 3

// partitionLock serialises the creation of partitions (heartbeats, URL
// checks and the hourly job may all find one missing at once).
const partitionLock = 7261_0004

// IsMissingPartition reports whether err is an insert into a day with no
// partition yet (the worker that creates them has not run for days).
func IsMissingPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514" && slices.Contains(DailyTables, pe.TableName)
}

// NextPartitionStart is the first PurgeHour of the process's time zone after
// t: a partition's end. Daylight saving time makes some days 23 or 25 hours.
func NextPartitionStart(t time.Time) time.Time {
	l := t.In(time.Local)
	next := time.Date(l.Year(), l.Month(), l.Day(), PurgeHour, 0, 0, 0, time.Local)
	if !next.After(t) {
		next = time.Date(l.Year(), l.Month(), l.Day()+1, PurgeHour, 0, 0, 0, time.Local)
	}
	return next
}

// partition is one partition of a daily table and the times it holds.
type partition struct {
	Name    string    `bun:"name"`
	Pending bool      `bun:"pending"` // a DETACH … CONCURRENTLY cut short
	From    time.Time `bun:"lo"`
	To      time.Time `bun:"hi"`
}

func partitions(ctx context.Context, idb bun.IDB, table string) ([]partition, error) {
	var parts []partition
	// The bounds as PostgreSQL prints them, read back in the same session.
	err := idb.NewRaw(`SELECT name, pending, b[1]::timestamptz AS lo, b[2]::timestamptz AS hi FROM (
			SELECT c.relname AS name, i.inhdetachpending AS pending,
			       regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)') AS b
			FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = ?::regclass) p
		WHERE b IS NOT NULL ORDER BY lo`, table).Scan(ctx, &parts)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	return parts, nil
}

// EnsureMetricPartitions creates, for every daily table, the partitions
// missing from yesterday to three days past now.
func (s *Store) EnsureMetricPartitions(ctx context.Context, idb bun.IDB) error {
	now := time.Now()
	return s.EnsurePartitions(ctx, idb, now.AddDate(0, 0, -1), now.AddDate(0, 0, 3))
}

// EnsurePartitions makes every daily table hold the times from from to to,
// creating what is missing: partitions from one PurgeHour to the next, cut
// short where one already exists (partitions on UTC days, made by the first
// migrations, stay until they are purged).
func (s *Store) EnsurePartitions(ctx context.Context, idb bun.IDB, from, to time.Time) error {
	return idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", partitionLock); err != nil {
			return fmt.Errorf("lock partitions: %w", err)
		}
		for _, table := range DailyTables {
			parts, err := partitions(ctx, tx, table)
			if err != nil {
				return err
			}
			start := partitionStart(from)
			for start.Before(to) {
				end, covered := NextPartitionStart(start), false
				for _, p := range parts { // in time order
					if !p.From.After(start) && p.To.After(start) {
						end, covered = p.To, true // start is in p: skip past it
						break
					}
					if p.From.After(start) && p.From.Before(end) {
						end = p.From // stop where p begins
					}
				}
				if !covered {
					name := fmt.Sprintf("%s_p%s", table, start.UTC().Format("200601021504"))
					if _, err := tx.ExecContext(ctx, "CREATE TABLE ? PARTITION OF ? FOR VALUES FROM (?) TO (?)",
						bun.Ident(name), bun.Ident(table), start, end); err != nil {
						return fmt.Errorf("create partition %s: %w", name, err)
					}
				}
				start = end
			}
		}
		return nil
	})
}

// partitionStart is the last PurgeHour of the process's time zone at or
// before t: the start of the partition that holds t.
func partitionStart(t time.Time) time.Time {
	next := NextPartitionStart(t)
	return time.Date(next.Year(), next.Month(), next.Day()-1, PurgeHour, 0, 0, 0, time.Local)
}

// purgePartitions removes the rows of a daily table older than cutoff: the
// partitions entirely older are detached without blocking inserts
// (CONCURRENTLY) and dropped whole; the older rows of the partition that
// holds cutoff are deleted (seconds of rows when the purge runs at
// PurgeHour). It runs outside a transaction (DETACH … CONCURRENTLY cannot
// run inside one).
func purgePartitions(ctx context.Context, bdb *bun.DB, table string, cutoff time.Time) (dropped int, deleted int64, err error) {
	parts, err := partitions(ctx, bdb, table)
	if err != nil {
		return 0, 0, err
	}
	for _, part := range parts {
		if part.To.After(cutoff) {
			continue // not entirely old
		}
		// A detach cut short (a timeout, a crash) leaves the partition
		// pending: only FINALIZE completes it.
		detach := "ALTER TABLE ? DETACH PARTITION ? CONCURRENTLY"
		if part.Pending {
			detach = "ALTER TABLE ? DETACH PARTITION ? FINALIZE"
		}
		if _, err := bdb.ExecContext(ctx, detach, bun.Ident(table), bun.Ident(part.Name)); err != nil {
			return dropped, 0, fmt.Errorf("detach %s: %w", part.Name, err)
		}
		if _, err := bdb.ExecContext(ctx, "DROP TABLE ?", bun.Ident(part.Name)); err != nil {
			return dropped, 0, fmt.Errorf("drop %s: %w", part.Name, err)
		}
		dropped++
	}
	res, err := bdb.NewDelete().TableExpr(table).Where("created_at < ?", cutoff).Exec(ctx)
	if err != nil {
		return dropped, 0, fmt.Errorf("delete old rows of %s: %w", table, err)
	}
	deleted, _ = res.RowsAffected()
	return dropped, deleted, nil
}
