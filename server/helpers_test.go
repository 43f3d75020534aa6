package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"pasarela/config"
	"pasarela/db"
	"pasarela/db/dbtest"
	"pasarela/jobs"
	"pasarela/server"
)

const (
	adminEmail    = "admin@example.com"
	operatorEmail = "operador@example.com"
	testPassword  = "a-good-password"
)

type bundle struct {
	app   *fiber.App
	env   *dbtest.Env
	store *db.Store
}

type configT = config.Config

// setup builds the app on a fresh database with one admin and one operator.
func setup(t *testing.T, mutate ...func(*config.Config)) *bundle {
	t.Helper()
	return setupWith(t, options{config: mutate})
}

type options struct {
	config          []func(*config.Config)
	upstreamTimeout time.Duration
	// worker runs a real River worker on the test database.
	worker bool
	// durable puts the database on the fsync-on server (commit benchmarks).
	durable bool
	// poolConns sizes the pgx pool the app and the worker share, as `dev`
	// does (0: the test default).
	poolConns int32
	// logs receives the app's log lines (nil: discarded).
	logs io.Writer
}

func setupWith(t testing.TB, o options) *bundle {
	t.Helper()
	var env *dbtest.Env
	if o.durable {
		env = dbtest.NewDurable(t)
	} else {
		env = dbtest.New(t)
	}
	if o.poolConns > 0 {
		pool, err := db.OpenPool(context.Background(), env.URL, o.poolConns)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		env = &dbtest.Env{URL: env.URL, DB: env.DB, Pool: pool}
	}
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"APP_SECRET": strings.Repeat("k", 32)}[k]
	})
	require.NoError(t, err)
	for _, m := range o.config {
		m(&cfg)
	}
	store := &db.Store{}
	ctx := context.Background()
	_, err = store.UpsertUser(ctx, env.DB, adminEmail, testPassword, db.RoleAdmin)
	require.NoError(t, err)
	_, err = store.UpsertUser(ctx, env.DB, operatorEmail, testPassword, db.RoleOperator)
	require.NoError(t, err)

	logTo := o.logs
	if logTo == nil {
		logTo = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelDebug}))
	workers, _ := jobs.Register(jobs.Deps{DB: env.DB, Pool: env.Pool, Store: store})
	queue, err := jobs.NewQueue(env.DB, env.Pool, workers, logger)
	require.NoError(t, err)
	uiCtx, stopUI := context.WithCancel(context.Background())
	t.Cleanup(stopUI)
	ui, err := jobs.NewUI(uiCtx, env.Pool, workers, logger)
	require.NoError(t, err)
	app, err := server.New(server.Deps{Config: cfg, DB: env.DB, Pool: env.Pool, Store: store, Queue: queue, JobsUI: ui, Logger: logger,
		UpstreamTimeout: o.upstreamTimeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Shutdown() }) // its LISTEN connection and writers
	if o.worker {
		client, err := jobs.NewWorkerClient(env.Pool, workers, nil, logger, jobs.WorkerOptions{})
		require.NoError(t, err)
		require.NoError(t, client.Start(context.Background()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = client.Stop(ctx)
		})
	}
	return &bundle{app: app, env: env, store: store}
}

// browser is a cookie-keeping client over app.Test, like a browser without JS.
type browser struct {
	t       testing.TB
	app     *fiber.App
	cookies map[string]string
	csrf    string
}

func (b *bundle) browser(t testing.TB) *browser {
	return &browser{t: t, app: b.app, cookies: map[string]string{}}
}

func (br *browser) do(req *http.Request) *http.Response {
	br.t.Helper()
	for k, v := range br.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	resp, err := br.app.Test(req, -1)
	require.NoError(br.t, err)
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 || c.Value == "" {
			delete(br.cookies, c.Name)
		} else {
			br.cookies[c.Name] = c.Value
		}
	}
	return resp
}

// get fetches path and remembers the page's CSRF token.
func (br *browser) get(path string, headers ...string) (*http.Response, *goquery.Document) {
	br.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp := br.do(req)
	doc := parse(br.t, resp)
	if tok, ok := doc.Find(`meta[name="csrf-token"]`).Attr("content"); ok {
		br.csrf = tok
	}
	return resp, doc
}

// post sends a form; the CSRF token is added unless form already has _csrf.
func (br *browser) post(path string, form url.Values, headers ...string) (*http.Response, *goquery.Document) {
	br.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["_csrf"]; !ok {
		form.Set("_csrf", br.csrf)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp := br.do(req)
	return resp, parse(br.t, resp)
}

// login signs in through the real form.
func (br *browser) login(email string) {
	br.t.Helper()
	if resp, _ := br.get("/login"); resp.StatusCode == http.StatusSeeOther {
		br.get("/app") // already logged in: take the token from a page
	}
	resp, _ := br.post("/login", url.Values{"email": {email}, "password": {testPassword}})
	require.Equal(br.t, http.StatusSeeOther, resp.StatusCode, "login of %s should redirect", email)
}

func parse(t testing.TB, resp *http.Response) *goquery.Document {
	t.Helper()
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(t, err)
	return doc
}

type goquerySelection = goquery.Selection

func newGet(path string) *http.Request { return httptest.NewRequest(http.MethodGet, path, nil) }
