package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// Monitor states (CONTRACT §5): pendiente until the first check.
const (
	MonitorPending = "pendiente"
	MonitorUp      = "up"
	MonitorDown    = "down"
)

// MonitorStates are the states a list can be filtered by.
var MonitorStates = []string{MonitorUp, MonitorDown, MonitorPending}

// Monitor is one watched URL and the outcome of its last check.
type Monitor struct {
	bun.BaseModel `bun:"table:url_monitores,alias:m"`

	ID               int64      `bun:"id,pk,autoincrement"`
	Nombre           string     `bun:"nombre"`
	URL              string     `bun:"url"`
	TimeoutS         int        `bun:"timeout_s"`
	Activo           bool       `bun:"activo"`
	FallosParaCaida  int        `bun:"fallos_para_caida"`
	Estado           string     `bun:"estado"`
	FallosSeguidos   int        `bun:"fallos_seguidos"`
	UltimoCheck      *time.Time `bun:"ultimo_check"`
	UltimaLatenciaMS *int       `bun:"ultima_latencia_ms"`
	UltimoStatus     *int       `bun:"ultimo_status"`
	UltimoError      string     `bun:"ultimo_error"`
	CreatedAt        time.Time  `bun:"created_at,nullzero,default:now()"`

	// Read with the list (scanonly): uptime in % (nil: no checks) and the
	// hourly average latencies of the last 24 h, oldest first (0: no check that hour).
	Uptime24h *float64 `bun:"uptime_24h,scanonly"`
	Uptime7d  *float64 `bun:"uptime_7d,scanonly"`
	Latencias []int64  `bun:"latencias,array,scanonly"`
}

// MonitorFilter narrows the list: a state, or all.
type MonitorFilter struct {
	Estado string
}

// CreateMonitor stores a new monitor.
func (s *Store) CreateMonitor(ctx context.Context, idb bun.IDB, m *Monitor) error {
	if _, err := idb.NewInsert().Model(m).Exec(ctx); err != nil {
		return fmt.Errorf("create monitor %q: %w", m.Nombre, err)
	}
	return nil
}

// UpdateMonitor saves what a user edits of a monitor.
func (s *Store) UpdateMonitor(ctx context.Context, idb bun.IDB, m *Monitor) error {
	res, err := idb.NewUpdate().Model(m).Column("nombre", "url", "timeout_s", "activo", "fallos_para_caida").WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("update monitor %d: %w", m.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("monitor %d: %w", m.ID, ErrNotFound)
	}
	return nil
}

// DeleteMonitor removes a monitor and its checks.
func (s *Store) DeleteMonitor(ctx context.Context, idb bun.IDB, id int64) error {
	res, err := idb.NewDelete().Model((*Monitor)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete monitor %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("monitor %d: %w", id, ErrNotFound)
	}
	return nil
}

// MonitorByID returns one monitor with its uptime figures.
func (s *Store) MonitorByID(ctx context.Context, idb bun.IDB, id int64) (*Monitor, error) {
	rows, _, err := s.monitors(ctx, idb, MonitorFilter{}, 1, id)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("monitor %d: %w", id, ErrNotFound)
	}
	return &rows[0], nil
}

// Monitors returns a page (1-based) of monitors, by name, with their uptime
// over 24 h and 7 d and their latency sparkline, and how many match in all:
// two statements whatever the page holds.
func (s *Store) Monitors(ctx context.Context, idb bun.IDB, f MonitorFilter, page int) ([]Monitor, int, error) {
	return s.monitors(ctx, idb, f, page, 0)
}

func (s *Store) monitors(ctx context.Context, idb bun.IDB, f MonitorFilter, page int, id int64) ([]Monitor, int, error) {
	// The page's rows first, then their figures: computed in the same
	// statement over all monitors, the figures cost a second at 10,000.
	filter := func(q *bun.SelectQuery) *bun.SelectQuery {
		if id > 0 {
			q = q.Where("id = ?", id)
		}
		if f.Estado != "" {
			q = q.Where("estado = ?", f.Estado)
		}
		return q
	}
	pageRows := filter(idb.NewSelect().TableExpr("url_monitores").ColumnExpr("*")).
		OrderExpr("lower(nombre), id").Limit(PageSize).Offset((page - 1) * PageSize)
	var rows []Monitor
	err := idb.NewSelect().Model(&rows).ModelTableExpr("(?) AS m", pageRows).ColumnExpr("m.*").
		ColumnExpr(`(SELECT round(100.0 * sum(h.ok) / nullif(sum(h.checks), 0), 2) FROM url_monitor_horas h
			WHERE h.monitor_id = m.id AND h.hora >= date_trunc('hour', now()) - interval '23 hours') AS uptime_24h`).
		ColumnExpr(`(SELECT round(100.0 * sum(h.ok) / nullif(sum(h.checks), 0), 2) FROM url_monitor_horas h
			WHERE h.monitor_id = m.id AND h.hora >= date_trunc('hour', now()) - interval '167 hours') AS uptime_7d`).
		ColumnExpr(`ARRAY(SELECT COALESCE((SELECT h.latencia_sum / nullif(h.checks, 0) FROM url_monitor_horas h
				WHERE h.monitor_id = m.id AND h.hora = g), 0)
			FROM generate_series(date_trunc('hour', now()) - interval '23 hours', date_trunc('hour', now()), interval '1 hour') AS g
			ORDER BY g) AS latencias`).
		OrderExpr("lower(m.nombre), m.id").Scan(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list monitors: %w", err)
	}
	if id > 0 {
		return rows, len(rows), nil
	}
	total, err := filter(idb.NewSelect().TableExpr("url_monitores")).Count(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("count monitors: %w", err)
	}
	return rows, total, nil
}

// MonitorCounts counts the active monitors in each state.
func (s *Store) MonitorCounts(ctx context.Context, idb bun.IDB) (map[string]int, error) {
	var rows []struct {
		Estado string `bun:"estado"`
		N      int    `bun:"n"`
	}
	if err := idb.NewRaw(`SELECT estado, count(*) AS n FROM url_monitores WHERE activo GROUP BY estado`).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("count monitors: %w", err)
	}
	out := map[string]int{MonitorUp: 0, MonitorDown: 0, MonitorPending: 0}
	for _, r := range rows {
		out[r.Estado] = r.N
	}
	return out, nil
}

// ActiveMonitorIDs lists the monitors the minute's round checks.
func (s *Store) ActiveMonitorIDs(ctx context.Context, idb bun.IDB) ([]int64, error) {
	var ids []int64
	if err := idb.NewRaw(`SELECT id FROM url_monitores WHERE activo ORDER BY id`).Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("list active monitors: %w", err)
	}
	return ids, nil
}

// MonitorTarget is what a check needs of its monitor.
type MonitorTarget struct {
	ID       int64
	URL      string
	TimeoutS int
	Activo   bool
}

// MonitorTargetByID reads what a check needs; ErrNotFound when the monitor is gone.
func (s *Store) MonitorTargetByID(ctx context.Context, q pgx.Tx, id int64) (MonitorTarget, error) {
	var t MonitorTarget
	err := q.QueryRow(ctx, `SELECT id, url, timeout_s, activo FROM url_monitores WHERE id = $1`, id).
		Scan(&t.ID, &t.URL, &t.TimeoutS, &t.Activo)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("monitor %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("load monitor %d: %w", id, err)
	}
	return t, nil
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	At        time.Time
	Method    string
	Status    int // 0: no answer
	LatencyMS int
	OK        bool
	Error     string
	// Retried marks a second attempt to record it (after making partitions).
	Retried bool
}

// StateChange is a monitor's state before and after a check, when it changed.
type StateChange struct {
	Nombre, URL string
	From, To    string
}

// RecordCheck stores a check (its log row, its hour's figures, the monitor's
// latest outcome) and applies the failure threshold: down after
// fallos_para_caida failures in a row, up after one success. It returns the
// change of state, if any (nil: none), in the caller's transaction, so that
// the alert is inserted with it.
func (s *Store) RecordCheck(ctx context.Context, tx pgx.Tx, id int64, r CheckResult) (*StateChange, error) {
	var nombre, url, estado string
	var fallos, umbral int
	err := tx.QueryRow(ctx, `SELECT nombre, url, estado, fallos_seguidos, fallos_para_caida FROM url_monitores WHERE id = $1 FOR UPDATE`, id).
		Scan(&nombre, &url, &estado, &fallos, &umbral)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("monitor %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("lock monitor %d: %w", id, err)
	}
	next := estado
	if r.OK {
		fallos, next = 0, MonitorUp
	} else {
		fallos++
		if fallos >= umbral {
			next = MonitorDown
		}
	}
	var status *int
	if r.Status > 0 {
		status = &r.Status
	}
	ok := 0
	if r.OK {
		ok = 1
	}
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE url_monitores SET estado = $2, fallos_seguidos = $3, ultimo_check = $4, ultima_latencia_ms = $5,
		ultimo_status = $6, ultimo_error = $7 WHERE id = $1`, id, next, fallos, r.At, r.LatencyMS, status, r.Error)
	batch.Queue(`INSERT INTO url_monitor_log (monitor_id, created_at, metodo, status, latencia_ms, ok, error)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, id, r.At, r.Method, status, r.LatencyMS, r.OK, r.Error)
	batch.Queue(`INSERT INTO url_monitor_horas (monitor_id, hora, checks, ok, latencia_sum) VALUES ($1, date_trunc('hour', $2::timestamptz), 1, $3, $4)
		ON CONFLICT (monitor_id, hora) DO UPDATE SET checks = url_monitor_horas.checks + 1, ok = url_monitor_horas.ok + EXCLUDED.ok,
		latencia_sum = url_monitor_horas.latencia_sum + EXCLUDED.latencia_sum`, id, r.At, ok, r.LatencyMS)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return nil, fmt.Errorf("record check of monitor %d: %w", id, err)
	}
	// pendiente → up is a first check, not news; anything reaching down, or
	// leaving it, is.
	if next == estado || (estado == MonitorPending && next == MonitorUp) {
		return nil, nil
	}
	return &StateChange{Nombre: nombre, URL: url, From: estado, To: next}, nil
}

// MonitorLogEntry is one check as the log page shows it.
type MonitorLogEntry struct {
	CreatedAt time.Time `bun:"created_at"`
	Metodo    string    `bun:"metodo"`
	Status    *int      `bun:"status"`
	LatencyMS int       `bun:"latencia_ms"`
	OK        bool      `bun:"ok"`
	Error     string    `bun:"error"`
}

// MonitorLog returns a page (1-based) of a monitor's checks, newest first, and how many there are.
func (s *Store) MonitorLog(ctx context.Context, idb bun.IDB, id int64, page int) ([]MonitorLogEntry, int, error) {
	var rows []MonitorLogEntry
	if err := idb.NewRaw(`SELECT created_at, metodo, status, latencia_ms, ok, error FROM url_monitor_log
		WHERE monitor_id = ? ORDER BY created_at DESC LIMIT ? OFFSET ?`, id, PageSize, (page-1)*PageSize).Scan(ctx, &rows); err != nil {
		return nil, 0, fmt.Errorf("log of monitor %d: %w", id, err)
	}
	var total int
	if err := idb.NewRaw(`SELECT count(*) FROM url_monitor_log WHERE monitor_id = ?`, id).Scan(ctx, &total); err != nil {
		return nil, 0, fmt.Errorf("count log of monitor %d: %w", id, err)
	}
	return rows, total, nil
}
