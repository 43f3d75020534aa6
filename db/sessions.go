package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Session lifetimes: a session ends after SessionIdle without a request, and
// in any case SessionMax after login.
const (
	SessionIdle = 12 * time.Hour
	SessionMax  = 7 * 24 * time.Hour
	// sessionTouchEvery limits last_seen_at writes to one a minute per session.
	sessionTouchEvery = time.Minute
)

// CreateSession stores a new session for the user.
func (s *Store) CreateSession(ctx context.Context, idb bun.IDB, sess *Session) error {
	sess.ExpiresAt = time.Now().Add(SessionIdle)
	if _, err := idb.NewInsert().Model(sess).Exec(ctx); err != nil {
		return fmt.Errorf("create session for user %d: %w", sess.UserID, err)
	}
	return nil
}

// UserBySession returns the user of a live session and, when touch is set,
// extends its idle expiry (at most once a minute, to keep reads cheap).
func (s *Store) UserBySession(ctx context.Context, idb bun.IDB, tokenHash []byte, touch bool) (*User, error) {
	var row struct {
		User
		SessionCreated  time.Time `bun:"session_created"`
		SessionLastSeen time.Time `bun:"session_last_seen"`
	}
	err := idb.NewSelect().ColumnExpr(userColumns).
		ColumnExpr("s.created_at AS session_created, s.last_seen_at AS session_last_seen").
		TableExpr("sessions AS s").
		Join("JOIN users AS u ON u.id = s.user_id").
		Join("JOIN roles AS r ON r.id = u.role_id").
		Where("s.token_hash = ?", tokenHash).
		Where("s.expires_at > now()").
		Where("s.created_at > now() - ?::interval", fmt.Sprintf("%d seconds", int(SessionMax.Seconds()))).
		Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("look up session: %w", err)
	}
	if touch && time.Since(row.SessionLastSeen) > sessionTouchEvery {
		_, err := idb.NewUpdate().Model((*Session)(nil)).
			Set("last_seen_at = now()").
			Set("expires_at = now() + ?::interval", fmt.Sprintf("%d seconds", int(SessionIdle.Seconds()))).
			Where("token_hash = ?", tokenHash).
			Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("touch session: %w", err)
		}
	}
	return &row.User, nil
}

// DeleteSession ends one session (logout).
func (s *Store) DeleteSession(ctx context.Context, idb bun.IDB, tokenHash []byte) error {
	if _, err := idb.NewDelete().Model((*Session)(nil)).Where("token_hash = ?", tokenHash).Exec(ctx); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// PurgeExpired deletes ended sessions and stale login-failure counters; it
// returns how many rows went.
func (s *Store) PurgeExpired(ctx context.Context, idb bun.IDB) (int64, error) {
	res, err := idb.NewDelete().Model((*Session)(nil)).
		Where("expires_at < now() OR created_at < now() - ?::interval", fmt.Sprintf("%d seconds", int(SessionMax.Seconds()))).
		Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	res, err = idb.NewDelete().TableExpr("login_throttle").
		Where("window_start < now() - ?::interval", fmt.Sprintf("%d seconds", int(ThrottleWindow.Seconds()))).
		Exec(ctx)
	if err != nil {
		return n, fmt.Errorf("purge login throttle: %w", err)
	}
	m, _ := res.RowsAffected()
	return n + m, nil
}
