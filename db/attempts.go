package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Payment attempt statuses (CONTRACT §3).
const (
	AttemptPending = "pendiente"
	AttemptPaid    = "pagado"
)

// AttemptStatuses lists the statuses an attempts list can filter on.
var AttemptStatuses = []string{AttemptPending, AttemptPaid}

// Attempt is one visit of a payer to the checkout return page.
type Attempt struct {
	bun.BaseModel `bun:"table:payment_attempts,alias:attempt"`

	ID          int64           `bun:"id,pk,autoincrement"`
	Reference   string          `bun:"reference"`
	PaymentLink string          `bun:"payment_link"`
	Email       string          `bun:"email"`
	Status      string          `bun:"status"`
	IP          string          `bun:"ip"`
	UserAgent   string          `bun:"user_agent"`
	Params      json.RawMessage `bun:"params,type:jsonb"`
	CreatedAt   time.Time       `bun:"created_at,nullzero,default:now()"`
	PaidAt      *time.Time      `bun:"paid_at"`

	// Outcome is the reference's latest gateway outcome (list only).
	Outcome string `bun:"outcome,scanonly"`
}

// RecordAttempt stores a visit. It starts pagado when the gateway already
// approved that reference (the approval arrived before the payer came back).
func (s *Store) RecordAttempt(ctx context.Context, bdb *bun.DB, a *Attempt) error {
	return bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		a.Status = AttemptPending
		if a.Reference != "" {
			if err := lockReference(ctx, tx, a.Reference); err != nil {
				return err
			}
			approved, err := tx.NewSelect().Model((*Webhook)(nil)).
				Where("reference = ? AND event = ?", a.Reference, EventSaleApproved).Exists(ctx)
			if err != nil {
				return fmt.Errorf("look for approval of %q: %w", a.Reference, err)
			}
			if approved {
				a.Status = AttemptPaid
				now := time.Now()
				a.PaidAt = &now
			}
		}
		if _, err := tx.NewInsert().Model(a).Exec(ctx); err != nil {
			return fmt.Errorf("record payment attempt: %w", err)
		}
		return nil
	})
}

// ReferencePaid reports whether a reference is paid: an attempt is pagado or
// the gateway approved it.
func (s *Store) ReferencePaid(ctx context.Context, idb bun.IDB, reference string) (bool, error) {
	var paid bool
	err := idb.NewRaw(`SELECT EXISTS (SELECT 1 FROM payment_attempts WHERE reference = ? AND status = ?)
		OR EXISTS (SELECT 1 FROM gwa_webhooks WHERE reference = ? AND event = ?)`,
		reference, AttemptPaid, reference, EventSaleApproved).Scan(ctx, &paid)
	if err != nil {
		return false, fmt.Errorf("is %q paid: %w", reference, err)
	}
	return paid, nil
}

func (f ListFilter) applyAttempts(q *bun.SelectQuery) *bun.SelectQuery {
	if f.Status != "" {
		q = q.Where("a.status = ?", f.Status)
	}
	if f.Q != "" {
		q = wherePrefix(q, f.Q, []string{"a.reference"}, "a.email")
	}
	if f.Reference != "" {
		q = q.Where("a.reference = ?", f.Reference)
	}
	return q
}

// withOutcome adds each attempt's reference outcome ("" when none yet).
func withOutcome(q *bun.SelectQuery) *bun.SelectQuery {
	return q.ColumnExpr("attempt.*, COALESCE(o.outcome, '') AS outcome").
		Join("LEFT JOIN gwa_reference_outcomes AS o ON o.reference = attempt.reference")
}

// Attempts returns page (1-based) of the filtered attempts, newest first, with
// each reference's outcome, and the filtered total.
func (s *Store) Attempts(ctx context.Context, idb bun.IDB, f ListFilter, page int) ([]Attempt, int, error) {
	ids := f.applyAttempts(idb.NewSelect().TableExpr("payment_attempts AS a").Column("a.id")).
		OrderExpr("a.id DESC").Limit(PageSize).Offset((page - 1) * PageSize)
	var rows []Attempt
	err := withOutcome(idb.NewSelect().Model(&rows)).
		Where("attempt.id IN (?)", ids).OrderExpr("attempt.id DESC").Scan(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list payment attempts: %w", err)
	}
	total, err := f.applyAttempts(idb.NewSelect().TableExpr("payment_attempts AS a")).Count(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("count payment attempts: %w", err)
	}
	return rows, total, nil
}

// Attempt returns one attempt with its reference's outcome.
func (s *Store) Attempt(ctx context.Context, idb bun.IDB, id int64) (*Attempt, error) {
	a := new(Attempt)
	err := withOutcome(idb.NewSelect().Model(a)).Where("attempt.id = ?", id).Scan(ctx)
	if isNoRows(err) {
		return nil, fmt.Errorf("payment attempt %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load payment attempt %d: %w", id, err)
	}
	return a, nil
}
