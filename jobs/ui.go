package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"riverqueue.com/riverui"
)

// UIPrefix is where River's web UI is mounted (admins only, see server/routes.go).
const UIPrefix = "/app/jobs"

// NewUI starts River's web UI on an insert-only pgx client: it lists jobs,
// retries and cancels them, and works none itself.
func NewUI(ctx context.Context, pool *pgxpool.Pool, workers *river.Workers, logger *slog.Logger) (http.Handler, error) {
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:  logger.With("component", "river"),
		Workers: workers,
	})
	if err != nil {
		return nil, fmt.Errorf("river ui client: %w", err)
	}
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(client, nil),
		Logger:    logger.With("component", "riverui"),
		Prefix:    UIPrefix,
	})
	if err != nil {
		return nil, fmt.Errorf("river ui: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return nil, fmt.Errorf("start river ui: %w", err)
	}
	return h, nil
}
