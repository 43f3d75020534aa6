package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// TaskFile is a file attached to a task. Nombre is the name it was uploaded
// with (shown and offered on download); Archivo the name the server chose.
type TaskFile struct {
	bun.BaseModel `bun:"table:tarea_adjuntos,alias:f"`

	ID        int64     `bun:"id,pk,autoincrement"`
	TareaID   int64     `bun:"tarea_id"`
	UserID    *int64    `bun:"user_id"`
	Nombre    string    `bun:"nombre"`
	Archivo   string    `bun:"archivo"`
	Bytes     int64     `bun:"bytes"`
	CreatedAt time.Time `bun:"created_at,nullzero,default:now()"`
}

// AddTaskFile records an attached file and a line of history.
func (s *Store) AddTaskFile(ctx context.Context, tx bun.Tx, f *TaskFile) error {
	if _, err := tx.NewInsert().Model(f).Exec(ctx); err != nil {
		return fmt.Errorf("attach %q to task %d: %w", f.Nombre, f.TareaID, err)
	}
	return s.logActivity(ctx, tx, f.TareaID, *f.UserID, "adjunto", f.Nombre)
}

// TaskFiles lists a task's files, oldest first.
func (s *Store) TaskFiles(ctx context.Context, idb bun.IDB, taskID int64) ([]TaskFile, error) {
	var rows []TaskFile
	if err := idb.NewSelect().Model(&rows).Where("tarea_id = ?", taskID).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("files of task %d: %w", taskID, err)
	}
	return rows, nil
}

// TaskFile returns one file of a task (another task's is ErrNotFound).
func (s *Store) TaskFile(ctx context.Context, idb bun.IDB, taskID, id int64) (*TaskFile, error) {
	f := new(TaskFile)
	err := idb.NewSelect().Model(f).Where("id = ? AND tarea_id = ?", id, taskID).Scan(ctx)
	if isNoRows(err) {
		return nil, fmt.Errorf("file %d of task %d: %w", id, taskID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load file %d: %w", id, err)
	}
	return f, nil
}

// DeleteTaskFile forgets a file; the caller removes it from disk.
func (s *Store) DeleteTaskFile(ctx context.Context, idb bun.IDB, taskID, id int64) error {
	res, err := idb.NewDelete().Model((*TaskFile)(nil)).Where("id = ? AND tarea_id = ?", id, taskID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete file %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("file %d of task %d: %w", id, taskID, ErrNotFound)
	}
	return nil
}
