// Package pgcluster runs a private PostgreSQL server from the machine's own
// binaries: `pasarela dev` uses one under .data/postgres, tests share one in a
// temporary directory.
//
// The server listens on 127.0.0.1 only, on a port chosen once and kept in the
// cluster directory (file `port`), so that its URL stays the same from one run
// to the next, with a generated superuser password kept there too (mode 0600).
// PostgreSQL refuses to run as root, so when this process is root the server
// runs as the `postgres` user (or `nobody`), and the directory is handed to it.
package pgcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options says where the cluster lives and how it runs.
type Options struct {
	// Dir holds data/, password, postgres.log and lock. Created when missing.
	Dir string
	// Fast turns durability off (fsync, synchronous_commit): for test clusters only.
	Fast bool
	// Detached leaves the server running after this process exits, so that other
	// processes (test packages) reuse it. Stop then does nothing.
	Detached bool
}

// Cluster is a running server.
type Cluster struct {
	// AdminURL connects as the superuser to the `postgres` database.
	AdminURL string
	// Started is true when this call started the server (false: it was running).
	Started bool
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Start brings the cluster up: initialises it on first use, reuses a server
// that is already running from the same directory, or starts one.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pgcluster: create %s: %w", dir, err)
	}
	unlock, err := lock(filepath.Join(dir, "lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential(dir)
	if err != nil {
		return nil, err
	}
	password, err := ensurePassword(filepath.Join(dir, "password"), cred)
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		if err := initdb(ctx, bin, dir, dataDir, cred); err != nil {
			return nil, err
		}
	}

	if port, ok := runningPort(dataDir); ok {
		c := &Cluster{AdminURL: adminURL(password, port)}
		if err := waitReady(ctx, c.AdminURL, nil); err != nil {
			return nil, fmt.Errorf("pgcluster: server already running from %s does not answer: %w", dataDir, err)
		}
		return c, nil
	}
	return start(ctx, bin, dir, dataDir, password, cred, opts)
}

// Stop shuts down a server this process started attached (fast shutdown:
// sessions are ended, everything committed is kept). Otherwise it does nothing.
func (c *Cluster) Stop(ctx context.Context) error {
	if c.cmd == nil {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
		return nil
	case <-ctx.Done():
		_ = c.cmd.Process.Signal(syscall.SIGQUIT)
		<-c.exited
		return fmt.Errorf("pgcluster: server did not stop in time: %w", ctx.Err())
	}
}

// DatabaseURL is AdminURL pointed at another database.
func (c *Cluster) DatabaseURL(name string) string {
	u, _ := url.Parse(c.AdminURL)
	u.Path = "/" + name
	return u.String()
}

// EnsureDatabase creates database name when it does not exist and returns its URL.
func (c *Cluster) EnsureDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.AdminURL)
	if err != nil {
		return "", fmt.Errorf("pgcluster: connect: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("pgcluster: look up database %s: %w", name, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("pgcluster: create database %s: %w", name, err)
		}
	}
	return c.DatabaseURL(name), nil
}

// FindBinaries returns the directory holding initdb and postgres: the one on
// PATH, else the newest /usr/lib/postgresql/*/bin.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dir = filepath.Dir(real)
		}
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("pgcluster: no PostgreSQL server binaries (initdb, postgres) on PATH or under /usr/lib/postgresql/*/bin; install Debian's postgresql package or set DATABASE_URL")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// serverCredential is nil for a normal user. For root it is the unprivileged
// user the server runs as; the cluster directory is handed to that user.
func serverCredential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root needs a `postgres` or `nobody` user for the server: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("pgcluster: hand %s to user %s: %w", dir, u.Username, err)
	}
	// Every parent must be searchable by that user, or it cannot reach its data.
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("pgcluster: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return nil, fmt.Errorf("pgcluster: user %s cannot reach %s because %s is not searchable by others (chmod o+x %s, or run as a normal user, or set DATABASE_URL)", u.Username, dir, p, p)
		}
		if p == "/" {
			break
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func ensurePassword(path string, cred *syscall.Credential) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("pgcluster: generate password: %w", err)
	}
	pw := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("pgcluster: write %s: %w", path, err)
	}
	if cred != nil {
		if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", fmt.Errorf("pgcluster: %w", err)
		}
	}
	return pw, nil
}

func initdb(ctx context.Context, bin, dir, dataDir string, cred *syscall.Credential) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", dataDir, "-U", "postgres", "--pwfile", filepath.Join(dir, "password"),
		"--auth", "scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgcluster: initdb %s: %w: %s", dataDir, err, lastLines(string(out), 5))
	}
	return nil
}

// runningPort reads postmaster.pid: the server that owns dataDir, if alive, and its port.
func runningPort(dataDir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, err2 := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err1 != nil || err2 != nil || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	return port, true
}

func start(ctx context.Context, bin, dir, dataDir, password string, cred *syscall.Credential, opts Options) (*Cluster, error) {
	port, err := keptPort(filepath.Join(dir, "port"))
	if err != nil {
		return nil, err
	}
	args := []string{"-D", dataDir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		// Short OLTP queries only: JIT costs them more than it saves (see db.Open).
		"-c", "jit=off"}
	if opts.Fast {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=400")
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: open log: %w", err)
	}
	defer logFile.Close()
	// Not CommandContext: the server must outlive a cancelled start-up context.
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own session: a Ctrl-C in the terminal reaches us, and we stop the
	// server after the app has closed its connections.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgcluster: start postgres: %w", err)
	}
	c := &Cluster{AdminURL: adminURL(password, port), Started: true, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	if err := waitReady(ctx, c.AdminURL, c.exited); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("pgcluster: postgres did not become ready (see %s): %w", filepath.Join(dir, "postgres.log"), err)
	}
	if !opts.Detached {
		c.cmd = cmd
	}
	return c, nil
}

func waitReady(ctx context.Context, dsn string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-exited:
			return errors.New("server exited")
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func adminURL(password string, port int) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: "/postgres", RawQuery: "sslmode=disable"}
	return u.String()
}

// keptPort returns the port saved in path while it is free; otherwise (first
// start, or another program took it) a free port, saved for the next start.
func keptPort(path string) (int, error) {
	if b, err := os.ReadFile(path); err == nil {
		if port, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && portFree(port) {
			return port, nil
		}
	}
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
		return 0, fmt.Errorf("pgcluster: write %s: %w", path, err)
	}
	return port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lock serialises processes that start the same cluster (parallel test packages).
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("pgcluster: lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
