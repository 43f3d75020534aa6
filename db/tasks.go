package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Task states, in board order, and priorities (CONTRACT §4).
const (
	TaskTodo   = "por_hacer"
	TaskDoing  = "en_progreso"
	TaskReview = "revisión"
	TaskDone   = "hecho"
)

// TaskStates are the board's columns, in order.
var TaskStates = []string{TaskTodo, TaskDoing, TaskReview, TaskDone}

// TaskPriorities are the priorities a task can have, lowest first.
var TaskPriorities = []string{"baja", "media", "alta", "urgente"}

var (
	// ErrStale is a change made from an old version of a task.
	ErrStale = errors.New("the task changed since it was read")
	// ErrBadNeighbour is a despues_de that is not a card of the target column.
	ErrBadNeighbour = errors.New("despues_de is not a task of that column")
)

// positionGap is the room left between neighbours, so a move writes one row.
const positionGap = 1024

// boardLock serialises changes to the board's order: a move is a few small
// statements, and one lock keeps every column's order consistent however many
// people move cards at once.
const boardLock = 7261_0003

// Task is one card of the board.
type Task struct {
	bun.BaseModel `bun:"table:tareas,alias:t"`

	ID          int64      `bun:"id,pk,autoincrement"`
	Titulo      string     `bun:"titulo"`
	Descripcion string     `bun:"descripcion"`
	Prioridad   string     `bun:"prioridad"`
	Estado      string     `bun:"estado"`
	Posicion    int64      `bun:"posicion"`
	AsignadoID  *int64     `bun:"asignado_id"`
	FechaLimite *time.Time `bun:"fecha_limite,type:date"`
	Version     int        `bun:"version"`
	CreadoPor   *int64     `bun:"creado_por"`
	CreatedAt   time.Time  `bun:"created_at,nullzero,default:now()"`
	UpdatedAt   time.Time  `bun:"updated_at,nullzero,default:now()"`

	// AsignadoEmail is the assignee's e-mail (reads only).
	AsignadoEmail string `bun:"asignado_email,scanonly"`
	// MovedFrom is the column MoveTask found the task in, under the board's
	// lock (not stored).
	MovedFrom string `bun:"-"`
}

// Overdue reports whether the task is past its due date and not done.
func (t Task) Overdue(now time.Time) bool {
	if t.FechaLimite == nil || t.Estado == TaskDone {
		return false
	}
	y, m, d := now.Date()
	return t.FechaLimite.Before(time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
}

// TaskActivity is one line of a task's history.
type TaskActivity struct {
	bun.BaseModel `bun:"table:tarea_actividad,alias:a"`

	ID        int64     `bun:"id,pk,autoincrement"`
	TareaID   int64     `bun:"tarea_id"`
	UserID    *int64    `bun:"user_id"`
	Accion    string    `bun:"accion"`
	Detalle   string    `bun:"detalle"`
	CreatedAt time.Time `bun:"created_at,nullzero,default:now()"`

	UserEmail string `bun:"user_email,scanonly"`
}

// TaskFilter narrows the board: an assignee, a priority, text in the title.
type TaskFilter struct {
	AsignadoID int64
	Prioridad  string
	Q          string
}

func withAssignee(q *bun.SelectQuery) *bun.SelectQuery {
	return q.ColumnExpr("t.*, COALESCE(u.email, '') AS asignado_email").
		Join("LEFT JOIN users AS u ON u.id = t.asignado_id")
}

// Board returns the filtered tasks in board order (column, then position).
func (s *Store) Board(ctx context.Context, idb bun.IDB, f TaskFilter) ([]Task, error) {
	var rows []Task
	q := withAssignee(idb.NewSelect().Model(&rows))
	if f.AsignadoID > 0 {
		q = q.Where("t.asignado_id = ?", f.AsignadoID)
	}
	if f.Prioridad != "" {
		q = q.Where("t.prioridad = ?", f.Prioridad)
	}
	if f.Q != "" {
		q = q.Where("t.titulo ILIKE ?", "%"+likeEscape(f.Q)+"%")
	}
	if err := q.OrderExpr("t.posicion, t.id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("load board: %w", err)
	}
	return rows, nil
}

func likeEscape(s string) string {
	p := prefixPattern(s)
	return p[:len(p)-1]
}

// Task returns one task.
func (s *Store) Task(ctx context.Context, idb bun.IDB, id int64) (*Task, error) {
	t := new(Task)
	err := withAssignee(idb.NewSelect().Model(t)).Where("t.id = ?", id).Scan(ctx)
	if isNoRows(err) {
		return nil, fmt.Errorf("task %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load task %d: %w", id, err)
	}
	return t, nil
}

func lockBoard(ctx context.Context, tx bun.Tx) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", boardLock); err != nil {
		return fmt.Errorf("lock the board: %w", err)
	}
	return nil
}

// CreateTask stores a new task at the top of por_hacer, with its history's first line.
func (s *Store) CreateTask(ctx context.Context, tx bun.Tx, t *Task, by int64) error {
	if err := lockBoard(ctx, tx); err != nil {
		return err
	}
	var top *int64
	if err := tx.NewSelect().Model((*Task)(nil)).ColumnExpr("min(posicion)").Where("estado = ?", TaskTodo).Scan(ctx, &top); err != nil {
		return fmt.Errorf("top of %s: %w", TaskTodo, err)
	}
	t.Estado, t.Posicion, t.Version, t.CreadoPor = TaskTodo, 0, 1, &by
	if top != nil {
		t.Posicion = *top - positionGap
	}
	if _, err := tx.NewInsert().Model(t).Exec(ctx); err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	return s.logActivity(ctx, tx, t.ID, by, "creada", "")
}

// MoveTask puts a task in column estado right below the task after (0: at
// the top). A version other than 0 must be the task's current one (ErrStale).
// A neighbour that is not in that column is ErrBadNeighbour.
func (s *Store) MoveTask(ctx context.Context, tx bun.Tx, id int64, estado string, after int64, version int, by int64) (*Task, error) {
	if err := lockBoard(ctx, tx); err != nil {
		return nil, err
	}
	t, err := s.Task(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if version != 0 && version != t.Version {
		return t, ErrStale
	}
	pos, err := s.slotBelow(ctx, tx, id, estado, after)
	if err != nil {
		return t, err
	}
	from := t.Estado
	if _, err := tx.NewUpdate().Model((*Task)(nil)).
		Set("estado = ?, posicion = ?, version = version + 1, updated_at = now()", estado, pos).
		Where("id = ?", id).Exec(ctx); err != nil {
		return nil, fmt.Errorf("move task %d: %w", id, err)
	}
	if from != estado {
		if err := s.logActivity(ctx, tx, id, by, "movida", from+" → "+estado); err != nil {
			return nil, err
		}
	}
	moved, err := s.Task(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	moved.MovedFrom = from
	return moved, nil
}

// slotBelow is a free position in column estado right below task after (0:
// the top), the moving task itself left out. A column with no room left there
// is renumbered first.
func (s *Store) slotBelow(ctx context.Context, tx bun.Tx, moving int64, estado string, after int64) (int64, error) {
	for attempt := 0; attempt < 2; attempt++ {
		var above, below *int64
		if after != 0 {
			var p []int64
			if err := tx.NewSelect().Model((*Task)(nil)).Column("posicion").
				Where("id = ? AND estado = ? AND id <> ?", after, estado, moving).Scan(ctx, &p); err != nil {
				return 0, fmt.Errorf("find task %d: %w", after, err)
			}
			if len(p) == 0 {
				return 0, ErrBadNeighbour
			}
			above = &p[0]
		}
		q := tx.NewSelect().Model((*Task)(nil)).ColumnExpr("min(posicion)").Where("estado = ? AND id <> ?", estado, moving)
		if above != nil {
			q = q.Where("posicion > ?", *above)
		}
		if err := q.Scan(ctx, &below); err != nil {
			return 0, fmt.Errorf("next task in %s: %w", estado, err)
		}
		switch {
		case above == nil && below == nil:
			return 0, nil
		case above == nil:
			return *below - positionGap, nil
		case below == nil:
			return *above + positionGap, nil
		case *below-*above >= 2:
			return *above + (*below-*above)/2, nil
		}
		// No room between the two: spread the column out again.
		if _, err := tx.NewRaw(`UPDATE tareas AS t SET posicion = r.n * ? FROM (
				SELECT id, row_number() OVER (ORDER BY posicion, id) AS n FROM tareas WHERE estado = ? AND id <> ?) AS r
			WHERE t.id = r.id`, positionGap, estado, moving).Exec(ctx); err != nil {
			return 0, fmt.Errorf("renumber %s: %w", estado, err)
		}
	}
	return 0, fmt.Errorf("no room in %s after renumbering", estado)
}

// UpdateTask saves the editable fields of t if version is still current.
func (s *Store) UpdateTask(ctx context.Context, tx bun.Tx, t *Task, version int, by int64) error {
	res, err := tx.NewUpdate().Model(t).Column("titulo", "descripcion", "prioridad", "asignado_id", "fecha_limite").
		Set("version = version + 1, updated_at = now()").WherePK().Where("version = ?", version).Exec(ctx)
	if err != nil {
		return fmt.Errorf("update task %d: %w", t.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.Task(ctx, tx, t.ID); err != nil {
			return err
		}
		return ErrStale
	}
	return s.logActivity(ctx, tx, t.ID, by, "editada", "")
}

// DeleteTask removes a task and its history.
func (s *Store) DeleteTask(ctx context.Context, idb bun.IDB, id int64) error {
	res, err := idb.NewDelete().Model((*Task)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete task %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("task %d: %w", id, ErrNotFound)
	}
	return nil
}

func (s *Store) logActivity(ctx context.Context, idb bun.IDB, taskID, by int64, accion, detalle string) error {
	a := &TaskActivity{TareaID: taskID, UserID: &by, Accion: accion, Detalle: detalle}
	if _, err := idb.NewInsert().Model(a).Exec(ctx); err != nil {
		return fmt.Errorf("record %s of task %d: %w", accion, taskID, err)
	}
	return nil
}

// TaskHistory returns a task's activity, newest first.
func (s *Store) TaskHistory(ctx context.Context, idb bun.IDB, taskID int64) ([]TaskActivity, error) {
	var rows []TaskActivity
	err := idb.NewSelect().Model(&rows).ColumnExpr("a.*, COALESCE(u.email, '') AS user_email").
		Join("LEFT JOIN users AS u ON u.id = a.user_id").Where("a.tarea_id = ?", taskID).OrderExpr("a.id DESC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("history of task %d: %w", taskID, err)
	}
	return rows, nil
}

// UserChoice is a user as a select shows it.
type UserChoice struct {
	ID    int64  `bun:"id"`
	Email string `bun:"email"`
}

// UserChoices lists every user, for the assignee select.
func (s *Store) UserChoices(ctx context.Context, idb bun.IDB) ([]UserChoice, error) {
	var rows []UserChoice
	if err := idb.NewSelect().TableExpr("users").Column("id", "email").OrderExpr("email").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return rows, nil
}

// TaskComment is one comment on a task.
type TaskComment struct {
	bun.BaseModel `bun:"table:tarea_comentarios,alias:c"`

	ID        int64     `bun:"id,pk,autoincrement"`
	TareaID   int64     `bun:"tarea_id"`
	UserID    *int64    `bun:"user_id"`
	Texto     string    `bun:"texto"`
	CreatedAt time.Time `bun:"created_at,nullzero,default:now()"`

	UserEmail string `bun:"user_email,scanonly"`
}

// AddComment appends a comment and a line of history.
func (s *Store) AddComment(ctx context.Context, tx bun.Tx, taskID, by int64, texto string) error {
	c := &TaskComment{TareaID: taskID, UserID: &by, Texto: texto}
	if _, err := tx.NewInsert().Model(c).Exec(ctx); err != nil {
		return fmt.Errorf("comment on task %d: %w", taskID, err)
	}
	return s.logActivity(ctx, tx, taskID, by, "comentada", "")
}

// Comments lists a task's comments, oldest first.
func (s *Store) Comments(ctx context.Context, idb bun.IDB, taskID int64) ([]TaskComment, error) {
	var rows []TaskComment
	err := idb.NewSelect().Model(&rows).ColumnExpr("c.*, COALESCE(u.email, '') AS user_email").
		Join("LEFT JOIN users AS u ON u.id = c.user_id").Where("c.tarea_id = ?", taskID).OrderExpr("c.id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("comments of task %d: %w", taskID, err)
	}
	return rows, nil
}

// OverdueTasks lists the tasks past their due date and not done.
func (s *Store) OverdueTasks(ctx context.Context, idb bun.IDB) ([]Task, error) {
	var rows []Task
	err := withAssignee(idb.NewSelect().Model(&rows)).
		Where("t.fecha_limite < current_date AND t.estado <> ?", TaskDone).OrderExpr("t.id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("overdue tasks: %w", err)
	}
	return rows, nil
}
