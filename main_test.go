package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"pasarela/db/dbtest"
)

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pasarela")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func TestBadConfigurationStopsTheStartWithOneLineNamingTheVariable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		cmd  string
		name string
	}{
		{map[string]string{"PORT": "abc"}, "web", "PORT"},
		{map[string]string{"APP_SECRET": "short", "DATABASE_URL": "postgres://x/y"}, "worker", "APP_SECRET"},
		{map[string]string{"DATABASE_URL": "postgres://x/y"}, "web", "APP_SECRET"},
		{map[string]string{"APP_SECRET": strings.Repeat("s", 32)}, "web", "DATABASE_URL"},
		{map[string]string{"UPLOAD_MAX_BYTES": "lots"}, "migrate", "UPLOAD_MAX_BYTES"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run([]string{tc.cmd}, func(k string) string { return tc.env[k] }, &stdout, &stderr)
		require.Equal(t, 1, code, "%v", tc.env)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		require.Len(t, lines, 1, "one line: %q", stderr.String())
		require.Contains(t, lines[0], tc.name+":")
	}
	var stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"fly"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr))
	require.Contains(t, stderr.String(), "unknown command")
}

// TestTwoWorkersAndAWebShareOneDatabase runs the real binary as a Procfile
// host would: release (migrate), one web and two workers, then SIGTERM.
func TestTwoWorkersAndAWebShareOneDatabase(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	env := dbtest.New(t)
	port := freePort(t)
	base := []string{
		"DATABASE_URL=" + env.URL,
		"APP_SECRET=" + strings.Repeat("p", 40),
		"PORT=" + port,
		"PATH=" + os.Getenv("PATH"),
		"ADMIN_EMAIL=boss@example.com",
		"ADMIN_PASSWORD=boss-password",
	}
	runOnce := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = base
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "pasarela %v: %s", args, out)
		return string(out)
	}
	runOnce("migrate")
	runOnce("migrate") // a second release is harmless
	out := runOnce("user", "create", "--email", "ops@example.com", "--password", "ops-password", "--role", "Operador")
	require.Contains(t, out, "ops@example.com")

	type proc struct {
		name string
		cmd  *exec.Cmd
		out  *syncBuffer
	}
	var procs []proc
	for _, name := range []string{"worker", "worker", "web"} {
		cmd := exec.Command(bin, name)
		cmd.Env = base
		buf := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = buf, buf
		require.NoError(t, cmd.Start())
		procs = append(procs, proc{name, cmd, buf})
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.cmd.Process.Kill()
		}
	})

	baseURL := "http://127.0.0.1:" + port
	waitReady(t, port, 20*time.Second, "web never became ready")

	// The first admin from the environment logs in through the web process.
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(baseURL + "/login")
	require.NoError(t, err)
	var page bytes.Buffer
	_, _ = page.ReadFrom(resp.Body)
	resp.Body.Close()
	token := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindStringSubmatch(page.String())
	require.Len(t, token, 2)
	resp, err = client.PostForm(baseURL+"/login", url.Values{"email": {"boss@example.com"}, "password": {"boss-password"}, "_csrf": {token[1]}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// A webhook stored by the web process (test environment, no secret yet:
	// accepted unverified) is processed by a worker.
	resp, err = http.Post(baseURL+"/webhooks/gwa", "application/json",
		strings.NewReader(`{"id":"evt-process-1","event":"SALE_APPROVED","data":{"reference":"ORD-P1"}}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		var processed bool
		err := env.DB.NewRaw(`SELECT EXISTS (SELECT 1 FROM gwa_webhooks w JOIN gwa_webhook_processed p ON p.webhook_id = w.id
			WHERE w.notification_id = 'evt-process-1')`).Scan(ctx, &processed)
		return err == nil && processed
	}, 20*time.Second, 100*time.Millisecond, "a worker should process the stored webhook")

	// The periodic purge runs on start on the leader only: one job, worked.
	require.Eventually(t, func() bool {
		var n int
		err := env.DB.NewSelect().TableExpr("river_job").ColumnExpr("count(*)").
			Where("kind = 'purge_sessions' AND state = 'completed'").Scan(ctx, &n)
		return err == nil && n == 1
	}, 20*time.Second, 100*time.Millisecond, "the leader should run purge_sessions once on start")
	var leaders int
	require.NoError(t, env.DB.NewSelect().TableExpr("river_leader").ColumnExpr("count(*)").Scan(ctx, &leaders))
	require.Equal(t, 1, leaders)

	for _, p := range procs {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range procs {
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "%s exited badly: %s", p.name, p.out.String())
		case <-time.After(45 * time.Second):
			t.Fatalf("%s did not stop within 45 s of SIGTERM: %s", p.name, p.out.String())
		}
		logs := p.out.String()
		require.NotContains(t, logs, `"level":"ERROR"`, "%s logged an error:\n%s", p.name, logs)
		require.NotContains(t, logs, `"level":"WARN"`, "%s logged a warning:\n%s", p.name, logs)
	}
	require.Contains(t, procs[2].out.String(), `"msg":"web shutting down`)
}

// waitReady waits until the process on port answers /readyz with 200.
func waitReady(t *testing.T, port string, within time.Duration, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, within, 100*time.Millisecond, msgAndArgs...)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func TestWebAndDevRefuseAPortInUseBeforeAnnouncingThatTheyListen(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	port := fmt.Sprint(busy.Addr().(*net.TCPAddr).Port)
	vars := map[string]string{"DATABASE_URL": env.URL, "APP_SECRET": strings.Repeat("p", 40), "PORT": port}
	for _, cmd := range []string{"web", "dev"} {
		var stdout, stderr bytes.Buffer
		code := run([]string{cmd}, func(k string) string { return vars[k] }, &stdout, &stderr)
		require.Equal(t, 1, code, "%s on a busy port", cmd)
		require.Contains(t, stderr.String(), "PORT "+port, cmd)
		require.Contains(t, stderr.String(), "address already in use", cmd)
		require.NotContains(t, stderr.String(), "listening", cmd)
		require.NotContains(t, stdout.String(), "Pasarela:", "%s announced itself", cmd)
	}
}

// TestDevKeepsItsPrivateClusterReachable runs `dev` twice in an empty
// directory, as `make run` does: the cluster keeps its port, dev prints the URL
// to reach it, and `user create` without DATABASE_URL finds it.
func TestDevKeepsItsPrivateClusterReachable(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	// As root the server runs as another user, who must reach the directory.
	require.NoError(t, os.Chmod(dir, 0o711))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	port := freePort(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "PORT=" + port, "ADMIN_EMAIL=boss@example.com", "ADMIN_PASSWORD=boss-password"}
	urlLine := regexp.MustCompile(`DATABASE_URL=(\S+)`)

	startDev := func() (*exec.Cmd, *syncBuffer, string) {
		t.Helper()
		cmd := exec.Command(bin, "dev")
		cmd.Dir, cmd.Env = dir, env
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitReady(t, port, 60*time.Second, "dev never became ready: %s", out)
		m := urlLine.FindStringSubmatch(out.String())
		require.Len(t, m, 2, "dev prints the DATABASE_URL of its cluster: %s", out)
		return cmd, out, m[1]
	}
	stopDev := func(cmd *exec.Cmd, out *syncBuffer) {
		t.Helper()
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "dev exited badly: %s", out)
		case <-time.After(60 * time.Second):
			t.Fatalf("dev did not stop: %s", out)
		}
	}

	cmd, out, firstURL := startDev()
	require.Contains(t, firstURL, "sslmode=disable")
	conn, err := pgx.Connect(context.Background(), firstURL)
	require.NoError(t, err, "the printed URL reaches the database")
	require.NoError(t, conn.Close(context.Background()))

	user := exec.Command(bin, "user", "create", "--email", "ops@example.com", "--password", "ops-password", "--role", "Operador")
	user.Dir, user.Env = dir, env
	userOut, err := user.CombinedOutput()
	require.NoError(t, err, "user create without DATABASE_URL uses the private cluster: %s", userOut)
	require.Contains(t, string(userOut), "ops@example.com")
	stopDev(cmd, out)

	cmd, out, secondURL := startDev()
	require.Equal(t, firstURL, secondURL, "the same port at the next run")
	stopDev(cmd, out)
	require.Contains(t, out.String(), "private postgres stopped")
}

// TestAJobOfAWorkerKilledMidJobRunsAgainWithinTwoMinutes kills a worker with
// SIGKILL while it processes a webhook (held on the reference's lock, which
// this test takes first) and checks that another worker processes it soon:
// River rescues a job left running only after RescueStuckJobsAfter.
func TestAJobOfAWorkerKilledMidJobRunsAgainWithinTwoMinutes(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	env := dbtest.New(t)
	ctx := context.Background()
	port := freePort(t)
	vars := []string{"DATABASE_URL=" + env.URL, "APP_SECRET=" + strings.Repeat("p", 40), "PORT=" + port, "PATH=" + os.Getenv("PATH")}
	start := func(name string) *exec.Cmd {
		cmd := exec.Command(bin, name)
		cmd.Env = vars
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	start("web")
	first := start("worker")
	waitReady(t, port, 20*time.Second, "web never became ready")

	// Hold the reference's lock, so the job blocks inside its transaction.
	hold, err := env.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = hold.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('ORD-KILL', 7261))")
	require.NoError(t, err)
	resp, err := http.Post("http://127.0.0.1:"+port+"/webhooks/gwa", "application/json",
		strings.NewReader(`{"id":"evt-kill-1","event":"SALE_APPROVED","data":{"reference":"ORD-KILL"}}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool {
		var n int
		err := env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE kind = 'gwa_process_webhook' AND state = 'running'`).Scan(ctx, &n)
		return err == nil && n == 1
	}, 20*time.Second, 50*time.Millisecond, "the worker should be running the job")

	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killedAt := time.Now()
	require.NoError(t, hold.Rollback(ctx))
	start("worker")

	processed := func() bool {
		var ok bool
		err := env.DB.NewRaw(`SELECT EXISTS (SELECT 1 FROM gwa_webhooks w JOIN gwa_webhook_processed p ON p.webhook_id = w.id
			WHERE w.notification_id = 'evt-kill-1')`).Scan(ctx, &ok)
		return err == nil && ok
	}
	require.Eventually(t, processed, 2*time.Minute, 250*time.Millisecond,
		"a job of a killed worker should run again within two minutes")
	t.Logf("processed %s after the kill", time.Since(killedAt).Round(time.Second))
}

// A clone of the project has nothing beside it: no test may read outside the
// repository (the gateway's samples live in server/testdata).
func TestTestsReadNothingOutsideTheRepository(t *testing.T) {
	t.Parallel()
	outside := []string{"../" + "shared", `"..", "..", "` + "shared", "shared/" + "fixtures"}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "." && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir // .git, .data
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, o := range outside {
			if bytes.Contains(b, []byte(o)) {
				t.Errorf("%s refers to %s, which a clone does not have", path, o)
			}
		}
		return nil
	})
	require.NoError(t, err)
}
