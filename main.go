// Command pasarela is the whole console in one binary: `migrate`, `web`,
// `worker`, `dev` and `user create` (CONTRACT §1). main only parses the
// subcommand and wires config → database → River → server, by hand.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/uptrace/bun"

	"pasarela/config"
	"pasarela/db"
	"pasarela/db/pgcluster"
	"pasarela/jobs"
	"pasarela/server"
	"pasarela/server/agent"
)

const usage = `usage: pasarela <command>

  migrate                       apply migrations and the seed
  web                           serve HTTP on $PORT
  worker                        work background jobs and run the schedules
  dev                           migrate + web + worker; a private PostgreSQL when DATABASE_URL is unset
  user create --email E --password P --role R
                                create a user, or reset its password and role
  agent --url URL --token T [--interval 30s]
                                send this machine's metrics to the console`

// httpShutdownTimeout bounds how long in-flight requests may finish after a
// signal (running jobs have their own budget, see jobs.Run).
const httpShutdownTimeout = 20 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if args[0] == "agent" {
		// The agent runs on the monitored machines: no database, no secret.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := agentCmd(ctx, args[1:], stderr); err != nil {
			fmt.Fprintln(stderr, "pasarela:", err)
			return 1
		}
		return 0
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "pasarela:", err)
		return 1
	}
	cmd := args[0]
	logger := newLogger(stderr, cfg.LogLevel, cmd == "dev")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	switch cmd {
	case "migrate":
		err = migrateCmd(ctx, cfg, logger)
	case "web":
		err = webCmd(ctx, cfg, logger)
	case "worker":
		err = workerCmd(ctx, cfg, logger)
	case "dev":
		err = devCmd(ctx, cfg, logger, stdout)
	case "user":
		err = userCmd(ctx, cfg, logger, args[1:], stdout)
	default:
		fmt.Fprintf(stderr, "pasarela: unknown command %q\n\n%s\n", cmd, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "pasarela:", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, level slog.Level, text bool) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if text {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// conns are the two connection pools of a process: bun on pgdriver for the
// app's data, pgx for River (see jobs' package comment).
type conns struct {
	db   *bun.DB
	pool *pgxpool.Pool
}

func open(ctx context.Context, cfg config.Config, dbConns int, pgxConns int32) (*conns, error) {
	if err := cfg.RequireDatabase(); err != nil {
		return nil, err
	}
	bdb, err := db.Open(ctx, cfg.DatabaseURL, dbConns)
	if err != nil {
		return nil, err
	}
	pool, err := db.OpenPool(ctx, cfg.DatabaseURL, pgxConns)
	if err != nil {
		bdb.Close()
		return nil, err
	}
	return &conns{db: bdb, pool: pool}, nil
}

func (c *conns) close() {
	c.pool.Close()
	c.db.Close()
}

func migrateCmd(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	cfg, stopCluster, err := privateDatabase(ctx, cfg, logger, false)
	if err != nil {
		return err
	}
	defer stopCluster()
	c, err := open(ctx, cfg, 4, 2)
	if err != nil {
		return err
	}
	defer c.close()
	if _, err := db.Migrate(ctx, c.db, c.pool, db.SeedInput{AdminEmail: cfg.AdminEmail, AdminPassword: cfg.AdminPassword}); err != nil {
		return err
	}
	logger.Info("migrations applied")
	return nil
}

func webCmd(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	if err := cfg.RequireSecret(); err != nil {
		return err
	}
	ln, err := listen(cfg.Port)
	if err != nil {
		return err
	}
	defer ln.Close()
	c, err := open(ctx, cfg, 20, 8)
	if err != nil {
		return err
	}
	defer c.close()
	return serveWeb(ctx, cfg, logger, c, ln)
}

// listen takes the HTTP port first, so that a port in use stops the start
// with a clear error before anything announces that it listens.
func listen(port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return nil, fmt.Errorf("PORT %d: %w", port, err)
	}
	return ln, nil
}

func workerCmd(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	if err := cfg.RequireSecret(); err != nil {
		return err
	}
	c, err := open(ctx, cfg, 20, 25)
	if err != nil {
		return err
	}
	defer c.close()
	return runWorker(ctx, cfg, logger, c)
}

// serveWeb serves HTTP on ln until ctx ends, then lets in-flight requests finish.
func serveWeb(ctx context.Context, cfg config.Config, logger *slog.Logger, c *conns, ln net.Listener) error {
	deps := jobs.Deps{DB: c.db, Pool: c.pool, Store: &db.Store{}}
	workers, _ := jobs.Register(deps)
	queue, err := jobs.NewQueue(c.db, c.pool, workers, logger)
	if err != nil {
		return err
	}
	jobsUI, err := jobs.NewUI(ctx, c.pool, workers, logger)
	if err != nil {
		return err
	}
	app, err := server.New(server.Deps{
		Config: cfg, DB: c.db, Pool: c.pool, Store: deps.Store, Queue: queue, JobsUI: jobsUI, Logger: logger,
	})
	if err != nil {
		return err
	}

	listenErr := make(chan error, 1)
	go func() { listenErr <- app.Listener(ln) }()
	logger.Info("web listening", "port", cfg.Port, "base_url", cfg.BaseURL)
	select {
	case err := <-listenErr:
		return fmt.Errorf("serve on :%d: %w", cfg.Port, err)
	case <-ctx.Done():
	}
	logger.Info("web shutting down: finishing in-flight requests")
	if err := app.ShutdownWithTimeout(httpShutdownTimeout); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// runWorker works jobs until ctx ends, then stops them gracefully (jobs.Run).
func runWorker(ctx context.Context, cfg config.Config, logger *slog.Logger, c *conns) error {
	channels, err := jobs.NewChannels(cfg)
	if err != nil {
		return err
	}
	workers, periodic := jobs.Register(jobs.Deps{DB: c.db, Pool: c.pool, Store: &db.Store{},
		Channels: channels, BaseURL: cfg.BaseURL, Logger: logger})
	client, err := jobs.NewWorkerClient(c.pool, workers, periodic, logger, jobs.WorkerOptions{})
	if err != nil {
		return err
	}
	return jobs.Run(ctx, client, logger)
}

// devCmd runs everything in one process; without DATABASE_URL it brings up a
// private cluster under .data/postgres and stops it on the way out.
func devCmd(ctx context.Context, cfg config.Config, logger *slog.Logger, stdout io.Writer) error {
	usesPrivateCluster := cfg.DatabaseURL == ""
	ln, err := listen(cfg.Port)
	if err != nil {
		return err
	}
	defer ln.Close()
	// 0711: the PostgreSQL user (when we are root) must pass through; the files
	// inside stay private (0600/0700).
	if err := os.MkdirAll(".data", 0o711); err != nil {
		return fmt.Errorf("create .data: %w", err)
	}
	cfg, stopCluster, err := privateDatabase(ctx, cfg, logger, true)
	if err != nil {
		return err
	}
	defer stopCluster()
	if cfg.AppSecret == nil {
		secret, err := keptSecret(filepath.Join(".data", "app_secret"))
		if err != nil {
			return err
		}
		cfg.AppSecret = secret
	}
	seed := db.SeedInput{AdminEmail: cfg.AdminEmail, AdminPassword: cfg.AdminPassword}
	if seed.AdminEmail == "" {
		seed = db.SeedInput{AdminEmail: "admin@pasarela.local", AdminPassword: randomHex(9)}
	}

	c, err := open(ctx, cfg, 20, 25)
	if err != nil {
		return err
	}
	defer c.close()
	created, err := db.Migrate(ctx, c.db, c.pool, seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nPasarela: %s\n", cfg.BaseURL)
	if usesPrivateCluster {
		fmt.Fprintf(stdout, "Base de datos: DATABASE_URL=%s\n", cfg.DatabaseURL)
	}
	if created {
		fmt.Fprintf(stdout, "Administrador creado: %s / %s\n\n", seed.AdminEmail, seed.AdminPassword)
	} else {
		fmt.Fprintf(stdout, "Entre con un usuario existente (o cree uno: pasarela user create --email E --password P --role Administrador)\n\n")
	}

	var wg sync.WaitGroup
	errs := make([]error, 2)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, part := range []func(context.Context) error{
		func(ctx context.Context) error { return serveWeb(ctx, cfg, logger, c, ln) },
		func(ctx context.Context) error { return runWorker(ctx, cfg, logger, c) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = part(runCtx)
			cancel() // one part failing stops the other
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// privateDir is where `dev` keeps its private PostgreSQL cluster.
var privateDir = filepath.Join(".data", "postgres")

// privateDatabase points cfg at the private cluster when DATABASE_URL is unset:
// `dev` creates it (create), `migrate` and `user create` use it when it
// exists. The returned func stops the server if this call started it.
func privateDatabase(ctx context.Context, cfg config.Config, logger *slog.Logger, create bool) (config.Config, func(), error) {
	noop := func() {}
	if cfg.DatabaseURL != "" {
		return cfg, noop, nil
	}
	if _, err := os.Stat(privateDir); err != nil && !create {
		return cfg, noop, nil // RequireDatabase names what is missing
	}
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{Dir: privateDir})
	if err != nil {
		return cfg, noop, err
	}
	stop := func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cluster.Stop(stopCtx); err != nil {
			logger.Error("stop private postgres", "error", err)
		} else if cluster.Started {
			logger.Info("private postgres stopped")
		}
	}
	if cfg.DatabaseURL, err = cluster.EnsureDatabase(ctx, "pasarela"); err != nil {
		stop()
		return cfg, noop, err
	}
	logger.Info("private postgres ready", "dir", privateDir, "already_running", !cluster.Started)
	return cfg, stop, nil
}

// keptSecret reads the APP_SECRET `dev` keeps, creating it on first use.
func keptSecret(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= config.MinSecretBytes {
		return []byte(strings.TrimSpace(string(b))), nil
	}
	secret := randomHex(32)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return []byte(secret), nil
}

func userCmd(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: pasarela user create --email E --password P --role " + db.RoleAdmin)
	}
	fs := flag.NewFlagSet("user create", flag.ContinueOnError)
	email := fs.String("email", "", "the user's e-mail address")
	password := fs.String("password", "", "the new password")
	role := fs.String("role", db.RoleAdmin, "the role: "+db.RoleAdmin+" or "+db.RoleOperator)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if !strings.Contains(*email, "@") {
		return errors.New("--email: an e-mail address is required")
	}
	if len(*password) < config.MinPasswordLen {
		return fmt.Errorf("--password: at least %d characters", config.MinPasswordLen)
	}
	cfg, stopCluster, err := privateDatabase(ctx, cfg, logger, false)
	if err != nil {
		return err
	}
	defer stopCluster()
	c, err := open(ctx, cfg, 2, 1)
	if err != nil {
		return err
	}
	defer c.close()
	u, err := (&db.Store{}).UpsertUser(ctx, c.db, *email, *password, *role)
	if errors.Is(err, db.ErrNotFound) {
		return fmt.Errorf("--role: no role %q (run `pasarela migrate` first; roles: %s, %s)", *role, db.RoleAdmin, db.RoleOperator)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "user %s (id %d) has role %s\n", u.Email, u.ID, *role)
	return nil
}

func agentCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "", "the console's base URL, e.g. https://consola.example.cl")
	token := fs.String("token", "", "this server's agent token (shown once when it was added); or PASARELA_AGENT_TOKEN")
	tokenFile := fs.String("token-file", "", "a file holding the token (keeps it out of the process list)")
	interval := fs.Duration("interval", 30*time.Second, "time between heartbeats")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if u, err := url.Parse(*base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("--url: the console's address, e.g. https://consola.example.cl")
	}
	if *token == "" && *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		*token = strings.TrimSpace(string(b))
	}
	if *token == "" {
		*token = os.Getenv("PASARELA_AGENT_TOKEN")
	}
	if *token == "" {
		return errors.New("--token (or --token-file, or PASARELA_AGENT_TOKEN): the server's agent token is required")
	}
	if *interval < 5*time.Second || *interval > time.Hour {
		return errors.New("--interval: between 5s and 1h")
	}
	return agent.Run(ctx, agent.Options{URL: *base, Token: *token, Interval: *interval,
		Logger: newLogger(stderr, slog.LevelInfo, false)})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
