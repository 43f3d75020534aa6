package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// QueueURLChecks is the URL checks' own queue: a round is thousands of
// mostly waiting jobs, which must not hold back notifications or webhooks.
const QueueURLChecks = "url_checks"

// DefaultCheckConcurrency is how many URL checks a worker runs at once: a
// check mostly waits on the network, and 10,000 monitors with some slow ones
// must fit in a minute.
const DefaultCheckConcurrency = 200

// maxCheckBody is the most of a body a GET check reads (it only needs the status).
const maxCheckBody = 16 << 10

// errLinkLocal refuses cloud metadata (169.254.0.0/16, fe80::/10 and the
// providers' other metadata addresses) at connect time, whatever name or
// redirect led there.
var errLinkLocal = errors.New("destino no permitido: dirección link-local (metadatos de la nube)")

// metadataAddrs are cloud metadata services outside the link-local ranges.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),      // AWS, over IPv6
	netip.MustParseAddr("100.100.100.200"),    // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),      // Azure WireServer
	netip.MustParseAddr("64:ff9b::a9fe:a9fe"), // 169.254.169.254 through NAT64
}

// refusedTarget reports whether a dialled address ("host:port", the IP the
// name resolved to) is one a check must not reach. What does not parse is
// refused: Control always gets an IP, so anything else is unexpected.
func refusedTarget(address string) bool {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return true
	}
	ip := ap.Addr().WithZone("").Unmap()
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || slices.Contains(metadataAddrs, ip)
}

// Checker runs URL checks with one shared client: connections are reused
// across checks, redirects end after 5, link-local targets are refused.
type Checker struct {
	client *http.Client
}

// NewChecker returns the Checker every check of a process shares.
func NewChecker() *Checker {
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			if refusedTarget(address) {
				return errLinkLocal
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:               nil, // a check goes to the target itself
		DialContext:         dialer.DialContext,
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	return &Checker{client: &http.Client{
		Transport: transport,
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) > 5 {
				return errors.New("más de 5 redirecciones")
			}
			return nil
		},
	}}
}

// Check is HEAD, then GET when HEAD fails or answers 405/501, both within
// the timeout; up is a 2xx or 3xx final status.
func (c *Checker) Check(ctx context.Context, target string, timeout time.Duration) db.CheckResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	r := db.CheckResult{At: start.UTC(), Method: http.MethodHead}
	status, err := c.do(ctx, http.MethodHead, target)
	if err != nil || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented {
		r.Method = http.MethodGet
		status, err = c.do(ctx, http.MethodGet, target)
	}
	r.LatencyMS = int(time.Since(start).Milliseconds())
	r.Status = status
	switch {
	case err != nil:
		r.Error = checkError(err, timeout)
	case status >= 200 && status < 400:
		r.OK = true
	default:
		r.Error = fmt.Sprintf("respondió %d", status)
	}
	return r
}

func (c *Checker) do(ctx context.Context, method, target string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "pasarela-monitor/1")
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	// Read a little, so the connection can be reused, and never more.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxCheckBody))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// checkError is a check's failure in words a person reads in the log.
func checkError(err error, timeout time.Duration) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("sin respuesta en %s", timeout)
	case errors.Is(err, errLinkLocal):
		return errLinkLocal.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "conexión rechazada"
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return strings.ToValidUTF8(msg, "?")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// MonitorRoundArgs enqueues the minute's checks: one per active monitor.
type MonitorRoundArgs struct{}

// Kind is the job's name in River's tables.
func (MonitorRoundArgs) Kind() string { return "url_monitor_ronda" }

// MonitorRoundWorker works MonitorRoundArgs.
type MonitorRoundWorker struct {
	river.WorkerDefaults[MonitorRoundArgs]
	db    *bun.DB
	store *db.Store
}

// Timeout bounds the inserts of a round.
func (w *MonitorRoundWorker) Timeout(*river.Job[MonitorRoundArgs]) time.Duration {
	return 30 * time.Second
}

// Work inserts one check per active monitor, unique per monitor and minute:
// a round that runs twice (two leaders, a retry) checks nothing twice.
func (w *MonitorRoundWorker) Work(ctx context.Context, job *river.Job[MonitorRoundArgs]) error {
	ids, err := w.store.ActiveMonitorIDs(ctx, w.db)
	if err != nil || len(ids) == 0 {
		return err
	}
	minute := job.ScheduledAt.UTC().Truncate(time.Minute)
	opts := &river.InsertOpts{Queue: QueueURLChecks, MaxAttempts: 2, UniqueOpts: river.UniqueOpts{ByArgs: true}}
	client := river.ClientFromContext[pgx.Tx](ctx)
	for start := 0; start < len(ids); start += 1000 {
		batch := ids[start:min(start+1000, len(ids))]
		params := make([]river.InsertManyParams, len(batch))
		for i, id := range batch {
			params[i] = river.InsertManyParams{Args: MonitorCheckArgs{MonitorID: id, Minute: minute}, InsertOpts: opts}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return fmt.Errorf("enqueue %d checks: %w", len(params), err)
		}
	}
	return nil
}

// MonitorCheckArgs checks one monitor for one minute.
type MonitorCheckArgs struct {
	MonitorID int64     `json:"monitor_id"`
	Minute    time.Time `json:"minute"`
}

// Kind is the job's name in River's tables.
func (MonitorCheckArgs) Kind() string { return "url_monitor_check" }

// MonitorCheckWorker works MonitorCheckArgs.
type MonitorCheckWorker struct {
	river.WorkerDefaults[MonitorCheckArgs]
	db      *bun.DB
	pool    *pgxpool.Pool
	store   *db.Store
	checker *Checker
}

// Timeout bounds a check (its own timeout, 1–30 s, caps the network part) and its writes.
func (w *MonitorCheckWorker) Timeout(*river.Job[MonitorCheckArgs]) time.Duration {
	return MaxJobTimeout
}

// NextRetry: a check that could not be recorded is tried again a second
// later, once (the round inserts it with MaxAttempts 2): its minute soon passes.
func (w *MonitorCheckWorker) NextRetry(*river.Job[MonitorCheckArgs]) time.Time {
	return time.Now().Add(time.Second)
}

// Work checks the monitor and records the outcome with its alert, if any.
func (w *MonitorCheckWorker) Work(ctx context.Context, job *river.Job[MonitorCheckArgs]) error {
	if time.Since(job.Args.Minute) > 2*time.Minute {
		return river.JobCancel(errors.New("the minute of this check is long gone"))
	}
	var target db.MonitorTarget
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) (err error) {
		target, err = w.store.MonitorTargetByID(ctx, tx, job.Args.MonitorID)
		return err
	})
	if errors.Is(err, db.ErrNotFound) || (err == nil && !target.Activo) {
		return nil // deleted or paused since the round
	}
	if err != nil {
		return err
	}
	r := w.checker.Check(ctx, target.URL, time.Duration(target.TimeoutS)*time.Second)
	return RecordCheck(ctx, w.db, w.pool, w.store, target.ID, r, func(ctx context.Context, tx pgx.Tx, p []river.InsertManyParams) error {
		_, err := river.ClientFromContext[pgx.Tx](ctx).InsertManyTx(ctx, tx, p)
		return err
	})
}

// RecordCheck stores a check's outcome and, when the monitor changed state,
// inserts its url_monitor_estado alert in the same transaction (insert is
// how this process inserts jobs in a pgx transaction).
func RecordCheck(ctx context.Context, bdb *bun.DB, pool *pgxpool.Pool, store *db.Store, id int64, r db.CheckResult,
	insert func(context.Context, pgx.Tx, []river.InsertManyParams) error) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		change, err := store.RecordCheck(ctx, tx, id, r)
		if err != nil || change == nil {
			return err
		}
		// Only now, for the rare check that changes a state: 10,000 checks a
		// minute would otherwise read these 20,000 times for nothing.
		cfg, err := store.EventConfig(ctx, bdb, "url_monitor_estado")
		if err != nil {
			return err
		}
		to, err := store.UsersWithModule(ctx, bdb, db.ModuleServers)
		if err != nil {
			return err
		}
		title := fmt.Sprintf("«%s» está caído", change.Nombre)
		if change.To == db.MonitorUp {
			title = fmt.Sprintf("«%s» volvió a responder", change.Nombre)
		}
		text := change.URL
		if r.Error != "" {
			text += ": " + r.Error
		}
		p := deliveries(cfg, Event{Evento: "url_monitor_estado", Titulo: title, Texto: text,
			Enlace: fmt.Sprintf("/app/url-monitor/%d", id), UserIDs: to})
		if len(p) == 0 {
			return nil
		}
		return insert(ctx, tx, p)
	})
	if db.IsMissingPartition(err) && !r.Retried {
		// No partition for today (the worker that makes them has not run for
		// days): make them and record again, once.
		if err = store.EnsureMetricPartitions(ctx, bdb); err == nil {
			r.Retried = true
			return RecordCheck(ctx, bdb, pool, store, id, r, insert)
		}
	}
	if errors.Is(err, db.ErrNotFound) {
		return nil // deleted while it was being checked
	}
	return err
}

// InsertManyPgxTx inserts jobs in a pgx transaction (RecordCheck's insert for the web process).
func (q *Queue) InsertManyPgxTx(ctx context.Context, tx pgx.Tx, p []river.InsertManyParams) error {
	if _, err := q.pgx.InsertManyTx(ctx, tx, p); err != nil {
		return fmt.Errorf("enqueue %d jobs: %w", len(p), err)
	}
	return nil
}
