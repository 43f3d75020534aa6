// Package server is Pasarela's HTTP side: routes, middleware, handlers and the
// one helper that renders a full page or an htmx fragment.
package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/template/html/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/uptrace/bun"

	"pasarela/config"
	"pasarela/db"
	"pasarela/db/secretbox"
	"pasarela/jobs"
	"pasarela/static"
	"pasarela/views"
)

// Deps is what the HTTP side is built from; main wires it by hand.
type Deps struct {
	Config config.Config
	DB     *bun.DB
	// Pool is pgx's pool, for the webhook receiver's transactions (see ingest.go).
	Pool  *pgxpool.Pool
	Store *db.Store
	Queue *jobs.Queue
	// JobsUI is River's web UI, mounted at /app/jobs; nil leaves it out.
	JobsUI http.Handler
	Logger *slog.Logger
	// UpstreamTimeout bounds each call to a gateway's API; 0 means 10 s.
	UpstreamTimeout time.Duration
}

// Server holds the dependencies the handlers share.
type Server struct {
	cfg config.Config
	db  *bun.DB
	// pool is pgx's, for the two hot paths: webhooks (ingest.go) and heartbeats.
	pool   *pgxpool.Pool
	store  *db.Store
	queue  *jobs.Queue
	jobsUI http.Handler
	log    *slog.Logger
	assets static.Assets
	csrf   csrfKey
	box    *secretbox.Box
	// upstream calls the gateways' APIs, with the contract's timeout.
	upstream *http.Client
	// cardsClient calls the virtual-card API: the same timeout, and a
	// redirect is passed back rather than followed with the key.
	cardsClient *http.Client
	gwaCache    gwaSecretCache
	ingest      *ingester
	beats       *groupCommit[agentBeat, bool]
	// methods is every route's methods, for 405 (methods.go).
	methods routeTable
	// rejections counts refused webhook deliveries in memory (rejections.go).
	rejections *rejectionCounter
	// live tells open pages what changed (live.go); views renders its fragments.
	live  *liveHub
	views *html.Engine
	// badgeQueries holds a slot per unread count a stream is running (live.go).
	badgeQueries chan struct{}
	// cards keeps the task board's rendered cards (card_cache.go).
	cards cardCache
	// checker runs "comprobar ahora" of the URL monitor, as the worker's checks do.
	checker *jobs.Checker
}

// New builds the Fiber app with every route of routes.go.
func New(d Deps) (*fiber.App, error) {
	assets, err := static.Load()
	if err != nil {
		return nil, fmt.Errorf("load static files: %w", err)
	}
	box, err := secretbox.New(d.Config.AppSecret)
	if err != nil {
		return nil, err
	}
	if d.UpstreamTimeout == 0 {
		d.UpstreamTimeout = 10 * time.Second
	}
	s := &Server{
		cfg: d.Config, db: d.DB, pool: d.Pool, store: d.Store, queue: d.Queue, jobsUI: d.JobsUI,
		log: d.Logger, assets: assets, csrf: newCSRFKey(d.Config.AppSecret), box: box,
		upstream: &http.Client{Timeout: d.UpstreamTimeout},
		cardsClient: &http.Client{Timeout: d.UpstreamTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	engine := newEngine(http.FS(views.FS))
	engine.AddFunc("asset", assets.URL)
	if err := engine.Load(); err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}

	app := fiber.New(fiber.Config{
		AppName:               "pasarela",
		Views:                 engine,
		ErrorHandler:          s.handleError,
		DisableStartupMessage: true,
		// Uploads are the largest bodies; the webhook keeps its own 1 MiB limit.
		BodyLimit:    int(d.Config.UploadMaxBytes) + 1<<20,
		ReadTimeout:  30 * time.Second,
		WriteTimeout: 60 * time.Second,
		IdleTimeout:  120 * time.Second,
	})
	s.ingest = newIngester(d.Pool, d.Store, d.Queue, d.Logger)
	s.rejections = newRejectionCounter(d.DB, d.Store, d.Logger)
	s.beats = newBeatWriter(s)
	if s.live, err = startLiveHub(d.Pool.Config().ConnConfig.Copy(), d.Logger); err != nil {
		return nil, err
	}
	s.views = engine
	s.badgeQueries = make(chan struct{}, liveBadgeQueries)
	s.checker = jobs.NewChecker()
	// After the HTTP server has finished its requests (event streams end when
	// the shutdown starts): nothing more comes in. Once, however many times
	// the app is shut down.
	var closeOnce sync.Once
	app.Hooks().OnShutdown(func() error {
		closeOnce.Do(func() { s.ingest.close(); s.beats.close(); s.rejections.close(); s.live.close() })
		return nil
	})
	s.routes(app)
	return app, nil
}

// newEngine is the template engine with the app's functions.
//
// Layouts write {{with embed}}{{fail .}}{{end}}, not {{embed}}: the engine's
// embed returns only an error, which a template prints as a value, so a page
// that failed to render showed the error's text inside a 200 page. fail turns
// it back into an error: the render fails and the user gets the 500 page.
func newEngine(fs http.FileSystem) *html.Engine {
	engine := html.NewFileSystem(fs, ".html")
	engine.AddFunc("fail", func(err error) (string, error) { return "", err })
	engine.AddFunc("localtime", localTime)
	engine.AddFunc("dict", dict)
	engine.AddFunc("add", func(a, b int) int { return a + b })
	engine.AddFunc("deref", func(p *float64) float64 { return *p })
	engine.AddFunc("derefInt", func(p *int64) int64 { return *p })
	engine.AddFunc("money", money)
	engine.AddFunc("eventLabel", eventLabel)
	engine.AddFunc("envLabel", envLabel)
	engine.AddFunc("badge", badgeFor)
	engine.AddFunc("notifEventLabel", notifEventLabel)
	return engine
}

// dict builds a map for passing several values to a partial: dict "k" v "k2" v2.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: odd number of arguments")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}
