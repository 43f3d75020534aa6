// Package dbtest gives each test its own real PostgreSQL database, migrated and
// seeded, cloned in milliseconds from a template database.
//
// The server is PASARELA_TEST_DATABASE_URL (a superuser URL) when set, else a
// private cluster shared by every test process of the run, under
// PASARELA_TEST_PGDIR (default: $TMPDIR/pasarela-test-<uid>). `make test` stops
// that cluster when the run ends.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/uptrace/bun"

	"pasarela/db"
	"pasarela/db/pgcluster"
)

// Env is one test's database, reachable through both drivers the app uses.
type Env struct {
	URL  string
	DB   *bun.DB
	Pool *pgxpool.Pool
}

// cluster is one test server, started once per process.
type cluster struct {
	once sync.Once
	url  string
	err  error
}

var (
	fastCluster    cluster // fsync off: what tests use
	durableCluster cluster // fsync on: what benchmarks of commits use
)

// New creates a database for t and drops it when t ends.
func New(t testing.TB) *Env {
	t.Helper()
	return newEnv(t, server(t, &fastCluster, false))
}

// NewDurable is New on a server that commits durably (fsync and synchronous
// commit on), for benchmarks whose figure depends on the cost of a commit.
func NewDurable(t testing.TB) *Env {
	t.Helper()
	return newEnv(t, server(t, &durableCluster, true))
}

func newEnv(t testing.TB, admin string) *Env {
	t.Helper()
	ctx := context.Background()
	tpl, err := template(ctx, admin)
	if err != nil {
		t.Fatalf("dbtest: template database: %v", err)
	}
	name := "pasarela_t_" + randomHex(6)
	if err := adminExec(ctx, admin, "CREATE DATABASE "+name+" TEMPLATE "+tpl); err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	dsn := withDatabase(admin, name)
	bdb, err := db.Open(ctx, dsn, 20)
	if err != nil {
		t.Fatalf("dbtest: open bun: %v", err)
	}
	pool, err := db.OpenPool(ctx, dsn, 10)
	if err != nil {
		t.Fatalf("dbtest: open pgx: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		bdb.Close()
		if err := adminExec(context.Background(), admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("dbtest: drop %s: %v", name, err)
		}
	})
	return &Env{URL: dsn, DB: bdb, Pool: pool}
}

// Dir is where the shared test cluster lives (the durable one beside it, with
// a -durable suffix); `make test` stops both when the run ends.
func Dir() string {
	if dir := os.Getenv("PASARELA_TEST_PGDIR"); dir != "" {
		return dir
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("pasarela-test-%d", os.Getuid()))
}

func server(t testing.TB, c *cluster, durable bool) string {
	t.Helper()
	c.once.Do(func() {
		if u := os.Getenv("PASARELA_TEST_DATABASE_URL"); u != "" {
			c.url = u
			return
		}
		dir := Dir()
		if durable {
			dir += "-durable"
		}
		pg, err := pgcluster.Start(context.Background(), pgcluster.Options{Dir: dir, Fast: !durable, Detached: true})
		if err != nil {
			c.err = err
			return
		}
		c.url = pg.AdminURL
	})
	if c.err != nil {
		t.Fatalf("dbtest: no PostgreSQL for tests: %v", c.err)
	}
	return c.url
}

// template returns the name of a database holding the current migrations and
// seed, building it once per schema version; other processes wait on a lock.
func template(ctx context.Context, admin string) (string, error) {
	name := "pasarela_tpl_" + db.SchemaVersion()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7261002)"); err != nil {
		return "", err
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(7261002)")
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	dsn := withDatabase(admin, building)
	bdb, err := db.Open(ctx, dsn, 4)
	if err != nil {
		return "", err
	}
	pool, err := db.OpenPool(ctx, dsn, 4)
	if err != nil {
		bdb.Close()
		return "", err
	}
	_, err = db.Migrate(ctx, bdb, pool, db.SeedInput{})
	pool.Close()
	bdb.Close()
	if err != nil {
		return "", err
	}
	// Renamed only once complete, so a crash midway never leaves a broken template.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", err
	}
	return name, nil
}

func adminExec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// Two clones of one template at the same instant can collide; retry briefly.
	for i := 0; ; i++ {
		_, err = conn.Exec(ctx, sql)
		if err == nil || i == 20 || !strings.Contains(err.Error(), "being accessed by other users") {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
