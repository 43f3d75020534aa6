package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
	ReceivedAt     time.Time  `bun:"received_at,nullzero,default:now()"`

	// Processed and ProcessedAt come from gwa_webhook_processed (see withProcessed).
	Processed   bool       `bun:"processed,scanonly"`
	ProcessedAt *time.Time `bun:"processed_at,scanonly"`
}

// withProcessed adds whether each notification was processed, and when.
func withProcessed(q *bun.SelectQuery) *bun.SelectQuery {
	return q.ColumnExpr("p.webhook_id IS NOT NULL AS processed, p.processed_at").
		Join("LEFT JOIN gwa_webhook_processed AS p ON p.webhook_id = webhook.id")
}

// WebhookRejections counts the deliveries refused before storing in one
// minute, for one reason, from one IP. No body is kept.
type WebhookRejections struct {
	bun.BaseModel `bun:"table:gwa_webhook_rejections,alias:r"`

	Minute    time.Time `bun:"minute,pk"`
	Reason    string    `bun:"reason,pk"`
	IP        string    `bun:"ip,pk"`
	Count     int64     `bun:"n"`
	BodyBytes int64     `bun:"body_bytes"`
	LastAt    time.Time `bun:"last_at"`
}

// PgxQuerier runs a pgx query: a pool, a connection or a transaction.
type PgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// insertWebhooksSQL takes one array per column, so every batch size runs the
// same statement: pgx prepares it once per connection and PostgreSQL reuses
// its plan.
const insertWebhooksSQL = `
INSERT INTO gwa_webhooks (notification_id, event, status, payment_id, reference, payer_email, amount,
    currency, gateway_status, event_created_at, environment, verified, ip, payload)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::numeric[],
    $8::text[], $9::text[], $10::timestamptz[], $11::text[], $12::boolean[], $13::text[], $14::text[])
ON CONFLICT (notification_id) DO NOTHING
RETURNING id, notification_id`

// InsertWebhooks stores a batch of notifications in one statement, skipping
// those whose notification id is already stored (or repeated earlier in the
// batch). It sets each one's local id and reports which were duplicates. The
// unique index makes this hold however many copies arrive at once.
//
// It runs on pgx, unlike the rest of the Store: the webhook receiver commits
// its rows and their River job in one pgx transaction, where River's insert is
// a prepared statement (on pgdriver PostgreSQL plans it again for every batch;
// see the README's performance table).
func (s *Store) InsertWebhooks(ctx context.Context, q PgxQuerier, ws []*Webhook) (duplicate []bool, err error) {
	n := len(ws)
	notificationID, event, status, paymentID := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	reference, payerEmail, amount, currency := make([]string, n), make([]string, n), make([]*string, n), make([]string, n)
	gatewayStatus, eventCreatedAt, environment := make([]string, n), make([]*time.Time, n), make([]string, n)
	verified, ip, payload := make([]bool, n), make([]string, n), make([]string, n)
	for i, w := range ws {
		notificationID[i], event[i], status[i], paymentID[i] = w.NotificationID, w.Event, w.Status, w.PaymentID
		reference[i], payerEmail[i], amount[i], currency[i] = w.Reference, w.PayerEmail, w.Amount, w.Currency
		gatewayStatus[i], eventCreatedAt[i], environment[i] = w.GatewayStatus, w.EventCreatedAt, w.Environment
		verified[i], ip[i], payload[i] = w.Verified, w.IP, w.Payload
	}
	rows, err := q.Query(ctx, insertWebhooksSQL, notificationID, event, status, paymentID, reference, payerEmail,
		amount, currency, gatewayStatus, eventCreatedAt, environment, verified, ip, payload)
	if err != nil {
		return nil, fmt.Errorf("insert %d webhooks: %w", n, err)
	}
	fresh, err := scanIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("insert %d webhooks: %w", n, err)
	}
	duplicate = make([]bool, n)
	var lookup []string
	for i, w := range ws {
		if id, ok := fresh[w.NotificationID]; ok {
			w.ID = id
			delete(fresh, w.NotificationID) // a later copy in this batch is a duplicate
			continue
		}
		duplicate[i] = true
		lookup = append(lookup, w.NotificationID)
	}
	if len(lookup) == 0 {
		return duplicate, nil
	}
	rows, err = q.Query(ctx, `SELECT id, notification_id FROM gwa_webhooks WHERE notification_id = ANY($1)`, lookup)
	if err != nil {
		return nil, fmt.Errorf("look up duplicate webhooks: %w", err)
	}
	existing, err := scanIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("look up duplicate webhooks: %w", err)
	}
	for i, w := range ws {
		if duplicate[i] {
			w.ID = existing[w.NotificationID]
		}
	}
	return duplicate, nil
}

// scanIDs reads (id, notification_id) rows into a map by notification id.
func scanIDs(rows pgx.Rows) (map[string]int64, error) {
	ids := make(map[string]int64)
	var id int64
	var notificationID string
	_, err := pgx.ForEachRow(rows, []any{&id, &notificationID}, func() error {
		ids[notificationID] = id
		return nil
	})
	return ids, err
}

// InsertWebhook is InsertWebhooks for one notification.
func (s *Store) InsertWebhook(ctx context.Context, q PgxQuerier, w *Webhook) (duplicate bool, err error) {
	dups, err := s.InsertWebhooks(ctx, q, []*Webhook{w})
	if err != nil {
		return false, err
	}
	return dups[0], nil
}

// AddRejections adds counts of refused deliveries to the stored ones, in one
// statement (the receiver aggregates them in memory and flushes them here).
func (s *Store) AddRejections(ctx context.Context, idb bun.IDB, rows []WebhookRejections) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := idb.NewInsert().Model(&rows).
		On("CONFLICT (minute, reason, ip) DO UPDATE").
		Set("n = r.n + EXCLUDED.n, body_bytes = r.body_bytes + EXCLUDED.body_bytes, last_at = greatest(r.last_at, EXCLUDED.last_at)").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("add %d webhook rejection counts: %w", len(rows), err)
	}
	return nil
}

// Rejections returns the newest counts of refused deliveries (by minute,
// reason and IP) and how many deliveries were refused in all.
func (s *Store) Rejections(ctx context.Context, idb bun.IDB, limit int) ([]WebhookRejections, int64, error) {
	var rows []WebhookRejections
	if err := idb.NewSelect().Model(&rows).OrderExpr("last_at DESC").Limit(limit).Scan(ctx); err != nil {
		return nil, 0, fmt.Errorf("list webhook rejections: %w", err)
	}
	var total int64
	if err := idb.NewSelect().Model((*WebhookRejections)(nil)).ColumnExpr("COALESCE(sum(n), 0)").Scan(ctx, &total); err != nil {
		return nil, 0, fmt.Errorf("count webhook rejections: %w", err)
	}
	return rows, total, nil
}

// Webhook returns one stored notification.
func (s *Store) Webhook(ctx context.Context, idb bun.IDB, id int64) (*Webhook, error) {
	w := new(Webhook)
	err := withProcessed(idb.NewSelect().Model(w).ColumnExpr("webhook.*")).Where("webhook.id = ?", id).Scan(ctx)
	if isNoRows(err) {
		return nil, fmt.Errorf("webhook %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load webhook %d: %w", id, err)
	}
	return w, nil
}

// MarkForReprocessing forgets that a notification was processed, so the list
// shows it pending again until its new job runs.
func (s *Store) MarkForReprocessing(ctx context.Context, idb bun.IDB, id int64) error {
	if _, err := idb.NewDelete().TableExpr("gwa_webhook_processed").Where("webhook_id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("mark webhook %d for reprocessing: %w", id, err)
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

// PgxTxStarter begins a pgx transaction: a pool or a connection.
type PgxTxStarter interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// lockReferencesSQL takes the per-reference advisory lock (the one the return
// page takes, see lockReference) of every reference in a batch, in the order of
// the lock keys, so two batches sharing references cannot deadlock. The sorted
// subquery makes the aggregate call the function in that order.
const lockReferencesSQL = `
SELECT count(pg_advisory_xact_lock(k)) FROM (
    SELECT DISTINCT hashtextextended(reference, 7261) AS k FROM gwa_webhooks
    WHERE id = ANY($1) AND reference <> '' ORDER BY k) AS keys`

// applyWebhooksSQL applies a batch in one statement, on a snapshot taken after
// the locks: for each reference the batch's best outcome (highest rank, then
// the gateway's time, then the local id) replaces the stored one only if it
// ranks above it (a late approval never undoes a reversal); approvals move
// pendiente attempts of their reference to pagado; every notification is
// recorded as processed. $2 and $3 are the outcome ranks (outcomeRank).
const applyWebhooksSQL = `
WITH w AS (
    SELECT id, reference, status, event, event_created_at FROM gwa_webhooks WHERE id = ANY($1)
), ranked AS (
    SELECT DISTINCT ON (w.reference) w.reference, w.status, r.rank, w.id, w.event_created_at
    FROM w JOIN unnest($2::text[], $3::smallint[]) AS r (status, rank) ON r.status = w.status
    WHERE w.reference <> ''
    ORDER BY w.reference, r.rank DESC, COALESCE(w.event_created_at, '-infinity') DESC, w.id DESC
), outcome AS (
    INSERT INTO gwa_reference_outcomes AS o (reference, outcome, rank, webhook_id, event_created_at)
    SELECT reference, status, rank, id, event_created_at FROM ranked
    ON CONFLICT (reference) DO UPDATE SET
        outcome = EXCLUDED.outcome, rank = EXCLUDED.rank, webhook_id = EXCLUDED.webhook_id,
        event_created_at = EXCLUDED.event_created_at, updated_at = now()
    WHERE EXCLUDED.rank > o.rank
       OR (EXCLUDED.rank = o.rank AND (COALESCE(EXCLUDED.event_created_at, '-infinity'), EXCLUDED.webhook_id)
                                    > (COALESCE(o.event_created_at, '-infinity'), o.webhook_id))
), paid AS (
    UPDATE payment_attempts SET status = 'pagado', paid_at = now()
    WHERE status = 'pendiente' AND reference IN (SELECT reference FROM w WHERE event = 'SALE_APPROVED' AND reference <> '')
)
INSERT INTO gwa_webhook_processed (webhook_id) SELECT id FROM w
ON CONFLICT (webhook_id) DO UPDATE SET processed_at = now()`

// rankStatuses and rankValues are outcomeRank as the two arrays applyWebhooksSQL takes.
var rankStatuses, rankValues = func() ([]string, []int16) {
	var statuses []string
	var ranks []int16
	for status, rank := range outcomeRank {
		statuses, ranks = append(statuses, status), append(ranks, int16(rank))
	}
	return statuses, ranks
}()

// ProcessWebhooks applies a batch of notifications in one transaction: the
// outcome of each reference (by precedence, never by arrival), pendiente
// attempts to pagado on an approval, and processed. Ids that no longer exist
// are skipped; running it twice changes nothing more.
//
// It runs on pgx with set-based statements of fixed text, so PostgreSQL
// prepares them once per connection: this is the hot half of the ingest
// pipeline (the receiver commits deliveries in batches, each with one job).
func (s *Store) ProcessWebhooks(ctx context.Context, db PgxTxStarter, ids []int64) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		// Locks first, in a statement of their own: the next statement's
		// snapshot then sees every attempt a return page committed before.
		if _, err := tx.Exec(ctx, lockReferencesSQL, ids); err != nil {
			return fmt.Errorf("lock references of %d webhooks: %w", len(ids), err)
		}
		if _, err := tx.Exec(ctx, applyWebhooksSQL, ids, rankStatuses, rankValues); err != nil {
			return fmt.Errorf("apply %d webhooks: %w", len(ids), err)
		}
		return nil
	})
}

// ListFilter narrows a list: exact event and status, and q, the beginning of
// a reference or payment id (as typed, or in capitals) or of a payer e-mail
// (any case). Prefix search runs on btree indexes, cheap to keep up at every
// insert, and finds what operators paste: a whole or partial reference or id.
type ListFilter struct {
	Event  string
	Status string
	Q      string
	// Reference is one whole reference, exactly (the links between a
	// reference's attempts and notifications).
	Reference string
}

// Any reports whether the filter narrows the list at all.
func (f ListFilter) Any() bool {
	return f.Event != "" || f.Status != "" || f.Q != "" || f.Reference != ""
}

// PageSize is the number of rows a list page shows.
const PageSize = 50

// prefixPattern escapes q for LIKE and makes it a prefix match.
func prefixPattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(q) + "%"
}

func (f ListFilter) applyWebhooks(q *bun.SelectQuery) *bun.SelectQuery {
	if f.Event != "" {
		q = q.Where("event = ?", f.Event)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Q != "" {
		q = wherePrefix(q, f.Q, []string{"reference", "payment_id"}, "payer_email")
	}
	if f.Reference != "" {
		q = q.Where("reference = ?", f.Reference)
	}
	return q
}

// wherePrefix keeps rows where text starts one of idCols (as typed, or in
// capitals: references and ids are usually upper case) or emailCol (any case).
func wherePrefix(q *bun.SelectQuery, text string, idCols []string, emailCol string) *bun.SelectQuery {
	p, upper := prefixPattern(text), prefixPattern(strings.ToUpper(text))
	return q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		for _, col := range idCols {
			q = q.WhereOr("? LIKE ?", bun.Ident(col), p).WhereOr("? LIKE ?", bun.Ident(col), upper)
		}
		return q.WhereOr("lower(?) LIKE ?", bun.Ident(emailCol), strings.ToLower(p))
	})
}

// webhookBucket is the id range one row of gwa_webhook_counts covers; it must
// match the trigger in the migration.
const webhookBucket = 10000

type bucketCount struct {
	Bucket int64 `bun:"bucket"`
	N      int   `bun:"n"`
}

// Webhooks returns page (1-based) of the filtered notifications, newest first,
// and the filtered total, both from one snapshot.
//
// Without q or a reference, nothing grows with the page number: the exact counts per id
// bucket (gwa_webhook_counts, about 100 rows a million) say which bucket holds
// the page's first row, and only the rest of that bucket is skipped (fewer than
// 10,000 index entries). With q or a reference, matches are few, and skipped plainly. Either
// way only ids are sorted and skipped; whole rows are read for the page alone.
func (s *Store) Webhooks(ctx context.Context, bdb *bun.DB, f ListFilter, page int) ([]Webhook, int, error) {
	var rows []Webhook
	total := 0
	err := bdb.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		offset := (page - 1) * PageSize
		ids := f.applyWebhooks(tx.NewSelect().Model((*Webhook)(nil)).Column("id")).OrderExpr("id DESC").Limit(PageSize)
		if f.Q != "" || f.Reference != "" {
			n, err := f.applyWebhooks(tx.NewSelect().Model((*Webhook)(nil))).Count(ctx)
			if err != nil {
				return fmt.Errorf("count webhooks: %w", err)
			}
			total = n
			ids = ids.Offset(offset)
		} else {
			var buckets []bucketCount
			q := tx.NewSelect().TableExpr("gwa_webhook_counts").ColumnExpr("bucket, sum(n) AS n").
				GroupExpr("bucket").OrderExpr("bucket DESC")
			if f.Event != "" {
				q = q.Where("event = ?", f.Event)
			}
			if f.Status != "" {
				q = q.Where("status = ?", f.Status)
			}
			if err := q.Scan(ctx, &buckets); err != nil {
				return fmt.Errorf("count webhooks: %w", err)
			}
			skipped, found := 0, false
			for _, b := range buckets {
				if !found && skipped+b.N > offset {
					ids = ids.Where("id < ?", (b.Bucket+1)*webhookBucket).Offset(offset - skipped)
					found = true
				}
				if !found {
					skipped += b.N
				}
				total += b.N
			}
			if !found {
				return nil // past the last page
			}
		}
		err := withProcessed(tx.NewSelect().Model(&rows).ExcludeColumn("payload")).
			Where("webhook.id IN (?)", ids).OrderExpr("webhook.id DESC").Scan(ctx)
		if err != nil {
			return fmt.Errorf("list webhooks: %w", err)
		}
		return nil
	})
	return rows, total, err
}
