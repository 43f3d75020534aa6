// Package server is Pasarela's HTTP side: routes, middleware, handlers and the
// one helper that renders a full page or an htmx fragment.
package server

import (
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/template/html/v2"
	"github.com/uptrace/bun"

	"pasarela/config"
	"pasarela/db"
	"pasarela/jobs"
	"pasarela/static"
	"pasarela/views"
)

// Deps is what the HTTP side is built from; main wires it by hand.
type Deps struct {
	Config config.Config
	DB     *bun.DB
	Store  *db.Store
	Queue  *jobs.Queue
	// JobsUI is River's web UI, mounted at /app/jobs; nil leaves it out.
	JobsUI http.Handler
	Logger *slog.Logger
}

// Server holds the dependencies the handlers share.
type Server struct {
	cfg    config.Config
	db     *bun.DB
	store  *db.Store
	queue  *jobs.Queue
	jobsUI http.Handler
	log    *slog.Logger
	assets static.Assets
	csrf   csrfKey
}

// New builds the Fiber app with every route of routes.go.
func New(d Deps) (*fiber.App, error) {
	assets, err := static.Load()
	if err != nil {
		return nil, fmt.Errorf("load static files: %w", err)
	}
	s := &Server{
		cfg: d.Config, db: d.DB, store: d.Store, queue: d.Queue, jobsUI: d.JobsUI,
		log: d.Logger, assets: assets, csrf: newCSRFKey(d.Config.AppSecret),
	}
	engine := html.NewFileSystem(http.FS(views.FS), ".html")
	engine.AddFunc("asset", assets.URL)
	engine.AddFunc("json", func(v string) template.JS { return template.JS(v) })
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
	s.routes(app)
	return app, nil
}
