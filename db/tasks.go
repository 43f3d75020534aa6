package db

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
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

// columnLock, with the column's index, guards one column's order (see
// lockColumn). Moves and creations take it shared, so they never wait for one
// another: each picks a random free place in its gap (two moves into one gap
// rarely pick the same), and the unique constraint on (estado, posicion)
// refuses the rare second one at commit, to be run again (RunMove). Only
// renumbering a column takes it exclusive. A lock held through the commit
// made movers into one column wait for each other's disk flush (README,
// Performance: p99 92–99 ms with it, 54–60 ms without).
const columnLock = 7261_0003

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
	// Comentarios and Adjuntos count the task's comments and files, kept by
	// triggers (migration 20261207000001): never written from here.
	Comentarios int `bun:"comentarios,scanonly"`
	Adjuntos    int `bun:"adjuntos,scanonly"`
	// MovedFrom is the column MoveTask found the task in, with its row locked
	// (not stored).
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

// lockColumn takes column estado's order until the transaction ends: shared
// to add a card to it, exclusive to renumber it. The column's place among
// TaskStates is the lock's second key.
func lockColumn(ctx context.Context, tx bun.Tx, estado string, exclusive bool) error {
	i := slices.Index(TaskStates, estado)
	if i < 0 {
		return fmt.Errorf("lock column %q: not a column", estado)
	}
	lock := "SELECT pg_advisory_xact_lock_shared(?, ?)"
	if exclusive {
		lock = "SELECT pg_advisory_xact_lock(?, ?)"
	}
	if _, err := tx.ExecContext(ctx, lock, columnLock, i); err != nil {
		return fmt.Errorf("lock column %s: %w", estado, err)
	}
	return nil
}

// placeBetween is a random free place strictly between above and below (nil:
// no card there), or false when there is none.
func placeBetween(above, below *int64) (int64, bool) {
	switch {
	case above == nil && below == nil:
		return rand.Int64N(positionGap), true
	case above == nil:
		return *below - 1 - rand.Int64N(positionGap), true
	case below == nil:
		return *above + 1 + rand.Int64N(positionGap), true
	case *below-*above >= 2:
		return *above + 1 + rand.Int64N(*below-*above-1), true
	}
	return 0, false
}

// CreateTask stores a new task at the top of por_hacer, with its history's first line.
func (s *Store) CreateTask(ctx context.Context, tx bun.Tx, t *Task, by int64) error {
	if err := lockColumn(ctx, tx, TaskTodo, false); err != nil {
		return err
	}
	var top *int64
	if err := tx.NewSelect().Model((*Task)(nil)).ColumnExpr("min(posicion)").Where("estado = ?", TaskTodo).Scan(ctx, &top); err != nil {
		return fmt.Errorf("top of %s: %w", TaskTodo, err)
	}
	t.Estado, t.Version, t.CreadoPor = TaskTodo, 1, &by
	t.Posicion, _ = placeBetween(nil, top)
	if _, err := tx.NewInsert().Model(t).Exec(ctx); err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	return s.logActivity(ctx, tx, t.ID, by, "creada", "")
}

// MoveTask puts a task in column estado right below the task after (0: at
// the top). A version other than 0 must be the task's current one (ErrStale).
// A neighbour that is not in that column is ErrBadNeighbour.
func (s *Store) MoveTask(ctx context.Context, tx bun.Tx, id int64, estado string, after int64, version int, by int64) (*Task, error) {
	if err := lockColumn(ctx, tx, estado, false); err != nil {
		return nil, err
	}
	pos, from, err := s.slotBelow(ctx, tx, id, estado, after, version)
	if err != nil {
		return nil, err
	}
	// One statement: the move, its line of history when the column changes,
	// and the task as it is now.
	moved := new(Task)
	err = tx.NewRaw(`WITH moved AS (
			UPDATE tareas SET estado = ?, posicion = ?, version = version + 1, updated_at = now()
			WHERE id = ? RETURNING *),
		logged AS (
			INSERT INTO tarea_actividad (tarea_id, user_id, accion, detalle)
			SELECT id, ?, 'movida', ? FROM moved WHERE ? <> estado)
		SELECT moved.*, COALESCE(u.email, '') AS asignado_email FROM moved LEFT JOIN users AS u ON u.id = moved.asignado_id`,
		estado, pos, id, by, from+" → "+estado, from).Scan(ctx, moved)
	if err != nil {
		return nil, fmt.Errorf("move task %d: %w", id, err)
	}
	moved.MovedFrom = from
	return moved, nil
}

// slotBelow is a free position in column estado right below task after (0:
// the top), the moving task itself left out, and the column the task is in
// now (noRoomError when there is no room there). The caller holds the
// column's lock (shared); the task's row is locked here, so two moves of one
// card take turns and each sees the column and version the other left.
func (s *Store) slotBelow(ctx context.Context, tx bun.Tx, moving int64, estado string, after int64, version int) (int64, string, error) {
	var n struct {
		Estado  *string
		Version int
		Found   bool
		Above   *int64
		Below   *int64
	}
	// One round trip: the task (locked), the neighbour's position (none
	// when after is 0 or not in the column) and the first position past it.
	err := tx.NewRaw(`WITH cur AS (SELECT estado, version FROM tareas WHERE id = ? FOR UPDATE),
			a AS (SELECT posicion FROM tareas WHERE id = ? AND estado = ? AND id <> ?)
			SELECT (SELECT estado FROM cur) AS estado, COALESCE((SELECT version FROM cur), 0) AS version,
			       EXISTS (SELECT 1 FROM a) AS found, (SELECT posicion FROM a) AS above,
			       (SELECT min(posicion) FROM tareas WHERE estado = ? AND id <> ?
			          AND posicion > COALESCE((SELECT posicion FROM a), -9223372036854775808)) AS below`,
		moving, after, estado, moving, estado, moving).Scan(ctx, &n)
	switch {
	case err != nil:
		return 0, "", fmt.Errorf("neighbours in %s: %w", estado, err)
	case n.Estado == nil:
		return 0, "", fmt.Errorf("task %d: %w", moving, ErrNotFound)
	case version != 0 && version != n.Version:
		return 0, "", ErrStale
	case after != 0 && !n.Found:
		return 0, "", ErrBadNeighbour
	}
	pos, ok := placeBetween(n.Above, n.Below)
	if !ok {
		return 0, "", noRoomError{estado}
	}
	return pos, *n.Estado, nil
}

// noRoomError is a move with no free place between its new neighbours:
// RunMove renumbers the column and runs the move again.
type noRoomError struct{ estado string }

func (e noRoomError) Error() string { return "no room left in column " + e.estado }

// renumberColumn spreads a column's places out again, alone in the column
// (cards arrive only under its shared lock). A card a concurrent move takes
// out of it meanwhile is left alone: t.estado is checked again on the row as
// that move left it.
func renumberColumn(ctx context.Context, bdb *bun.DB, estado string) error {
	return bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := lockColumn(ctx, tx, estado, true); err != nil {
			return err
		}
		if _, err := tx.NewRaw(`UPDATE tareas AS t SET posicion = r.n * ? FROM (
				SELECT id, row_number() OVER (ORDER BY posicion, id) AS n FROM tareas WHERE estado = ?) AS r
			WHERE t.id = r.id AND t.estado = ?`, positionGap, estado, estado).Exec(ctx); err != nil {
			return fmt.Errorf("renumber %s: %w", estado, err)
		}
		return nil
	})
}

// UpdateTask saves the editable fields of t if version is still current (0:
// whatever the version).
func (s *Store) UpdateTask(ctx context.Context, tx bun.Tx, t *Task, version int, by int64) error {
	q := tx.NewUpdate().Model(t).Column("titulo", "descripcion", "prioridad", "asignado_id", "fecha_limite").
		Set("version = version + 1, updated_at = now()").WherePK()
	if version != 0 {
		q = q.Where("version = ?", version)
	}
	res, err := q.Exec(ctx)
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

// TaskFigures are the Panel's figures of the board.
type TaskFigures struct {
	Open    int `bun:"open"`    // not hecho
	Overdue int `bun:"overdue"` // not hecho, past the due date
	Mine    int `bun:"mine"`    // not hecho, assigned to the user
	DoneDay int `bun:"done"`    // moved to hecho in the last 24 h
}

// TaskFigures counts the board for the Panel, as userID sees it.
func (s *Store) TaskFigures(ctx context.Context, idb bun.IDB, userID int64) (TaskFigures, error) {
	var f TaskFigures
	err := idb.NewRaw(`SELECT count(*) FILTER (WHERE estado <> ?) AS open,
			count(*) FILTER (WHERE estado <> ? AND fecha_limite < current_date) AS overdue,
			count(*) FILTER (WHERE estado <> ? AND asignado_id = ?) AS mine,
			count(*) FILTER (WHERE estado = ? AND updated_at > now() - interval '24 hours') AS done
		FROM tareas`, TaskDone, TaskDone, TaskDone, userID, TaskDone).Scan(ctx, &f)
	if err != nil {
		return f, fmt.Errorf("task figures: %w", err)
	}
	return f, nil
}

// RecordAssignment adds "asignada" to a task's history, naming the assignee
// (to; nil: nobody).
func (s *Store) RecordAssignment(ctx context.Context, idb bun.IDB, taskID, by int64, to *int64) error {
	_, err := idb.NewRaw(`INSERT INTO tarea_actividad (tarea_id, user_id, accion, detalle)
		SELECT ?, ?, 'asignada', COALESCE((SELECT email FROM users WHERE id = ?), 'sin asignar')`, taskID, by, to).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record the assignment of task %d: %w", taskID, err)
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

// RunMove runs fn, a transaction that adds a card to a column (a move, a
// creation), again when a second run cures what rolled it back: a deadlock, a
// serialization failure, a concurrent move that took the same place first
// (tareas_columna_key), or no room between the neighbours (the column is
// renumbered first). fn runs whole each time.
func RunMove(ctx context.Context, bdb *bun.DB, fn func(ctx context.Context, tx bun.Tx) error) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		err = bdb.RunInTx(ctx, nil, fn)
		var full noRoomError
		switch {
		case errors.As(err, &full):
			if err := renumberColumn(ctx, bdb, full.estado); err != nil && !retryable(err) {
				return err
			}
		case !retryable(err): // done, or failed for good
			return err
		}
	}
	return err
}

func retryable(err error) bool {
	var pe pgdriver.Error
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Field('C') {
	case "40P01", "40001":
		return true
	case "23505":
		return pe.Field('n') == "tareas_columna_key"
	}
	return false
}
