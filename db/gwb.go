package db

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// UpstreamCall is one call to the subscription gateway's API (no keys, no bodies).
type UpstreamCall struct {
	bun.BaseModel `bun:"table:gwb_upstream_calls"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Method    string    `bun:"method"`
	Path      string    `bun:"path"`
	Status    int       `bun:"status"`
	LatencyMS int       `bun:"latency_ms"`
	Error     string    `bun:"error"`
	CreatedAt time.Time `bun:"created_at,nullzero,default:now()"`
}

// RecordUpstreamCall logs one call.
func (s *Store) RecordUpstreamCall(ctx context.Context, idb bun.IDB, call *UpstreamCall) error {
	if _, err := idb.NewInsert().Model(call).Exec(ctx); err != nil {
		return fmt.Errorf("record upstream call: %w", err)
	}
	return nil
}

// UpstreamCalls returns the latest calls, newest first.
func (s *Store) UpstreamCalls(ctx context.Context, idb bun.IDB, limit int) ([]UpstreamCall, error) {
	var rows []UpstreamCall
	if err := idb.NewSelect().Model(&rows).OrderExpr("id DESC").Limit(limit).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list upstream calls: %w", err)
	}
	return rows, nil
}

// APIToken authorises calls to /v1; only a hash of the token is stored.
type APIToken struct {
	bun.BaseModel `bun:"table:api_tokens"`

	ID         int64      `bun:"id,pk,autoincrement"`
	Name       string     `bun:"name"`
	TokenHash  []byte     `bun:"token_hash"`
	Prefix     string     `bun:"prefix"`
	CreatedBy  *int64     `bun:"created_by"`
	CreatedAt  time.Time  `bun:"created_at,nullzero,default:now()"`
	LastUsedAt *time.Time `bun:"last_used_at"`
	RevokedAt  *time.Time `bun:"revoked_at"`
}

// CreateAPIToken stores a new token.
func (s *Store) CreateAPIToken(ctx context.Context, idb bun.IDB, t *APIToken) error {
	if _, err := idb.NewInsert().Model(t).Exec(ctx); err != nil {
		return fmt.Errorf("create api token %q: %w", t.Name, err)
	}
	return nil
}

// APITokens lists tokens, newest first.
func (s *Store) APITokens(ctx context.Context, idb bun.IDB) ([]APIToken, error) {
	var rows []APIToken
	if err := idb.NewSelect().Model(&rows).OrderExpr("id DESC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list api tokens: %w", err)
	}
	return rows, nil
}

// RevokeAPIToken ends a token; revoking twice is harmless.
func (s *Store) RevokeAPIToken(ctx context.Context, idb bun.IDB, id int64) error {
	res, err := idb.NewUpdate().Model((*APIToken)(nil)).Set("revoked_at = COALESCE(revoked_at, now())").Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("revoke api token %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("api token %d: %w", id, ErrNotFound)
	}
	return nil
}

// UseAPIToken returns the live token with that hash and notes its use (at
// most once a minute, to keep calls cheap).
func (s *Store) UseAPIToken(ctx context.Context, idb bun.IDB, hash []byte) (*APIToken, error) {
	t := new(APIToken)
	err := idb.NewSelect().Model(t).Where("token_hash = ? AND revoked_at IS NULL", hash).Scan(ctx)
	if isNoRows(err) {
		return nil, fmt.Errorf("api token: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("look up api token: %w", err)
	}
	if t.LastUsedAt == nil || time.Since(*t.LastUsedAt) > time.Minute {
		if _, err := idb.NewUpdate().Model(t).Set("last_used_at = now()").WherePK().Exec(ctx); err != nil {
			return nil, fmt.Errorf("note api token use: %w", err)
		}
	}
	return t, nil
}

// IdempotencyState is what ClaimIdempotencyKey found.
type IdempotencyState int

// The outcomes of claiming a key.
const (
	// IdempotencyClaimed: the key is new (or abandoned); the caller makes the call.
	IdempotencyClaimed IdempotencyState = iota
	// IdempotencyReplay: a response is stored; the caller returns it.
	IdempotencyReplay
	// IdempotencyInProgress: another request with the key has not finished.
	IdempotencyInProgress
	// IdempotencyMismatch: the key was used with another request body.
	IdempotencyMismatch
)

// IdempotentResponse is a stored response to replay.
type IdempotentResponse struct {
	Status      int    `bun:"status"`
	ContentType string `bun:"content_type"`
	Body        []byte `bun:"body"`
}

// idempotencyAbandoned is how long a claimed key without a response may wait
// before another request takes it over (its first holder died mid-call).
const idempotencyAbandoned = time.Minute

// ClaimIdempotencyKey claims key for a request whose body hashes to hash.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, idb bun.IDB, key string, hash []byte) (IdempotencyState, *IdempotentResponse, error) {
	res, err := idb.NewRaw(`INSERT INTO gwb_idempotency (key, request_hash) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`, key, hash).Exec(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("claim idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return IdempotencyClaimed, nil, nil
	}
	var row struct {
		IdempotentResponse
		RequestHash []byte    `bun:"request_hash"`
		CreatedAt   time.Time `bun:"created_at"`
		Done        bool      `bun:"done"`
	}
	err = idb.NewRaw(`SELECT request_hash, COALESCE(status, 0) AS status, content_type, body, created_at, status IS NOT NULL AS done
		FROM gwb_idempotency WHERE key = ?`, key).Scan(ctx, &row)
	if err != nil {
		return 0, nil, fmt.Errorf("read idempotency key: %w", err)
	}
	switch {
	case !bytes.Equal(row.RequestHash, hash):
		return IdempotencyMismatch, nil, nil
	case row.Done:
		return IdempotencyReplay, &row.IdempotentResponse, nil
	}
	res, err = idb.NewRaw(`UPDATE gwb_idempotency SET created_at = now()
		WHERE key = ? AND status IS NULL AND created_at < now() - ?::interval`,
		key, fmt.Sprintf("%d seconds", int(idempotencyAbandoned.Seconds()))).Exec(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("take over idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return IdempotencyClaimed, nil, nil
	}
	return IdempotencyInProgress, nil, nil
}

// CompleteIdempotencyKey stores the response of a claimed key.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, idb bun.IDB, key string, r IdempotentResponse) error {
	_, err := idb.NewRaw(`UPDATE gwb_idempotency SET status = ?, content_type = ?, body = ? WHERE key = ?`,
		r.Status, r.ContentType, r.Body, key).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store idempotent response: %w", err)
	}
	return nil
}

// ReleaseIdempotencyKey forgets a claimed key whose call got no response
// (upstream down or slow), so the client can retry with it.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, idb bun.IDB, key string) error {
	if _, err := idb.NewRaw(`DELETE FROM gwb_idempotency WHERE key = ? AND status IS NULL`, key).Exec(ctx); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// Retention of the logs that grow with traffic.
const (
	IdempotencyKeyTTL = 24 * time.Hour
	CallLogRetention  = 30 * 24 * time.Hour
)

// PurgePaymentLogs deletes idempotency keys older than a day and upstream calls
// and webhook rejections older than 30 days; it returns how many rows went.
func (s *Store) PurgePaymentLogs(ctx context.Context, idb bun.IDB) (int64, error) {
	var total int64
	for _, q := range []struct {
		table string
		age   time.Duration
		col   string
	}{
		{"gwb_idempotency", IdempotencyKeyTTL, "created_at"},
		{"gwb_upstream_calls", CallLogRetention, "created_at"},
		{"gwa_webhook_rejections", CallLogRetention, "minute"},
		{"tarjetas_llamadas", CallLogRetention, "created_at"},
	} {
		res, err := idb.NewDelete().TableExpr(q.table).
			Where("? < now() - ?::interval", bun.Ident(q.col), fmt.Sprintf("%d seconds", int(q.age.Seconds()))).Exec(ctx)
		if err != nil {
			return total, fmt.Errorf("purge %s: %w", q.table, err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}
