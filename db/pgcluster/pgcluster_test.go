package pgcluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestStartInitialisesReusesAndStopsACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("initdb takes a second or two")
	}
	ctx := context.Background()
	// Under the system temp dir: as root the server user must reach it.
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	clusterDir := filepath.Join(dir, "pg")

	first, err := Start(ctx, Options{Dir: clusterDir})
	require.NoError(t, err)
	require.True(t, first.Started)
	info, err := os.Stat(filepath.Join(clusterDir, "password"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the superuser password stays private")

	// A second start while it runs connects to the same server.
	second, err := Start(ctx, Options{Dir: clusterDir})
	require.NoError(t, err)
	require.False(t, second.Started)
	require.Equal(t, first.AdminURL, second.AdminURL)
	require.NoError(t, second.Stop(ctx), "stopping a reused server is a no-op")

	url, err := first.EnsureDatabase(ctx, "app")
	require.NoError(t, err)
	_, err = first.EnsureDatabase(ctx, "app")
	require.NoError(t, err, "EnsureDatabase is idempotent")
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, first.Stop(stopCtx))
	_, err = pgx.Connect(ctx, url)
	require.Error(t, err, "the server is down after Stop")

	// The next run reuses the data directory: what was committed is there.
	third, err := Start(ctx, Options{Dir: clusterDir})
	require.NoError(t, err)
	require.True(t, third.Started)
	require.Equal(t, first.AdminURL, third.AdminURL, "the same port (and so the same URL) at every start")
	t.Cleanup(func() { _ = third.Stop(context.Background()) })
	conn, err = pgx.Connect(ctx, third.DatabaseURL("app"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v int
	require.NoError(t, conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v))
	require.Equal(t, 42, v)
	var jit string
	require.NoError(t, conn.QueryRow(ctx, "SHOW jit").Scan(&jit))
	require.Equal(t, "off", jit)
}

func TestKeptPortIsReusedWhileFreeAndReplacedWhenTaken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "port")
	first, err := keptPort(path)
	require.NoError(t, err)
	again, err := keptPort(path)
	require.NoError(t, err)
	require.Equal(t, first, again)

	taken, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(first)))
	require.NoError(t, err)
	defer taken.Close()
	other, err := keptPort(path)
	require.NoError(t, err)
	require.NotEqual(t, first, other, "a port another program took is replaced")
	saved, err := keptPort(path)
	require.NoError(t, err)
	require.Equal(t, other, saved, "and the new one is kept")
}

func TestFindBinariesLocatesInitdbAndPostgres(t *testing.T) {
	dir, err := FindBinaries()
	require.NoError(t, err)
	for _, name := range []string{"initdb", "postgres"} {
		_, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
	}
}
