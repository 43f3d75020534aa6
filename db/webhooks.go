package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Webhook statuses, by the event the checkout gateway sent (CONTRACT §3).
const (
	StatusApproved   = "aprobado"
	StatusRejected   = "rechazado"
	StatusReversed   = "reversado"
	StatusChargeback = "contracargo"
	StatusUnknown    = "desconocido"

	EventSaleApproved = "SALE_APPROVED"
)

var eventStatus = map[string]string{
	EventSaleApproved: StatusApproved,
	"SALE_REJECTED":   StatusRejected,
	"SALE_REVERSED":   StatusReversed,
	"CHARGEBACK":      StatusChargeback,
}

// WebhookStatuses lists the statuses a list can filter on.
var WebhookStatuses = []string{StatusApproved, StatusRejected, StatusReversed, StatusChargeback, StatusUnknown}

// WebhookEvents lists the events the gateway documents, for the filter menu.
var WebhookEvents = []string{EventSaleApproved, "SALE_REJECTED", "SALE_REVERSED", "CHARGEBACK"}

// StatusForEvent maps a gateway event to the status shown; any other event is desconocido.
func StatusForEvent(event string) string {
	if s, ok := eventStatus[event]; ok {
		return s
	}
	return StatusUnknown
}

// outcomeRank orders outcomes: a later event never moves a reference back to a
// lower rank (a late approval after a reversal stays reversed).
var outcomeRank = map[string]int{StatusApproved: 1, StatusRejected: 1, StatusReversed: 2, StatusChargeback: 3}

// Webhook is one stored notification of the checkout gateway.
type Webhook struct {
	bun.BaseModel `bun:"table:gwa_webhooks"`

	ID             int64      `bun:"id,pk,autoincrement"`
	NotificationID string     `bun:"notification_id"`
	Event          string     `bun:"event"`
	Status         string     `bun:"status"`
	PaymentID      string     `bun:"payment_id"`
	Reference      string     `bun:"reference"`
	PayerEmail     string     `bun:"payer_email"`
	Amount         *string    `bun:"amount"`
	Currency       string     `bun:"currency"`
	GatewayStatus  string     `bun:"gateway_status"`
	EventCreatedAt *time.Time `bun:"event_created_at"`
	Environment    string     `bun:"environment"`
	Verified       bool       `bun:"verified"`
	IP             string     `bun:"ip"`
	Payload        string     `bun:"payload"`
	Processed      bool       `bun:"processed"`
	ProcessedAt    *time.Time `bun:"processed_at"`
	ReceivedAt     time.Time  `bun:"received_at,nullzero,default:now()"`
}

// WebhookRejection is a delivery refused before storing.
type WebhookRejection struct {
	bun.BaseModel `bun:"table:gwa_webhook_rejections"`

	ID         int64     `bun:"id,pk,autoincrement"`
	Reason     string    `bun:"reason"`
	IP         string    `bun:"ip"`
	BodyBytes  int       `bun:"body_bytes"`
	ReceivedAt time.Time `bun:"received_at,nullzero,default:now()"`
}

// InsertWebhook stores w unless its notification id is already stored. It
// returns the local id and whether it was a duplicate. The unique index makes
// this hold however many copies arrive at once.
func (s *Store) InsertWebhook(ctx context.Context, idb bun.IDB, w *Webhook) (duplicate bool, err error) {
	res, err := idb.NewInsert().Model(w).On("CONFLICT (notification_id) DO NOTHING").Returning("id").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("insert webhook %s: %w", w.NotificationID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return false, nil
	}
	if err := idb.NewSelect().Model((*Webhook)(nil)).Column("id").
		Where("notification_id = ?", w.NotificationID).Scan(ctx, &w.ID); err != nil {
		return true, fmt.Errorf("look up duplicate webhook %s: %w", w.NotificationID, err)
	}
	return true, nil
}

// RecordRejection counts one refused delivery.
func (s *Store) RecordRejection(ctx context.Context, idb bun.IDB, r *WebhookRejection) error {
	if _, err := idb.NewInsert().Model(r).Exec(ctx); err != nil {
		return fmt.Errorf("record webhook rejection: %w", err)
	}
	return nil
}

// Rejections returns the newest refused deliveries and how many there are in all.
func (s *Store) Rejections(ctx context.Context, idb bun.IDB, limit int) ([]WebhookRejection, int, error) {
	var rows []WebhookRejection
	total, err := idb.NewSelect().Model(&rows).OrderExpr("id DESC").Limit(limit).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook rejections: %w", err)
	}
	return rows, total, nil
}

// Webhook returns one stored notification.
func (s *Store) Webhook(ctx context.Context, idb bun.IDB, id int64) (*Webhook, error) {
	w := new(Webhook)
	err := idb.NewSelect().Model(w).Where("id = ?", id).Scan(ctx)
	if isNoRows(err) {
		return nil, fmt.Errorf("webhook %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load webhook %d: %w", id, err)
	}
	return w, nil
}

// MarkForReprocessing clears processed so the list shows it pending again.
func (s *Store) MarkForReprocessing(ctx context.Context, idb bun.IDB, id int64) error {
	res, err := idb.NewUpdate().Model((*Webhook)(nil)).Set("processed = false, processed_at = NULL").Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark webhook %d for reprocessing: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("webhook %d: %w", id, ErrNotFound)
	}
	return nil
}

// lockReference serialises, per reference, the return page and the processing
// job: whichever commits second sees the first (no approval can slip between
// "no approval yet" and "attempt stored").
func lockReference(ctx context.Context, tx bun.Tx, reference string) error {
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 7261))", reference)
	if err != nil {
		return fmt.Errorf("lock reference %q: %w", reference, err)
	}
	return nil
}

// ProcessWebhook applies one notification: the reference's outcome (by
// precedence, not arrival), pendiente attempts to pagado on an approval, and
// processed. Running it twice changes nothing more.
func (s *Store) ProcessWebhook(ctx context.Context, bdb *bun.DB, id int64) error {
	return bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		w, err := s.Webhook(ctx, tx, id)
		if err != nil {
			return err
		}
		if w.Reference != "" {
			if err := lockReference(ctx, tx, w.Reference); err != nil {
				return err
			}
			if rank, ok := outcomeRank[w.Status]; ok {
				_, err := tx.NewRaw(`
					INSERT INTO gwa_reference_outcomes AS o (reference, outcome, rank, webhook_id, event_created_at)
					VALUES (?, ?, ?, ?, ?)
					ON CONFLICT (reference) DO UPDATE SET
						outcome = EXCLUDED.outcome, rank = EXCLUDED.rank, webhook_id = EXCLUDED.webhook_id,
						event_created_at = EXCLUDED.event_created_at, updated_at = now()
					WHERE EXCLUDED.rank > o.rank
					   OR (EXCLUDED.rank = o.rank AND (COALESCE(EXCLUDED.event_created_at, '-infinity'), EXCLUDED.webhook_id)
					                                > (COALESCE(o.event_created_at, '-infinity'), o.webhook_id))`,
					w.Reference, w.Status, rank, w.ID, w.EventCreatedAt).Exec(ctx)
				if err != nil {
					return fmt.Errorf("update outcome of %q: %w", w.Reference, err)
				}
			}
			if w.Event == EventSaleApproved {
				if _, err := tx.NewUpdate().Model((*Attempt)(nil)).
					Set("status = ?, paid_at = now()", AttemptPaid).
					Where("reference = ? AND status = ?", w.Reference, AttemptPending).Exec(ctx); err != nil {
					return fmt.Errorf("mark attempts of %q paid: %w", w.Reference, err)
				}
			}
		}
		if _, err := tx.NewUpdate().Model((*Webhook)(nil)).Set("processed = true, processed_at = now()").
			Where("id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("mark webhook %d processed: %w", id, err)
		}
		return nil
	})
}

// ListFilter narrows a list: exact event and status, and q, a case-insensitive
// substring of reference, payment id or payer e-mail (of reference, e-mail or
// payment link for attempts).
type ListFilter struct {
	Event  string
	Status string
	Q      string
}

// PageSize is the number of rows a list page shows.
const PageSize = 50

// likePattern escapes q for LIKE and wraps it in %.
func likePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(q)) + "%"
}

// minSubstring is the shortest q searched as a substring: the trigram index
// needs three characters; shorter ones match a reference exactly.
const minSubstring = 3

func (f ListFilter) applyWebhooks(q *bun.SelectQuery) *bun.SelectQuery {
	if f.Event != "" {
		q = q.Where("event = ?", f.Event)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Q != "" {
		if len([]rune(f.Q)) < minSubstring {
			q = q.Where("reference = ?", f.Q)
		} else {
			q = q.Where("lower(reference || ' ' || payment_id || ' ' || payer_email) LIKE ?", likePattern(f.Q))
		}
	}
	return q
}

// Webhooks returns page (1-based) of the filtered notifications, newest first,
// and the filtered total. Only ids are sorted and skipped (an index-only scan);
// whole rows are read for the page alone. The unfiltered and event/status
// totals come from gwa_webhook_counts, not from counting rows.
func (s *Store) Webhooks(ctx context.Context, idb bun.IDB, f ListFilter, page int) ([]Webhook, int, error) {
	ids := f.applyWebhooks(idb.NewSelect().Model((*Webhook)(nil)).Column("id")).
		OrderExpr("id DESC").Limit(PageSize).Offset((page - 1) * PageSize)
	var rows []Webhook
	err := idb.NewSelect().Model(&rows).
		ExcludeColumn("payload").
		Where("id IN (?)", ids).OrderExpr("id DESC").Scan(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhooks: %w", err)
	}
	var total int
	if f.Q == "" {
		q := idb.NewSelect().TableExpr("gwa_webhook_counts").ColumnExpr("COALESCE(sum(n), 0)")
		if f.Event != "" {
			q = q.Where("event = ?", f.Event)
		}
		if f.Status != "" {
			q = q.Where("status = ?", f.Status)
		}
		err = q.Scan(ctx, &total)
	} else {
		total, err = f.applyWebhooks(idb.NewSelect().Model((*Webhook)(nil))).Count(ctx)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("count webhooks: %w", err)
	}
	return rows, total, nil
}
