package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"pasarela/db"
	"pasarela/db/dbtest"
	"pasarela/db/secretbox"
)

func webhook(id, event, reference string, at time.Time) *db.Webhook {
	return &db.Webhook{
		NotificationID: id, Event: event, Status: db.StatusForEvent(event), Reference: reference,
		EventCreatedAt: &at, Environment: db.EnvTest, Payload: `{}`,
	}
}

// store inserts and processes a notification, as the receiver and the job do.
func deliver(t *testing.T, env *dbtest.Env, w *db.Webhook) {
	t.Helper()
	s := &db.Store{}
	dup, err := s.InsertWebhook(context.Background(), env.Pool, w)
	require.NoError(t, err)
	require.False(t, dup)
	require.NoError(t, s.ProcessWebhooks(context.Background(), env.Pool, []int64{w.ID}))
}

func visit(t *testing.T, env *dbtest.Env, reference string) *db.Attempt {
	t.Helper()
	a := &db.Attempt{Reference: reference, Params: json.RawMessage(`{}`)}
	require.NoError(t, (&db.Store{}).RecordAttempt(context.Background(), env.DB, a))
	return a
}

func attempts(t *testing.T, env *dbtest.Env, f db.ListFilter) []db.Attempt {
	t.Helper()
	rows, total, err := (&db.Store{}).Attempts(context.Background(), env.DB, f, 1)
	require.NoError(t, err)
	require.Len(t, rows, total)
	return rows
}

func TestStatusForEventMapsTheFourEventsAndNothingElse(t *testing.T) {
	cases := map[string]string{
		"SALE_APPROVED": "aprobado", "SALE_REJECTED": "rechazado", "SALE_REVERSED": "reversado",
		"CHARGEBACK": "contracargo", "REFUND_CREATED": "desconocido", "sale_approved": "desconocido", "": "desconocido",
	}
	for event, want := range cases {
		require.Equal(t, want, db.StatusForEvent(event), event)
	}
}

func TestAnApprovalBeforeTheReturnVisitStartsTheAttemptPaid(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	deliver(t, env, webhook("evt-1", "SALE_APPROVED", "ORD-1", time.Now()))
	a := visit(t, env, "ORD-1")
	require.Equal(t, db.AttemptPaid, a.Status)
	require.NotNil(t, a.PaidAt)

	paid, err := (&db.Store{}).ReferencePaid(context.Background(), env.DB, "ORD-1")
	require.NoError(t, err)
	require.True(t, paid)
}

func TestTwoReturnVisitsAndOneApprovalMakeBothPaid(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	visit(t, env, "ORD-2")
	visit(t, env, "ORD-2")
	visit(t, env, "ORD-other")
	require.Equal(t, db.AttemptPending, attempts(t, env, db.ListFilter{Q: "ORD-2"})[0].Status)

	deliver(t, env, webhook("evt-2", "SALE_APPROVED", "ORD-2", time.Now()))
	rows := attempts(t, env, db.ListFilter{Q: "ORD-2"})
	require.Len(t, rows, 2)
	for _, a := range rows {
		require.Equal(t, db.AttemptPaid, a.Status)
		require.Equal(t, db.StatusApproved, a.Outcome)
	}
	require.Equal(t, db.AttemptPending, attempts(t, env, db.ListFilter{Q: "ORD-other"})[0].Status)
}

func TestAReversalBeforeTheApprovalKeepsTheOutcomeReversed(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	visit(t, env, "ORD-3")
	t0 := time.Now().Add(-time.Hour)
	// The gateway approved, then reversed; the reversal arrives first.
	deliver(t, env, webhook("evt-rev", "SALE_REVERSED", "ORD-3", t0.Add(time.Minute)))
	deliver(t, env, webhook("evt-app", "SALE_APPROVED", "ORD-3", t0))

	a := attempts(t, env, db.ListFilter{Q: "ORD-3"})[0]
	require.Equal(t, db.StatusReversed, a.Outcome, "a late approval does not move the outcome back")
	require.Equal(t, db.AttemptPaid, a.Status, "the approval still records that the payer paid")

	// A chargeback outranks everything; a later rejection does not undo it.
	deliver(t, env, webhook("evt-cb", "CHARGEBACK", "ORD-3", t0.Add(2*time.Minute)))
	deliver(t, env, webhook("evt-rej", "SALE_REJECTED", "ORD-3", t0.Add(3*time.Minute)))
	require.Equal(t, db.StatusChargeback, attempts(t, env, db.ListFilter{Q: "ORD-3"})[0].Outcome)
}

func TestSameRankOutcomesFollowTheGatewaysTimeNotArrival(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	visit(t, env, "ORD-4")
	t0 := time.Now()
	deliver(t, env, webhook("evt-late", "SALE_APPROVED", "ORD-4", t0.Add(time.Minute)))
	deliver(t, env, webhook("evt-early", "SALE_REJECTED", "ORD-4", t0))
	require.Equal(t, db.StatusApproved, attempts(t, env, db.ListFilter{Q: "ORD-4"})[0].Outcome)
}

func TestProcessingTwiceChangesNothingMore(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	visit(t, env, "ORD-5")
	w := webhook("evt-5", "SALE_APPROVED", "ORD-5", time.Now())
	deliver(t, env, w)
	require.NoError(t, (&db.Store{}).ProcessWebhooks(context.Background(), env.Pool, []int64{w.ID, 999999}),
		"a second run, and an id that no longer exists, are harmless")
	got, err := (&db.Store{}).Webhook(context.Background(), env.DB, w.ID)
	require.NoError(t, err)
	require.True(t, got.Processed)
	require.Equal(t, db.AttemptPaid, attempts(t, env, db.ListFilter{Q: "ORD-5"})[0].Status)
}

// permutations returns every order of xs.
func permutations[T any](xs []T) [][]T {
	if len(xs) <= 1 {
		return [][]T{append([]T(nil), xs...)}
	}
	var out [][]T
	for i := range xs {
		rest := append(append([]T(nil), xs[:i]...), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]T{xs[i]}, p...))
		}
	}
	return out
}

// The outcome depends on what the gateway said and when, never on the order of
// arrival nor on how deliveries were grouped into processing batches.
func TestEveryArrivalOrderAndBatchingGivesTheSameOutcome(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	s := &db.Store{}
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour)
	type event struct {
		name string
		at   time.Duration
	}
	// Approved, then rejected again (same rank, later), reversed, charged back.
	events := []event{{"SALE_APPROVED", 0}, {"SALE_REJECTED", time.Minute}, {"SALE_REVERSED", 2 * time.Minute}, {"CHARGEBACK", 3 * time.Minute}}
	// Without the chargeback the reversal wins; with only the first two, the
	// later same-rank rejection wins.
	subsets := []struct {
		events []event
		want   string
	}{
		{events, db.StatusChargeback},
		{events[:3], db.StatusReversed},
		{events[:2], db.StatusRejected},
	}
	n := 0
	for _, sub := range subsets {
		for _, order := range permutations(sub.events) {
			// Batch sizes: one by one, all together, and the first two together.
			for _, split := range []int{1, len(order), 2} {
				n++
				ref := fmt.Sprintf("ORD-P%d", n)
				visit(t, env, ref)
				var ids []int64
				for i, e := range order {
					w := webhook(fmt.Sprintf("evt-p%d-%d", n, i), e.name, ref, t0.Add(e.at))
					dup, err := s.InsertWebhook(ctx, env.Pool, w)
					require.NoError(t, err)
					require.False(t, dup)
					ids = append(ids, w.ID)
				}
				for len(ids) > 0 {
					k := min(split, len(ids))
					require.NoError(t, s.ProcessWebhooks(ctx, env.Pool, ids[:k]))
					ids = ids[k:]
				}
				a := attempts(t, env, db.ListFilter{Q: ref})[0]
				require.Equal(t, sub.want, a.Outcome, "order %v in batches of %d", order, split)
				require.Equal(t, db.AttemptPaid, a.Status, "the approval marks the attempt paid whatever came after")
			}
		}
	}
}

func TestABatchAppliesEachReferenceOnItsOwn(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	s := &db.Store{}
	ctx := context.Background()
	visit(t, env, "ORD-A")
	visit(t, env, "ORD-B")
	now := time.Now()
	var ids []int64
	for _, w := range []*db.Webhook{
		webhook("evt-a", "SALE_APPROVED", "ORD-A", now),
		webhook("evt-b", "SALE_REJECTED", "ORD-B", now),
		webhook("evt-none", "REFUND_CREATED", "", now),
	} {
		_, err := s.InsertWebhook(ctx, env.Pool, w)
		require.NoError(t, err)
		ids = append(ids, w.ID)
	}
	require.NoError(t, s.ProcessWebhooks(ctx, env.Pool, ids))
	a, b := attempts(t, env, db.ListFilter{Q: "ORD-A"})[0], attempts(t, env, db.ListFilter{Q: "ORD-B"})[0]
	require.Equal(t, [2]string{db.AttemptPaid, db.StatusApproved}, [2]string{a.Status, a.Outcome})
	require.Equal(t, [2]string{db.AttemptPending, db.StatusRejected}, [2]string{b.Status, b.Outcome})
	for _, id := range ids {
		w, err := s.Webhook(ctx, env.DB, id)
		require.NoError(t, err)
		require.True(t, w.Processed, "every notification of the batch is marked processed, with a reference or not")
		require.NotNil(t, w.ProcessedAt)
	}
}

func TestConcurrentCopiesOfOneNotificationStoreOneRow(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	var wg sync.WaitGroup
	ids := make([]int64, 20)
	dups := make([]bool, 20)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := webhook("evt-same", "SALE_APPROVED", "ORD-6", time.Now())
			d, err := (&db.Store{}).InsertWebhook(context.Background(), env.Pool, w)
			require.NoError(t, err)
			ids[i], dups[i] = w.ID, d
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range ids {
		require.Equal(t, ids[0], ids[i], "every copy answers with the one local id")
		if !dups[i] {
			fresh++
		}
	}
	require.Equal(t, 1, fresh)
	_, total, err := (&db.Store{}).Webhooks(context.Background(), env.DB, db.ListFilter{}, 1)
	require.NoError(t, err)
	require.Equal(t, 1, total, "the counter table counts the row once")
}

func TestWebhookListFiltersPagesAndCounts(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	s := &db.Store{}
	ctx := context.Background()
	for i := 0; i < 120; i++ {
		event := []string{"SALE_APPROVED", "SALE_REJECTED", "MYSTERY"}[i%3]
		w := webhook(fmt.Sprintf("evt-%03d", i), event, fmt.Sprintf("REF-%03d", i), time.Now())
		w.PayerEmail = fmt.Sprintf("payer%d@example.com", i%7)
		_, err := s.InsertWebhook(ctx, env.Pool, w)
		require.NoError(t, err)
	}
	rows, total, err := s.Webhooks(ctx, env.DB, db.ListFilter{}, 1)
	require.NoError(t, err)
	require.Equal(t, 120, total)
	require.Len(t, rows, 50)
	require.Equal(t, "evt-119", rows[0].NotificationID, "newest first")

	rows, _, err = s.Webhooks(ctx, env.DB, db.ListFilter{}, 3)
	require.NoError(t, err)
	require.Len(t, rows, 20)
	require.Equal(t, "evt-019", rows[0].NotificationID)

	cases := []struct {
		f     db.ListFilter
		total int
	}{
		{db.ListFilter{Status: "desconocido"}, 40},
		{db.ListFilter{Event: "SALE_REJECTED"}, 40},
		{db.ListFilter{Event: "SALE_REJECTED", Status: "aprobado"}, 0},
		{db.ListFilter{Q: "ref-01"}, 10},
		{db.ListFilter{Q: "PAYER3@"}, 17},
		{db.ListFilter{Q: "100%"}, 0},
		{db.ListFilter{Q: "REF-007", Status: "aprobado"}, 0},
		{db.ListFilter{Q: "REF-006", Status: "aprobado"}, 1},
	}
	for _, tc := range cases {
		rows, total, err := s.Webhooks(ctx, env.DB, tc.f, 1)
		require.NoError(t, err)
		require.Equal(t, tc.total, total, "%+v", tc.f)
		require.Len(t, rows, min(tc.total, 50), "%+v", tc.f)
	}
}

func TestGatewaySecretsAreEncryptedAtRestAndChangesRecorded(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	box, err := secretbox.New([]byte(strings.Repeat("z", 32)))
	require.NoError(t, err)
	admin, err := s.UpsertUser(ctx, env.DB, "a@example.com", "password1", db.RoleAdmin)
	require.NoError(t, err)

	changed, err := s.SaveGatewaySettings(ctx, env.DB, box, "gwa", []db.FieldChange{
		{Field: "environment", Value: "production"},
		{Field: "secret_key_production", Value: "whsec_live_abcd"},
		{Field: "callback_url", Value: "https://shop.example/ok"},
		{Field: "api_key_test", Value: ""}, // blank: nothing stored, nothing to clear
	}, admin)
	require.NoError(t, err)
	require.Equal(t, []string{"environment", "secret_key_production", "callback_url"}, changed)

	var raw []byte
	require.NoError(t, env.DB.NewSelect().TableExpr("gateway_settings").Column("value").
		Where("field = 'secret_key_production'").Scan(ctx, &raw))
	require.NotContains(t, string(raw), "whsec_live", "the secret is not stored in clear")

	g, err := s.GatewaySettings(ctx, env.DB, box, "gwa")
	require.NoError(t, err)
	require.Equal(t, "production", g.Environment())
	require.Equal(t, "whsec_live_abcd", g.Active("secret_key"))

	// Saving the same values again records nothing; clearing records a change.
	changed, err = s.SaveGatewaySettings(ctx, env.DB, box, "gwa", []db.FieldChange{
		{Field: "environment", Value: "production"}, {Field: "secret_key_production", Clear: true},
	}, admin)
	require.NoError(t, err)
	require.Equal(t, []string{"secret_key_production"}, changed)
	log, err := s.SettingChanges(ctx, env.DB, "gwa", 10)
	require.NoError(t, err)
	require.Len(t, log, 4)
	require.Equal(t, "cleared", log[0].Action)
	require.Equal(t, "a@example.com", log[0].UserEmail)

	g, err = s.GatewaySettings(ctx, env.DB, box, "gwb")
	require.NoError(t, err)
	require.Equal(t, "sandbox", g.Environment(), "gwb defaults to sandbox")
}

func TestWebhookPagesAcrossIDBucketsMatchAPlainOffsetQuery(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	s := &db.Store{}
	ctx := context.Background()
	n := 0
	// Three runs of ids far apart, so pages straddle buckets of 10,000 ids.
	for _, jump := range []int{1, 9_990, 25_000, 25_040} {
		_, err := env.DB.ExecContext(ctx, "SELECT setval('gwa_webhooks_id_seq', ?, false)", jump)
		require.NoError(t, err)
		ws := make([]*db.Webhook, 37)
		for i := range ws {
			event := []string{"SALE_APPROVED", "SALE_REJECTED", "CHARGEBACK"}[n%3]
			ws[i] = webhook(fmt.Sprintf("evt-%d", n), event, fmt.Sprintf("R-%d", n), time.Now())
			n++
		}
		_, err = s.InsertWebhooks(ctx, env.Pool, ws)
		require.NoError(t, err)
	}
	for _, f := range []db.ListFilter{{}, {Status: "rechazado"}, {Event: "CHARGEBACK", Status: "contracargo"}} {
		var want []int64
		q := env.DB.NewSelect().Model((*db.Webhook)(nil)).Column("id").OrderExpr("id DESC")
		if f.Status != "" {
			q = q.Where("status = ?", f.Status)
		}
		if f.Event != "" {
			q = q.Where("event = ?", f.Event)
		}
		require.NoError(t, q.Scan(ctx, &want))
		for page := 1; page <= len(want)/db.PageSize+2; page++ {
			rows, total, err := s.Webhooks(ctx, env.DB, f, page)
			require.NoError(t, err)
			require.Equal(t, len(want), total, "%+v", f)
			var got []int64
			for _, r := range rows {
				got = append(got, r.ID)
			}
			from := min((page-1)*db.PageSize, len(want))
			to := min(from+db.PageSize, len(want))
			require.Equal(t, want[from:to], append([]int64{}, got...)[:len(got)], "%+v page %d", f, page)
		}
	}
}

func TestPurgePaymentLogsKeepsRecentRows(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	ctx := context.Background()
	s := &db.Store{}
	for _, q := range []string{
		`INSERT INTO gwb_idempotency (key, request_hash, created_at) VALUES ('old', '\x00', now() - interval '25 hours'), ('new', '\x00', now())`,
		`INSERT INTO gwb_upstream_calls (method, path, status, latency_ms, created_at) VALUES ('GET', '/a', 200, 1, now() - interval '31 days'), ('GET', '/b', 200, 1, now())`,
		`INSERT INTO gwa_webhook_rejections (minute, reason, ip, n, body_bytes, last_at)
		 VALUES (now() - interval '31 days', 'x', '', 1, 0, now() - interval '31 days'), (now(), 'y', '', 1, 0, now())`,
		`INSERT INTO tarjetas_llamadas (method, path, status, latency_ms, created_at) VALUES ('GET', '/usuarios', 200, 1, now() - interval '31 days'), ('GET', '/pagos', 200, 1, now())`,
	} {
		_, err := env.DB.ExecContext(ctx, q)
		require.NoError(t, err)
	}
	n, err := s.PurgePaymentLogs(ctx, env.DB)
	require.NoError(t, err)
	require.Equal(t, int64(4), n)
	for _, table := range []string{"gwb_idempotency", "gwb_upstream_calls", "gwa_webhook_rejections", "tarjetas_llamadas"} {
		left, err := env.DB.NewSelect().TableExpr(table).Count(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, left, table)
	}
}
