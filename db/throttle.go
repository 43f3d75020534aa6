package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ThrottleWindow is how long failed logins are remembered; a key with too many
// failures in it is refused until its window ends.
const ThrottleWindow = 15 * time.Minute

// ThrottleBlocked returns how long until the first of keys that has reached
// limit failures in its window may try again; zero when none is blocked.
func (s *Store) ThrottleBlocked(ctx context.Context, idb bun.IDB, limits map[string]int) (time.Duration, error) {
	var wait time.Duration
	for key, limit := range limits {
		var secs float64
		err := idb.NewSelect().TableExpr("login_throttle").
			ColumnExpr("EXTRACT(EPOCH FROM window_start + ?::interval - now())", fmt.Sprintf("%d seconds", int(ThrottleWindow.Seconds()))).
			Where("key = ?", key).
			Where("failures >= ?", limit).
			Where("window_start > now() - ?::interval", fmt.Sprintf("%d seconds", int(ThrottleWindow.Seconds()))).
			Scan(ctx, &secs)
		if err != nil {
			if isNoRows(err) {
				continue
			}
			return 0, fmt.Errorf("read login throttle %s: %w", key, err)
		}
		if d := time.Duration(secs * float64(time.Second)); d > wait {
			wait = d
		}
	}
	return wait, nil
}

// ThrottleFail counts one failed login against each key. A window that has
// ended starts again at one.
func (s *Store) ThrottleFail(ctx context.Context, idb bun.IDB, keys ...string) error {
	window := fmt.Sprintf("%d seconds", int(ThrottleWindow.Seconds()))
	for _, key := range keys {
		_, err := idb.NewRaw(`
			INSERT INTO login_throttle AS t (key, failures, window_start) VALUES (?, 1, now())
			ON CONFLICT (key) DO UPDATE SET
				failures = CASE WHEN t.window_start < now() - ?::interval THEN 1 ELSE t.failures + 1 END,
				window_start = CASE WHEN t.window_start < now() - ?::interval THEN now() ELSE t.window_start END`,
			key, window, window).Exec(ctx)
		if err != nil {
			return fmt.Errorf("count failed login for %s: %w", key, err)
		}
	}
	return nil
}

// ThrottleReset forgets the failures of keys (after a successful login).
func (s *Store) ThrottleReset(ctx context.Context, idb bun.IDB, keys ...string) error {
	if _, err := idb.NewDelete().TableExpr("login_throttle").Where("key IN (?)", bun.In(keys)).Exec(ctx); err != nil {
		return fmt.Errorf("reset login throttle: %w", err)
	}
	return nil
}
