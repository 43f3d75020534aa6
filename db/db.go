// Package db owns Pasarela's data: the bun models, the Store that queries them,
// the embedded forward-only migrations and the idempotent seed.
package db

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/migrate"
)

// ErrNotFound is wrapped by every lookup that finds no row.
var ErrNotFound = errors.New("not found")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// sessionParams are set on every connection, whatever the server's defaults.
// jit: PostgreSQL's JIT compiler spent 100+ ms compiling small queries whose
// row estimates were off (a 4-row page planned as 800,000 rows); the app's
// queries are short OLTP ones, which JIT never speeds up.
var sessionParams = map[string]any{"jit": "off"}

// Open connects bun (on pgdriver) to dsn and checks that the server answers.
func Open(ctx context.Context, dsn string, maxConns int) (*bun.DB, error) {
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(10*time.Second),
		pgdriver.WithConnParams(sessionParams)))
	sqldb.SetMaxOpenConns(maxConns)
	sqldb.SetMaxIdleConns(maxConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	bdb := bun.NewDB(sqldb, pgdialect.New())
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := bdb.PingContext(pingCtx); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return bdb, nil
}

// OpenPool opens the pgx pool River and the webhook receiver work on (see
// README: why two drivers).
func OpenPool(ctx context.Context, dsn string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL for pgx: %w", err)
	}
	cfg.MaxConns = maxConns
	for k, v := range sessionParams {
		cfg.ConnConfig.RuntimeParams[k] = v.(string)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pgx pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database (pgx): %w", err)
	}
	return pool, nil
}

// migrateLockKey is the advisory lock that serialises concurrent `migrate`
// runs (a release phase and a dev process, say): the second one waits.
const migrateLockKey = 7261_0001

// Migrate applies the app's migrations and River's, then runs the seed, all
// under one advisory lock. It is safe to run at every start. It reports whether
// the seed created the first admin.
func Migrate(ctx context.Context, bdb *bun.DB, pool *pgxpool.Pool, seed SeedInput) (adminCreated bool, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return false, fmt.Errorf("migrate: take lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey)
	}()

	migrations := migrate.NewMigrations()
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	if err := migrations.Discover(sub); err != nil {
		return false, fmt.Errorf("migrate: discover migrations: %w", err)
	}
	m := migrate.NewMigrator(bdb, migrations)
	if err := m.Init(ctx); err != nil {
		return false, fmt.Errorf("migrate: init bun migration tables: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return false, fmt.Errorf("migrate: apply app migrations: %w", err)
	}

	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return false, fmt.Errorf("migrate: river migrator: %w", err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return false, fmt.Errorf("migrate: apply river migrations: %w", err)
	}

	adminCreated, err = (&Store{}).Seed(ctx, bdb, seed)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	// Small tables never reach autovacuum's analyze threshold; without
	// statistics the planner guesses hundreds of rows for each.
	if _, err := bdb.ExecContext(ctx, "ANALYZE roles, modules, role_modules, notif_evento_config"); err != nil {
		return false, fmt.Errorf("migrate: analyze: %w", err)
	}
	return adminCreated, nil
}

// SchemaVersion is a hash of every embedded migration: tests name their template
// database after it, so a changed migration builds a new template.
func SchemaVersion() string {
	h := sha256.New()
	entries, _ := fs.ReadDir(migrationFiles, "migrations")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		b, _ := migrationFiles.ReadFile("migrations/" + n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
