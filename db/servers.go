package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/uptrace/bun"
)

// Server states (CONTRACT §5): pendiente until its first heartbeat.
const (
	ServerPending = "pendiente"
	ServerOnline  = "online"
	ServerOffline = "offline"
)

// ServerStates are the states a server can be in, as the list filters them.
var ServerStates = []string{ServerOnline, ServerOffline, ServerPending}

// RetentionDays is how long heartbeats and URL checks are kept (CONTRACT §8).
const RetentionDays = 7

// RetentionCutoff is the time before which rows are purged at now: seven
// calendar days of the process's time zone, so that a purge at PurgeHour
// falls on a partition's start also in a week with a change of clocks.
func RetentionCutoff(now time.Time) time.Time {
	return now.In(time.Local).AddDate(0, 0, -RetentionDays)
}

// Server is one monitored machine and its latest heartbeat.
type Server struct {
	bun.BaseModel `bun:"table:servidores,alias:s"`

	ID             int64      `bun:"id,pk,autoincrement"`
	Nombre         string     `bun:"nombre"`
	Host           string     `bun:"host"`
	TokenHash      []byte     `bun:"token_hash"`
	TokenPrefix    string     `bun:"token_prefix"`
	IntervaloS     int        `bun:"intervalo_s"`
	Estado         string     `bun:"estado"`
	UltimoLatido   *time.Time `bun:"ultimo_latido"`
	CPU            *float64   `bun:"cpu"`
	RAM            *float64   `bun:"ram"`
	Swap           *float64   `bun:"swap"`
	Disk           *float64   `bun:"disk"`
	TCP            *int64     `bun:"tcp"`
	Load1          *float64   `bun:"load1"`
	UmbralDisco    *float64   `bun:"umbral_disco"`
	UmbralSuperado bool       `bun:"umbral_superado"`
	CreatedAt      time.Time  `bun:"created_at,nullzero,default:now()"`
}

// Heartbeat is one agent report (percentages 0–100, tcp and load1 ≥ 0).
type Heartbeat struct {
	CPU, RAM, Swap, Disk float64
	TCP                  int64
	Load1                float64
}

// CreateServer stores a new server.
func (s *Store) CreateServer(ctx context.Context, idb bun.IDB, srv *Server) error {
	if _, err := idb.NewInsert().Model(srv).Exec(ctx); err != nil {
		return fmt.Errorf("create server %q: %w", srv.Nombre, err)
	}
	return nil
}

// Servers lists the servers in a state ("": every one), by name.
func (s *Store) Servers(ctx context.Context, idb bun.IDB, estado string) ([]Server, error) {
	var rows []Server
	q := idb.NewSelect().Model(&rows)
	if estado != "" {
		q = q.Where("estado = ?", estado)
	}
	if err := q.OrderExpr("lower(nombre), id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	return rows, nil
}

// ServerByID returns one server; ErrNotFound when there is none.
func (s *Store) ServerByID(ctx context.Context, idb bun.IDB, id int64) (*Server, error) {
	srv := new(Server)
	err := idb.NewSelect().Model(srv).Where("id = ?", id).Scan(ctx)
	if isNoRows(err) {
		return nil, fmt.Errorf("server %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load server %d: %w", id, err)
	}
	return srv, nil
}

// SetServerToken replaces a server's token (rotation): the old one stops working at once.
func (s *Store) SetServerToken(ctx context.Context, idb bun.IDB, id int64, hash []byte, prefix string) error {
	res, err := idb.NewUpdate().Model((*Server)(nil)).Set("token_hash = ?, token_prefix = ?", hash, prefix).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("rotate token of server %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("server %d: %w", id, ErrNotFound)
	}
	return nil
}

// UpdateServer saves a server's name, host, interval and disk threshold.
func (s *Store) UpdateServer(ctx context.Context, idb bun.IDB, srv *Server) error {
	res, err := idb.NewUpdate().Model(srv).Column("nombre", "host", "intervalo_s", "umbral_disco").
		Set("umbral_superado = umbral_superado AND ?::real IS NOT NULL", srv.UmbralDisco).
		WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("update server %d: %w", srv.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("server %d: %w", srv.ID, ErrNotFound)
	}
	return nil
}

// DeleteServer removes a server and its history.
func (s *Store) DeleteServer(ctx context.Context, idb bun.IDB, id int64) error {
	res, err := idb.NewDelete().Model((*Server)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete server %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("server %d: %w", id, ErrNotFound)
	}
	return nil
}

// AgentServer is what a heartbeat needs to know about the server its token names.
type AgentServer struct {
	ID             int64
	Nombre         string
	Estado         string
	UmbralDisco    *float64
	UmbralSuperado bool
}

// ServerByToken finds the server of an agent token; ErrNotFound when none.
func (s *Store) ServerByToken(ctx context.Context, q *pgxpool.Pool, hash []byte) (AgentServer, error) {
	var a AgentServer
	err := q.QueryRow(ctx, `SELECT id, nombre, estado, umbral_disco::float8, umbral_superado FROM servidores WHERE token_hash = $1`, hash).
		Scan(&a.ID, &a.Nombre, &a.Estado, &a.UmbralDisco, &a.UmbralSuperado)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("agent token: %w", ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("look up agent token: %w", err)
	}
	return a, nil
}

// RecordHeartbeatsQuietly stores the heartbeats (each named by its token's
// hash) of servers that are not offline and whose disk stays on the same side
// of its threshold: one prepared statement for all (group commit, see
// server/heartbeat.go), token lookups included, no event. It reports which
// were stored; for the others the caller looks the token up (ServerByToken)
// and takes RecordHeartbeat's path, which emits the event under a lock.
func (s *Store) RecordHeartbeatsQuietly(ctx context.Context, q *pgxpool.Pool, hashes [][]byte, hs []Heartbeat) ([]bool, error) {
	n := len(hs)
	cpu, ram, swap, dsk, load1 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	tcp := make([]int64, n)
	for i, h := range hs {
		cpu[i], ram[i], swap[i], dsk[i], tcp[i], load1[i] = h.CPU, h.RAM, h.Swap, h.Disk, h.TCP, h.Load1
	}
	rows, err := q.Query(ctx, `WITH i AS (
			SELECT * FROM unnest($1::bytea[], $2::float8[], $3::float8[], $4::float8[], $5::float8[], $6::bigint[], $7::float8[])
			WITH ORDINALITY AS t(token_hash, cpu, ram, swap, disk, tcp, load1, n)),
		upd AS (
			UPDATE servidores s SET estado = 'online', ultimo_latido = now(),
			       cpu = i.cpu, ram = i.ram, swap = i.swap, disk = i.disk, tcp = i.tcp, load1 = i.load1
			FROM i WHERE s.token_hash = i.token_hash AND s.estado <> 'offline'
			  AND s.umbral_superado = (s.umbral_disco IS NOT NULL AND i.disk > s.umbral_disco)
			RETURNING s.id, s.token_hash, s.umbral_disco, s.umbral_superado),
		ins AS (
			INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
			SELECT upd.id, now(), i.cpu, i.ram, i.swap, i.disk, i.tcp, i.load1
			FROM upd JOIN i ON i.token_hash = upd.token_hash
			  AND upd.umbral_superado = (upd.umbral_disco IS NOT NULL AND i.disk > upd.umbral_disco)
			RETURNING 1)
		SELECT i.n FROM upd JOIN i ON i.token_hash = upd.token_hash
		  AND upd.umbral_superado = (upd.umbral_disco IS NOT NULL AND i.disk > upd.umbral_disco)`,
		hashes, cpu, ram, swap, dsk, tcp, load1)
	if err != nil {
		return nil, fmt.Errorf("record %d heartbeats: %w", n, err)
	}
	ords, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("record %d heartbeats: %w", n, err)
	}
	stored := make([]bool, n)
	for _, o := range ords {
		stored[o-1] = true
	}
	return stored, nil
}

// HeartbeatChange is what a heartbeat changed: the server came back, or its
// disk crossed the threshold (upwards).
type HeartbeatChange struct {
	Nombre      string
	Recovered   bool
	CrossedDisk bool
	UmbralDisco float64
}

// RecordHeartbeat stores a heartbeat under the server's row lock and says
// what changed, so the caller can emit the events in the same transaction.
func (s *Store) RecordHeartbeat(ctx context.Context, tx bun.Tx, id int64, h Heartbeat) (HeartbeatChange, error) {
	var ch HeartbeatChange
	var old struct {
		Nombre         string
		Estado         string
		UmbralDisco    *float64
		UmbralSuperado bool
	}
	err := tx.NewSelect().Model((*Server)(nil)).Column("nombre", "estado", "umbral_disco", "umbral_superado").
		Where("id = ?", id).For("UPDATE").Scan(ctx, &old)
	if isNoRows(err) {
		return ch, fmt.Errorf("server %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return ch, fmt.Errorf("lock server %d: %w", id, err)
	}
	over := old.UmbralDisco != nil && h.Disk > *old.UmbralDisco
	if _, err := tx.NewUpdate().Model((*Server)(nil)).
		Set("estado = 'online', ultimo_latido = now(), cpu = ?, ram = ?, swap = ?, disk = ?, tcp = ?, load1 = ?, umbral_superado = ?",
			h.CPU, h.RAM, h.Swap, h.Disk, h.TCP, h.Load1, over).
		Where("id = ?", id).Exec(ctx); err != nil {
		return ch, fmt.Errorf("update server %d: %w", id, err)
	}
	if _, err := tx.NewRaw(`INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
		VALUES (?, now(), ?, ?, ?, ?, ?, ?)`, id, h.CPU, h.RAM, h.Swap, h.Disk, h.TCP, h.Load1).Exec(ctx); err != nil {
		return ch, fmt.Errorf("record heartbeat of server %d: %w", id, err)
	}
	ch.Nombre, ch.Recovered, ch.CrossedDisk = old.Nombre, old.Estado == ServerOffline, over && !old.UmbralSuperado
	if old.UmbralDisco != nil {
		ch.UmbralDisco = *old.UmbralDisco
	}
	return ch, nil
}

// OfflineServer is a server MarkOfflineServers found silent.
type OfflineServer struct {
	ID     int64  `bun:"id"`
	Nombre string `bun:"nombre"`
}

// MarkOfflineServers marks offline every online server whose last heartbeat
// is older than three of its intervals, and returns them. It runs in the
// caller's pgx transaction, with the jobs of the events it causes.
func (s *Store) MarkOfflineServers(ctx context.Context, tx pgx.Tx) ([]OfflineServer, error) {
	rows, err := tx.Query(ctx, `UPDATE servidores SET estado = 'offline'
		WHERE estado = 'online' AND ultimo_latido < now() - make_interval(secs => 3 * intervalo_s)
		RETURNING id, nombre`)
	if err != nil {
		return nil, fmt.Errorf("mark silent servers offline: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OfflineServer, error) {
		var o OfflineServer
		return o, r.Scan(&o.ID, &o.Nombre)
	})
	if err != nil {
		return nil, fmt.Errorf("mark silent servers offline: %w", err)
	}
	return out, nil
}

// UsersWithModule lists the ids of the users whose role has the module.
func (s *Store) UsersWithModule(ctx context.Context, idb bun.IDB, module string) ([]int64, error) {
	var ids []int64
	err := idb.NewRaw(`SELECT u.id FROM users u JOIN role_modules rm ON rm.role_id = u.role_id
		JOIN modules m ON m.id = rm.module_id WHERE m.name = ? ORDER BY u.id`, module).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("users with module %s: %w", module, err)
	}
	return ids, nil
}

// MetricPoint is one point of a server's history: one heartbeat, or the
// average of a time bucket's.
type MetricPoint struct {
	T     time.Time `bun:"t"`
	CPU   float64   `bun:"cpu"`
	RAM   float64   `bun:"ram"`
	Swap  float64   `bun:"swap"`
	Disk  float64   `bun:"disk"`
	TCP   float64   `bun:"tcp"`
	Load1 float64   `bun:"load1"`
}

// MetricsHistory returns a server's heartbeats since a time, oldest first:
// every row when bucket is 0, else the averages of equal buckets of that
// length (aligned to the Unix epoch, so a bucket keeps its bounds between calls).
func (s *Store) MetricsHistory(ctx context.Context, idb bun.IDB, id int64, since time.Time, bucket time.Duration) ([]MetricPoint, error) {
	var rows []MetricPoint
	var err error
	if bucket <= 0 {
		err = idb.NewRaw(`SELECT created_at AS t, cpu, ram, swap, disk, tcp::float8 AS tcp, load1 FROM servidor_metricas_history
			WHERE servidor_id = ? AND created_at >= ? ORDER BY created_at`, id, since).Scan(ctx, &rows)
	} else {
		secs := bucket.Seconds()
		err = idb.NewRaw(`SELECT to_timestamp(floor(extract(epoch FROM created_at) / ?) * ?) AS t,
				avg(cpu) AS cpu, avg(ram) AS ram, avg(swap) AS swap, avg(disk) AS disk, avg(tcp) AS tcp, avg(load1) AS load1
			FROM servidor_metricas_history WHERE servidor_id = ? AND created_at >= ?
			GROUP BY 1 ORDER BY 1`, secs, secs, id, since).Scan(ctx, &rows)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics history of server %d: %w", id, err)
	}
	return rows, nil
}

// PurgeMetrics removes heartbeats older than RetentionCutoff (see purgePartitions).
func (s *Store) PurgeMetrics(ctx context.Context, bdb *bun.DB, now time.Time) (dropped int, deleted int64, err error) {
	return purgePartitions(ctx, bdb, "servidor_metricas_history", RetentionCutoff(now))
}

// PurgeMonitorLog removes URL checks older than RetentionCutoff, and the
// hourly figures of the same age.
func (s *Store) PurgeMonitorLog(ctx context.Context, bdb *bun.DB, now time.Time) (dropped int, deleted int64, err error) {
	cutoff := RetentionCutoff(now)
	if dropped, deleted, err = purgePartitions(ctx, bdb, "url_monitor_log", cutoff); err != nil {
		return dropped, deleted, err
	}
	res, err := bdb.NewDelete().TableExpr("url_monitor_horas").Where("hora < ?", cutoff.Truncate(time.Hour)).Exec(ctx)
	if err != nil {
		return dropped, deleted, fmt.Errorf("delete old hourly checks: %w", err)
	}
	n, _ := res.RowsAffected()
	return dropped, deleted + n, nil
}

// ServerCounts counts the servers in each state.
func (s *Store) ServerCounts(ctx context.Context, idb bun.IDB) (map[string]int, error) {
	var rows []struct {
		Estado string `bun:"estado"`
		N      int    `bun:"n"`
	}
	if err := idb.NewRaw(`SELECT estado, count(*) AS n FROM servidores GROUP BY estado`).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("count servers: %w", err)
	}
	out := map[string]int{ServerOnline: 0, ServerOffline: 0, ServerPending: 0}
	for _, r := range rows {
		out[r.Estado] = r.N
	}
	return out, nil
}
