package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// CardResources are the virtual-card API's resources the proxy serves (CONTRACT §7).
var CardResources = []string{"usuarios", "tarjetas", "membresias", "pagos", "transacciones", "logs", "mini-sitios"}

// CardCall is one call to the virtual-card API: who, what, the outcome.
type CardCall struct {
	bun.BaseModel `bun:"table:tarjetas_llamadas"`

	ID        int64     `bun:"id,pk,autoincrement"`
	UserID    *int64    `bun:"user_id"`
	UserEmail string    `bun:"user_email"`
	Method    string    `bun:"method"`
	Path      string    `bun:"path"`
	Status    int       `bun:"status"`
	LatencyMS int       `bun:"latency_ms"`
	Error     string    `bun:"error"`
	CreatedAt time.Time `bun:"created_at,nullzero,default:now()"`
}

// RecordCardCall logs one call.
func (s *Store) RecordCardCall(ctx context.Context, idb bun.IDB, call *CardCall) error {
	if _, err := idb.NewInsert().Model(call).Exec(ctx); err != nil {
		return fmt.Errorf("record card API call: %w", err)
	}
	return nil
}

// CardCalls returns the latest calls, newest first.
func (s *Store) CardCalls(ctx context.Context, idb bun.IDB, limit int) ([]CardCall, error) {
	var rows []CardCall
	if err := idb.NewSelect().Model(&rows).OrderExpr("id DESC").Limit(limit).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list card API calls: %w", err)
	}
	return rows, nil
}

// CardCallFigures are the Panel's figures of the card API since a time.
type CardCallFigures struct {
	Calls  int `bun:"calls"`
	Failed int `bun:"failed"`
	// P95MS is the 95th percentile latency of the answered calls (0: none).
	P95MS int `bun:"p95_ms"`
}

// CardCallsSince counts the calls since t; a failure is no answer or a 5xx.
func (s *Store) CardCallsSince(ctx context.Context, idb bun.IDB, t time.Time) (CardCallFigures, error) {
	var f CardCallFigures
	err := idb.NewRaw(`SELECT count(*) AS calls, count(*) FILTER (WHERE status = 0 OR status >= 500) AS failed,
			COALESCE(percentile_disc(0.95) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE status > 0), 0) AS p95_ms
		FROM tarjetas_llamadas WHERE created_at >= ?`, t).Scan(ctx, &f)
	if err != nil {
		return f, fmt.Errorf("card API figures: %w", err)
	}
	return f, nil
}
