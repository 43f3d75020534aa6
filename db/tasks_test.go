package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"pasarela/db"
	"pasarela/db/dbtest"
)

type board struct {
	t     *testing.T
	env   *dbtest.Env
	s     *db.Store
	admin int64
}

func newBoard(t *testing.T) *board {
	t.Helper()
	env := dbtest.New(t)
	u, err := (&db.Store{}).UpsertUser(context.Background(), env.DB, "admin@example.com", "a-good-password", db.RoleAdmin)
	require.NoError(t, err)
	return &board{t: t, env: env, s: &db.Store{}, admin: u.ID}
}

func (b *board) create(title string) *db.Task {
	b.t.Helper()
	task := &db.Task{Titulo: title, Prioridad: "media"}
	require.NoError(b.t, db.RunMove(context.Background(), b.env.DB, func(ctx context.Context, tx bun.Tx) error {
		return b.s.CreateTask(ctx, tx, task, b.admin)
	}))
	return task
}

func (b *board) move(id int64, estado string, after int64, version int) (*db.Task, error) {
	var moved *db.Task
	err := db.RunMove(context.Background(), b.env.DB, func(ctx context.Context, tx bun.Tx) error {
		var err error
		moved, err = b.s.MoveTask(ctx, tx, id, estado, after, version, b.admin)
		return err
	})
	return moved, err
}

// column lists the titles of a column, top to bottom.
func (b *board) column(estado string) []string {
	b.t.Helper()
	tasks, err := b.s.Board(context.Background(), b.env.DB, db.TaskFilter{})
	require.NoError(b.t, err)
	var out []string
	for _, t := range tasks {
		if t.Estado == estado {
			out = append(out, t.Titulo)
		}
	}
	return out
}

func TestATaskMovesFromEveryStateToEveryState(t *testing.T) {
	t.Parallel()
	b := newBoard(t)
	task := b.create("viaje")
	for _, from := range db.TaskStates {
		for _, to := range db.TaskStates {
			_, err := b.move(task.ID, from, 0, 0)
			require.NoError(t, err)
			moved, err := b.move(task.ID, to, 0, 0)
			require.NoError(t, err, "%s → %s", from, to)
			require.Equal(t, to, moved.Estado)
			require.Equal(t, []string{"viaje"}, b.column(to))
		}
	}
}

func TestAMovePlacesTheCardBelowItsNeighbourAndKeepsTheOrder(t *testing.T) {
	t.Parallel()
	b := newBoard(t)
	a, _, d := b.create("a"), b.create("c"), b.create("d") // each new card goes on top: d, c, a
	require.Equal(t, []string{"d", "c", "a"}, b.column(db.TaskTodo))
	// Into another column: first at the top, then below it.
	_, err := b.move(a.ID, db.TaskDoing, 0, 0)
	require.NoError(t, err)
	_, err = b.move(d.ID, db.TaskDoing, a.ID, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "d"}, b.column(db.TaskDoing))
	// Between two cards, many times over: the gap runs out and the column is renumbered.
	for i := 0; i < 15; i++ {
		x := b.create(fmt.Sprintf("x%d", i))
		_, err := b.move(x.ID, db.TaskDoing, a.ID, 0)
		require.NoError(t, err)
	}
	col := b.column(db.TaskDoing)
	require.Equal(t, "a", col[0])
	require.Equal(t, "x14", col[1], "the newest lands right below a")
	require.Equal(t, "d", col[len(col)-1])
	require.Equal(t, []string{"c"}, b.column(db.TaskTodo))
}

func TestAMoveIsRefusedFromAStaleVersionOrBesideACardOfAnotherColumn(t *testing.T) {
	t.Parallel()
	b := newBoard(t)
	a, other := b.create("a"), b.create("other")
	moved, err := b.move(a.ID, db.TaskDoing, 0, a.Version)
	require.NoError(t, err)
	require.Equal(t, a.Version+1, moved.Version)
	_, err = b.move(a.ID, db.TaskDone, 0, a.Version)
	require.ErrorIs(t, err, db.ErrStale, "a second browser still holds the old version")
	_, err = b.move(a.ID, db.TaskDoing, other.ID, 0)
	require.ErrorIs(t, err, db.ErrBadNeighbour, "other is in por_hacer")
	_, err = b.move(99999, db.TaskDoing, 0, 0)
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestFiftyConcurrentMovesLeaveOneConsistentOrder(t *testing.T) {
	t.Parallel()
	b := newBoard(t)
	var ids []int64
	for i := 0; i < 50; i++ {
		ids = append(ids, b.create(fmt.Sprintf("t%02d", i)).ID)
	}
	// Everyone moves to en_progreso below the card created just before it.
	errs := b.concurrently(ids, db.TaskDoing, func(i int) int64 {
		if i == 0 {
			return 0
		}
		return ids[i-1]
	})
	for i, err := range errs {
		if err != nil {
			require.ErrorIs(t, err, db.ErrBadNeighbour, "move %d", i) // its neighbour had not arrived yet
		}
	}
	col := b.column(db.TaskDoing)
	seen := map[string]bool{}
	for _, title := range col {
		require.False(t, seen[title], "%s twice", title)
		seen[title] = true
	}
	require.Len(t, append(col, b.column(db.TaskTodo)...), 50, "no card lost")
	b.requireDistinctPlaces()
}

// concurrently runs every move at once and returns their errors.
func (b *board) concurrently(ids []int64, estado string, after func(i int) int64) []error {
	b.t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.move(id, estado, after(i), 0)
		}()
	}
	wg.Wait()
	return errs
}

func requireNoErrors(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		require.NoError(t, err, "move %d", i)
	}
}

// requireDistinctPlaces checks that no two cards of a column share a place.
func (b *board) requireDistinctPlaces() {
	b.t.Helper()
	var dup int
	require.NoError(b.t, b.env.DB.NewRaw(`SELECT count(*) FROM (SELECT estado, posicion FROM tareas GROUP BY 1, 2 HAVING count(*) > 1) d`).
		Scan(context.Background(), &dup))
	require.Zero(b.t, dup, "no two cards share a place")
}

func TestFiftyConcurrentMovesToTheTopOfOneColumnAllLand(t *testing.T) {
	t.Parallel()
	b := newBoard(t)
	var ids []int64
	for i := 0; i < 50; i++ {
		ids = append(ids, b.create(fmt.Sprintf("t%02d", i)).ID)
	}
	// Every mover reads a top card that others are replacing at that moment.
	requireNoErrors(t, b.concurrently(ids, db.TaskReview, func(int) int64 { return 0 }))
	require.Len(t, b.column(db.TaskReview), 50, "no card lost")
	b.requireDistinctPlaces()
}

func TestConcurrentMovesIntoAGapWithNoRoomRenumberTheColumnAndKeepItsOrder(t *testing.T) {
	t.Parallel()
	b := newBoard(t)
	var ids []int64
	for i := 0; i < 30; i++ {
		ids = append(ids, b.create(fmt.Sprintf("t%02d", i)).ID)
	}
	ctx := context.Background()
	// Ten cards in en_progreso on consecutive places (c0 at 0 … c9 at 9): no room anywhere.
	col := ids[:10]
	for i, id := range col {
		_, err := b.env.DB.ExecContext(ctx, "UPDATE tareas SET estado = ?, posicion = ?, titulo = ? WHERE id = ?",
			db.TaskDoing, i, fmt.Sprintf("c%d", i), id)
		require.NoError(t, err)
	}
	requireNoErrors(t, b.concurrently(ids[10:], db.TaskDoing, func(int) int64 { return col[4] }))

	got := b.column(db.TaskDoing)
	require.Len(t, got, 30)
	require.Equal(t, []string{"c0", "c1", "c2", "c3", "c4"}, got[:5], "the cards above stay above")
	require.Equal(t, []string{"c5", "c6", "c7", "c8", "c9"}, got[25:], "the cards below stay below")
	b.requireDistinctPlaces()
}

func TestAMoveWhosePlaceWasTakenIsRunAgain(t *testing.T) {
	t.Parallel()
	b := newBoard(t)
	a, c := b.create("a"), b.create("c")
	runs := 0
	err := db.RunMove(context.Background(), b.env.DB, func(ctx context.Context, tx bun.Tx) error {
		runs++
		place := a.Posicion // taken: the commit refuses it
		if runs > 1 {
			place = a.Posicion + 1
		}
		_, err := tx.ExecContext(ctx, "UPDATE tareas SET posicion = ? WHERE id = ?", place, c.ID)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, 2, runs, "refused once at commit, then run again")
	require.Equal(t, []string{"a", "c"}, b.column(db.TaskTodo))
}

func TestRenumberingAColumnLeavesAloneACardMovedOutOfItMeanwhile(t *testing.T) {
	t.Parallel()
	b := newBoard(t)
	ctx := context.Background()
	var ids []int64
	for i := 0; i < 6; i++ {
		ids = append(ids, b.create(fmt.Sprintf("c%d", i)).ID)
	}
	for i, id := range ids[:5] { // en_progreso on consecutive places: no room
		_, err := b.env.DB.ExecContext(ctx, "UPDATE tareas SET estado = ?, posicion = ? WHERE id = ?", db.TaskDoing, i, id)
		require.NoError(t, err)
	}
	leaving := ids[4]
	// Another move takes the last card out to hecho and has not committed yet.
	tx, err := b.env.DB.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE tareas SET estado = ?, posicion = 777777 WHERE id = ?", db.TaskDone, leaving)
	require.NoError(t, err)
	// Meanwhile a move into en_progreso finds no room: the column is
	// renumbered, and the renumbering waits for the leaving card's row.
	done := make(chan error, 1)
	go func() {
		_, err := b.move(ids[5], db.TaskDoing, ids[1], 0)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, tx.Commit())
	require.NoError(t, <-done)

	var left struct {
		Estado   string
		Posicion int64
	}
	require.NoError(t, b.env.DB.NewRaw("SELECT estado, posicion FROM tareas WHERE id = ?", leaving).Scan(ctx, &left))
	require.Equal(t, db.TaskDone, left.Estado)
	require.Equal(t, int64(777777), left.Posicion, "the renumbering did not move it back into its old column's places")
	require.Equal(t, []string{"c0", "c1", "c5", "c2", "c3"}, b.column(db.TaskDoing))
}
