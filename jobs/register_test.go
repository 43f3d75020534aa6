package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
)

type slowKindArgs struct{}

func (slowKindArgs) Kind() string { return "test_slow_kind" }

type slowKindWorker struct {
	river.WorkerDefaults[slowKindArgs]
	timeout time.Duration
}

func (w *slowKindWorker) Timeout(*river.Job[slowKindArgs]) time.Duration { return w.timeout }
func (w *slowKindWorker) Work(context.Context, *river.Job[slowKindArgs]) error {
	return nil
}

// A kind that could still run when a dead worker's jobs are rescued would run
// twice: registering it stops the start.
func TestAddWorkerRefusesAKindThatOutlivesTheRescueDelay(t *testing.T) {
	for _, d := range []time.Duration{0, MaxJobTimeout + time.Second, time.Hour} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("a timeout of %s was accepted", d)
				}
			}()
			addWorker(river.NewWorkers(), &slowKindWorker{timeout: d})
		}()
	}
	addWorker(river.NewWorkers(), &slowKindWorker{timeout: MaxJobTimeout}) // the limit itself is fine
	if rescueAfter <= MaxJobTimeout {
		t.Fatalf("rescueAfter %s must exceed MaxJobTimeout %s", rescueAfter, MaxJobTimeout)
	}
}
