package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// Stop budgets: running jobs may finish for softStop; then they are cancelled
// (River hands them back for retry) and given hardStop to return.
const (
	softStop = 30 * time.Second
	hardStop = 10 * time.Second
)

// Run works jobs until ctx ends, then stops gracefully: no new jobs are
// fetched, running ones may finish for 30 s, and only then are they cancelled.
//
// The client is started on a context that outlives ctx: River makes the
// context given to Start the parent of every job's context, so starting it on
// the signal's context would cancel running jobs the moment the signal came.
func Run(ctx context.Context, client *river.Client[pgx.Tx], logger *slog.Logger) error {
	return run(ctx, client, logger, softStop, hardStop)
}

func run(ctx context.Context, client *river.Client[pgx.Tx], logger *slog.Logger, soft, hard time.Duration) error {
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start river: %w", err)
	}
	logger.Info("worker started")
	<-ctx.Done()
	logger.Info("worker stopping: letting running jobs finish", "within", soft)
	softCtx, cancel := context.WithTimeout(context.Background(), soft)
	defer cancel()
	if err := client.Stop(softCtx); err == nil {
		logger.Info("worker stopped")
		return nil
	}
	logger.Warn("jobs still running after the soft stop; cancelling them")
	hardCtx, cancelHard := context.WithTimeout(context.Background(), hard)
	defer cancelHard()
	if err := client.StopAndCancel(hardCtx); err != nil {
		return fmt.Errorf("stop river: %w", err)
	}
	return nil
}
