package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// OverdueTasksArgs sends tarea_vencida for each task past its due date and
// not done, once a day (CONTRACT §4).
type OverdueTasksArgs struct{}

// Kind is the job's name in River's tables.
func (OverdueTasksArgs) Kind() string { return "tareas_vencidas" }

// OverdueTasksWorker works OverdueTasksArgs.
type OverdueTasksWorker struct {
	river.WorkerDefaults[OverdueTasksArgs]
	db    *bun.DB
	store *db.Store
}

// Timeout bounds one round; it only inserts delivery jobs.
func (w *OverdueTasksWorker) Timeout(*river.Job[OverdueTasksArgs]) time.Duration {
	return MaxJobTimeout
}

// Work emits one event per overdue task, keyed by task and day: a second run
// the same day (two leaders, a retry, a restart) delivers nothing more.
func (w *OverdueTasksWorker) Work(ctx context.Context, _ *river.Job[OverdueTasksArgs]) error {
	tasks, err := w.store.OverdueTasks(ctx, w.db)
	if err != nil || len(tasks) == 0 {
		return err
	}
	cfg, err := w.store.EventConfig(ctx, w.db, "tarea_vencida")
	if err != nil {
		return err
	}
	day := time.Now().Format("2006-01-02")
	var params []river.InsertManyParams
	for _, t := range tasks {
		params = append(params, deliveries(cfg, Event{Evento: "tarea_vencida",
			Titulo: fmt.Sprintf("«%s» está vencida", t.Titulo),
			Texto:  "Vencía el " + t.FechaLimite.Format("02-01-2006") + " y sigue en " + t.Estado + ".",
			Enlace: fmt.Sprintf("/tarea/%d", t.ID), UserIDs: Recipients(0, t.AsignadoID, t.CreadoPor),
			Key: fmt.Sprintf("tarea_vencida:%d:%s", t.ID, day)})...)
	}
	if len(params) == 0 {
		return nil
	}
	if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertMany(ctx, params); err != nil {
		return fmt.Errorf("insert %d overdue-task deliveries: %w", len(params), err)
	}
	return nil
}
