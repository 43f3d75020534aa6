package db

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"
)

// PanelFigures are the payment figures the Panel shows for the last 24 hours,
// all read from small tables (hourly counts, partial indexes).
type PanelFigures struct {
	// Since is the start of the first hour counted (24 whole hours to now).
	Since time.Time
	// ByStatus counts notifications received, by status.
	ByStatus map[string]int64
	// Total is the sum of ByStatus.
	Total int64
	// Approved is the approved amount, per currency.
	Approved []CurrencyAmount
	// Hourly counts notifications per hour, oldest first, 24 values.
	Hourly []HourCount
	// Rejected counts refused deliveries.
	Rejected int64
	// PendingOld counts attempts still pendiente 30 minutes after the visit.
	PendingOld int64
	// LastAt is when the newest notification arrived (nil: none ever).
	LastAt *time.Time
}

// CurrencyAmount is an amount in one currency.
type CurrencyAmount struct {
	Currency string `bun:"currency"`
	Amount   string `bun:"amount"`
}

// HourCount is the number of notifications of one hour.
type HourCount struct {
	Hour time.Time `bun:"hour"`
	N    int64     `bun:"n"`
}

// PendingAfter is how long an attempt may stay pendiente before the Panel counts it.
const PendingAfter = 30 * time.Minute

// Panel reads the Panel's payment figures as of now.
func (s *Store) Panel(ctx context.Context, idb bun.IDB, now time.Time) (PanelFigures, error) {
	// Whole UTC hours, as the hourly table counts them (date_trunc in UTC).
	f := PanelFigures{Since: now.UTC().Truncate(time.Hour).Add(-23 * time.Hour), ByStatus: map[string]int64{}}
	var byStatus []struct {
		Status string `bun:"status"`
		N      int64  `bun:"n"`
	}
	if err := idb.NewSelect().TableExpr("gwa_webhook_hourly").ColumnExpr("status, sum(n)::bigint AS n").
		Where("hour >= ?", f.Since).GroupExpr("status").Scan(ctx, &byStatus); err != nil {
		return f, fmt.Errorf("panel: notifications by status: %w", err)
	}
	for _, r := range byStatus {
		f.ByStatus[r.Status] = r.N
		f.Total += r.N
	}
	if err := idb.NewSelect().TableExpr("gwa_webhook_hourly").ColumnExpr("currency, sum(amount)::text AS amount").
		Where("hour >= ? AND status = ? AND currency <> ''", f.Since, StatusApproved).
		GroupExpr("currency").OrderExpr("sum(n) DESC").Scan(ctx, &f.Approved); err != nil {
		return f, fmt.Errorf("panel: approved amounts: %w", err)
	}
	if err := idb.NewRaw(`SELECT h AS hour, COALESCE(sum(c.n), 0)::bigint AS n
		FROM generate_series(?::timestamptz, ?::timestamptz, interval '1 hour') AS h
		LEFT JOIN gwa_webhook_hourly c ON c.hour = h
		GROUP BY h ORDER BY h`, f.Since, now.UTC().Truncate(time.Hour)).Scan(ctx, &f.Hourly); err != nil {
		return f, fmt.Errorf("panel: notifications per hour: %w", err)
	}
	if err := idb.NewSelect().TableExpr("gwa_webhook_rejections").ColumnExpr("COALESCE(sum(n), 0)::bigint").
		Where("minute >= ?", f.Since).Scan(ctx, &f.Rejected); err != nil {
		return f, fmt.Errorf("panel: rejections: %w", err)
	}
	if err := idb.NewSelect().TableExpr("payment_attempts").ColumnExpr("count(*)").
		Where("status = ? AND created_at < ? AND created_at >= ?", AttemptPending, now.Add(-PendingAfter), f.Since).
		Scan(ctx, &f.PendingOld); err != nil {
		return f, fmt.Errorf("panel: pending attempts: %w", err)
	}
	var last []time.Time
	if err := idb.NewSelect().TableExpr("gwa_webhooks").Column("received_at").OrderExpr("id DESC").Limit(1).
		Scan(ctx, &last); err != nil {
		return f, fmt.Errorf("panel: last notification: %w", err)
	}
	if len(last) == 1 {
		f.LastAt = &last[0]
	}
	return f, nil
}

// SilenceAlertKey is the console setting of how many minutes without a
// notification, in production, the Panel warns about (0: never).
const SilenceAlertKey = "gwa_silence_alert_minutes"

// SilenceAlertMinutes reads that setting (0 when unset).
func (s *Store) SilenceAlertMinutes(ctx context.Context, idb bun.IDB) (int, error) {
	var v []string
	if err := idb.NewSelect().TableExpr("console_settings").Column("value").Where("key = ?", SilenceAlertKey).
		Scan(ctx, &v); err != nil {
		return 0, fmt.Errorf("read %s: %w", SilenceAlertKey, err)
	}
	if len(v) == 0 {
		return 0, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return 0, fmt.Errorf("read %s: %q is not a number: %w", SilenceAlertKey, v[0], err)
	}
	return n, nil
}

// SetSilenceAlertMinutes saves that setting.
func (s *Store) SetSilenceAlertMinutes(ctx context.Context, idb bun.IDB, minutes int) error {
	_, err := idb.NewRaw(`INSERT INTO console_settings (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, SilenceAlertKey, strconv.Itoa(minutes)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("save %s: %w", SilenceAlertKey, err)
	}
	return nil
}
