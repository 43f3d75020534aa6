package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"mime"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"pasarela/db"
	"pasarela/jobs"
)

// boardColumn is one state's column of the board.
type boardColumn struct {
	Estado string
	Label  string
	Count  int
	// Cards is the column's cards, rendered (see cardCache).
	Cards template.HTML
	tasks []boardCard
}

// boardCard is a card with what its template needs worked out once: the
// board shows thousands, and each function call in a template is a reflect call.
type boardCard struct {
	db.Task
	Overdue bool
	// Tone is the priority badge's colour.
	Tone string
	// Counts says how many comments and files it has ("" when none).
	Counts string
	// States are the choices of the card's move selector (shared by all cards).
	States []stateChoice
}

type stateChoice struct{ Value, Label string }

// taskCounts is "2 comentarios · 1 adjunto", or "" for a card with neither.
func taskCounts(comments, files int) string {
	var parts []string
	if comments > 0 {
		parts = append(parts, plural(comments, "comentario", "comentarios"))
	}
	if files > 0 {
		parts = append(parts, plural(files, "adjunto", "adjuntos"))
	}
	return strings.Join(parts, " · ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func priorityTone(p string) string {
	switch p {
	case "urgente":
		return "err"
	case "alta":
		return "warn"
	}
	return "neutral"
}

type boardPage struct {
	Page
	Columns    []boardColumn
	Filter     db.TaskFilter
	Users      []db.UserChoice
	Priorities []string
	States     []string
	Today      time.Time
	// Problem is why a move or a new task was refused (shown above the board).
	Problem string
	Form    taskForm
}

// taskForm is what a create or edit form sent, with its problems by field.
type taskForm struct {
	Titulo, Descripcion, Prioridad, AsignadoID, FechaLimite string
	Problems                                                map[string]string
}

func (s *Server) boardData(c *fiber.Ctx) (boardPage, error) {
	ctx := c.UserContext()
	f := db.TaskFilter{Prioridad: c.Query("prioridad"), Q: strings.TrimSpace(c.Query("q"))}
	if v := c.Query("asignado"); v != "" {
		// Not a user id (a hand-edited URL): the board is simply not filtered by it.
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			f.AsignadoID = id
		}
	}
	if f.Prioridad != "" && !slices.Contains(db.TaskPriorities, f.Prioridad) {
		f.Prioridad = ""
	}
	tasks, err := s.store.Board(ctx, s.db, f)
	if err != nil {
		return boardPage{}, err
	}
	users, err := s.store.UserChoices(ctx, s.db)
	if err != nil {
		return boardPage{}, err
	}
	data := boardPage{Page: s.page(c, "Tareas"), Filter: f, Users: users, Priorities: db.TaskPriorities,
		States: db.TaskStates, Today: time.Now(), Form: taskForm{Prioridad: "media"}}
	data.DragDrop = true
	choices := make([]stateChoice, len(db.TaskStates))
	index := map[string]int{}
	for i, st := range db.TaskStates {
		choices[i] = stateChoice{Value: st, Label: badgeFor(st).Label}
		index[st] = i
		data.Columns = append(data.Columns, boardColumn{Estado: st, Label: choices[i].Label})
	}
	for _, t := range tasks {
		i, ok := index[t.Estado]
		if !ok {
			continue
		}
		col := &data.Columns[i]
		col.tasks = append(col.tasks, boardCard{Task: t, Overdue: t.Overdue(data.Today), Tone: priorityTone(t.Prioridad),
			Counts: taskCounts(t.Comentarios, t.Adjuntos), States: choices})
	}
	for i := range data.Columns {
		col := &data.Columns[i]
		col.Count = len(col.tasks)
		if col.Cards, err = s.cards.render(s.views, col.tasks); err != nil {
			return boardPage{}, err
		}
	}
	return data, nil
}

func (s *Server) showBoard(c *fiber.Ctx) error {
	data, err := s.boardData(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/tasks/board", "partials/tasks/board", data)
}

// bodyValues reads a form or a JSON object (CONTRACT §4: moves take either).
func bodyValues(c *fiber.Ctx) (func(string) string, error) {
	if mt, _, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); mt == fiber.MIMEApplicationJSON {
		var obj map[string]any
		if err := json.Unmarshal(c.Body(), &obj); err != nil {
			return nil, fiber.NewError(fiber.StatusBadRequest, "El cuerpo debe ser un objeto JSON válido.")
		}
		return func(k string) string {
			switch v := obj[k].(type) {
			case string:
				return v
			case float64:
				return strconv.FormatFloat(v, 'f', -1, 64)
			}
			return ""
		}, nil
	}
	return func(k string) string { return c.FormValue(k) }, nil
}

func taskID(c *fiber.Ctx) (int64, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, fiber.NewError(fiber.StatusNotFound, "No existe esa tarea.")
	}
	return id, nil
}

// moveTask is PUT /tarea/:id/estado: the card goes to estado, right below
// despues_de (0 or absent: the top). htmx gets the board back, also when the
// move is refused, so a card a browser moved in vain snaps back.
func (s *Server) moveTask(c *fiber.Ctx) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	get, err := bodyValues(c)
	if err != nil {
		return err
	}
	estado := get("estado")
	after, errAfter := strconv.ParseInt(strings.TrimSpace(orZero(get("despues_de"))), 10, 64)
	version, errVersion := strconv.Atoi(strings.TrimSpace(orZero(get("version"))))
	problem, status := "", fiber.StatusOK
	switch {
	case !slices.Contains(db.TaskStates, estado):
		problem, status = "Estado desconocido: use por_hacer, en_progreso, revisión o hecho.", fiber.StatusUnprocessableEntity
	case errAfter != nil || after < 0:
		problem, status = "despues_de debe ser el número de una tarea, o 0 para arriba.", fiber.StatusUnprocessableEntity
	case errVersion != nil || version < 0:
		problem, status = "version debe ser un número.", fiber.StatusUnprocessableEntity
	}
	var moved *db.Task
	if problem == "" {
		u := currentUser(c)
		err = db.RunMove(c.UserContext(), s.db, func(ctx context.Context, tx bun.Tx) (err error) {
			moved, err = s.store.MoveTask(ctx, tx, id, estado, after, version, u.ID)
			if err != nil {
				return err
			}
			to := jobs.Recipients(u.ID, moved.AsignadoID, moved.CreadoPor)
			if moved.Estado == moved.MovedFrom || len(to) == 0 {
				return nil // no change of state, or nobody else to tell
			}
			return s.queue.Emit(ctx, tx, s.store, jobs.Event{Evento: "tarea_estado",
				Titulo: fmt.Sprintf("«%s» pasó a %s", moved.Titulo, badgeFor(moved.Estado).Label),
				Texto:  "Movida por " + u.Email + ".", Enlace: fmt.Sprintf("/tarea/%d", moved.ID), UserIDs: to})
		})
		switch {
		case errors.Is(err, db.ErrNotFound):
			return fiber.NewError(fiber.StatusNotFound, "No existe esa tarea.")
		case errors.Is(err, db.ErrBadNeighbour):
			problem, status = "La tarea indicada en despues_de no está en esa columna.", fiber.StatusUnprocessableEntity
		case errors.Is(err, db.ErrStale):
			problem, status = "Otra persona cambió esta tarea; el tablero muestra su estado actual.", fiber.StatusConflict
		case err != nil:
			return err
		}
	}
	if !isHTMX(c) && strings.Contains(c.Get(fiber.HeaderAccept), "json") {
		if problem != "" {
			return c.Status(status).JSON(fiber.Map{"error": problem})
		}
		return c.JSON(fiber.Map{"id": moved.ID, "estado": moved.Estado, "version": moved.Version})
	}
	data, err := s.boardData(c)
	if err != nil {
		return err
	}
	data.Problem = problem
	return s.render(c, status, "partials/tasks/board", "partials/tasks/board", data)
}

func orZero(v string) string {
	if strings.TrimSpace(v) == "" {
		return "0"
	}
	return v
}

// readTaskForm validates a create or edit form into t.
func readTaskForm(c *fiber.Ctx, t *db.Task) taskForm {
	f := taskForm{Titulo: strings.TrimSpace(c.FormValue("titulo")), Descripcion: c.FormValue("descripcion"),
		Prioridad: c.FormValue("prioridad"), AsignadoID: c.FormValue("asignado_id"), FechaLimite: c.FormValue("fecha_limite"),
		Problems: map[string]string{}}
	if n := utf8.RuneCountInString(f.Titulo); n < 1 || n > 200 {
		f.Problems["titulo"] = "Escriba un título de 1 a 200 caracteres."
	}
	if f.Prioridad == "" {
		f.Prioridad = "media"
	}
	if !slices.Contains(db.TaskPriorities, f.Prioridad) {
		f.Problems["prioridad"] = "Elija baja, media, alta o urgente."
	}
	t.Titulo, t.Descripcion, t.Prioridad = f.Titulo, storable(f.Descripcion), f.Prioridad
	t.AsignadoID, t.FechaLimite = nil, nil
	if f.AsignadoID != "" && f.AsignadoID != "0" {
		if id, err := strconv.ParseInt(f.AsignadoID, 10, 64); err == nil && id > 0 {
			t.AsignadoID = &id
		} else {
			f.Problems["asignado_id"] = "Elija una persona de la lista."
		}
	}
	if f.FechaLimite != "" {
		if d, err := time.Parse("2006-01-02", f.FechaLimite); err == nil {
			t.FechaLimite = &d
		} else {
			f.Problems["fecha_limite"] = "Use una fecha AAAA-MM-DD."
		}
	}
	return f
}

// createTask is POST /tarea: 303 to the new task, or the board for htmx.
func (s *Server) createTask(c *fiber.Ctx) error {
	t := &db.Task{}
	form := readTaskForm(c, t)
	u := currentUser(c)
	if len(form.Problems) == 0 {
		err := db.RunMove(c.UserContext(), s.db, func(ctx context.Context, tx bun.Tx) error {
			if err := s.store.CreateTask(ctx, tx, t, u.ID); err != nil || t.AsignadoID == nil {
				return err
			}
			return s.assigned(ctx, tx, t, u)
		})
		if isForeignKey(err) {
			form.Problems["asignado_id"] = "Esa persona no existe."
		} else if err != nil {
			return err
		}
	}
	if len(form.Problems) == 0 && !isHTMX(c) {
		return c.Redirect(fmt.Sprintf("/tarea/%d", t.ID), fiber.StatusSeeOther)
	}
	data, err := s.boardData(c)
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if len(form.Problems) > 0 {
		data.Form, status = form, fiber.StatusUnprocessableEntity
	}
	return s.render(c, status, "pages/tasks/board", "partials/tasks/board", data)
}

// assigned records who the task is now assigned to (nobody, when nil) in its
// history, and tells the new assignee unless they did it themselves.
func (s *Server) assigned(ctx context.Context, tx bun.Tx, t *db.Task, by *db.User) error {
	if err := s.store.RecordAssignment(ctx, tx, t.ID, by.ID, t.AsignadoID); err != nil {
		return err
	}
	if t.AsignadoID == nil || *t.AsignadoID == by.ID {
		return nil
	}
	return s.queue.Emit(ctx, tx, s.store, jobs.Event{Evento: "tarea_asignada",
		Titulo: fmt.Sprintf("Le asignaron «%s»", t.Titulo), Texto: "Asignada por " + by.Email + ".",
		Enlace: fmt.Sprintf("/tarea/%d", t.ID), UserIDs: []int64{*t.AsignadoID}})
}

func sameID(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func isForeignKey(err error) bool {
	return err != nil && strings.Contains(err.Error(), "SQLSTATE=23503")
}

type taskPage struct {
	Page
	Task     *db.Task
	Comments []db.TaskComment
	Files    []db.TaskFile
	// CommentProblem is why a comment was refused.
	CommentProblem string
	History        []db.TaskActivity
	Users          []db.UserChoice
	Priorities     []string
	States         []string
	Form           taskForm
	Today          time.Time
}

func (s *Server) taskPageData(c *fiber.Ctx, id int64) (taskPage, error) {
	ctx := c.UserContext()
	t, err := s.store.Task(ctx, s.db, id)
	if errors.Is(err, db.ErrNotFound) {
		return taskPage{}, fiber.NewError(fiber.StatusNotFound, "No existe esa tarea.")
	}
	if err != nil {
		return taskPage{}, err
	}
	history, err := s.store.TaskHistory(ctx, s.db, id)
	if err != nil {
		return taskPage{}, err
	}
	comments, err := s.store.Comments(ctx, s.db, id)
	if err != nil {
		return taskPage{}, err
	}
	files, err := s.store.TaskFiles(ctx, s.db, id)
	if err != nil {
		return taskPage{}, err
	}
	users, err := s.store.UserChoices(ctx, s.db)
	if err != nil {
		return taskPage{}, err
	}
	form := taskForm{Titulo: t.Titulo, Descripcion: t.Descripcion, Prioridad: t.Prioridad}
	if t.AsignadoID != nil {
		form.AsignadoID = strconv.FormatInt(*t.AsignadoID, 10)
	}
	if t.FechaLimite != nil {
		form.FechaLimite = t.FechaLimite.Format("2006-01-02")
	}
	return taskPage{Page: s.page(c, "Tarea "+t.Titulo), Task: t, History: history, Comments: comments, Files: files, Users: users,
		Priorities: db.TaskPriorities, States: db.TaskStates, Form: form, Today: time.Now()}, nil
}

func (s *Server) showTask(c *fiber.Ctx) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	data, err := s.taskPageData(c, id)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/tasks/show", "", data)
}

// updateTask is PUT /tarea/:id (and POST, for a page without script): saves
// the edit if version is still the task's; 409 otherwise, with the fresh task.
func (s *Server) updateTask(c *fiber.Ctx) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	before, err := s.store.Task(c.UserContext(), s.db, id)
	if errors.Is(err, db.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "No existe esa tarea.")
	}
	if err != nil {
		return err
	}
	t := *before
	form := readTaskForm(c, &t)
	// The version the edit was made from; without one (curl), the edit
	// applies to the task as it is.
	version := 0
	if v := strings.TrimSpace(c.FormValue("version")); v != "" {
		if version, err = strconv.Atoi(v); err != nil || version < 1 {
			form.Problems["version"] = "La versión de la tarea no es válida; recargue la página."
		}
	}
	status := fiber.StatusOK
	if len(form.Problems) == 0 {
		u := currentUser(c)
		err = s.db.RunInTx(c.UserContext(), nil, func(ctx context.Context, tx bun.Tx) error {
			if err := s.store.UpdateTask(ctx, tx, &t, version, u.ID); err != nil {
				return err
			}
			if !sameID(before.AsignadoID, t.AsignadoID) {
				return s.assigned(ctx, tx, &t, u)
			}
			return nil
		})
		switch {
		case errors.Is(err, db.ErrStale):
			form.Problems["version"] = "Otra persona cambió esta tarea mientras la editaba; revise su estado actual y vuelva a guardar."
			status = fiber.StatusConflict
		case isForeignKey(err):
			form.Problems["asignado_id"] = "Esa persona no existe."
		case err != nil:
			return err
		}
	}
	if len(form.Problems) == 0 {
		s.setFlash(c, "Tarea guardada.")
		return redirectAfterPost(c, fmt.Sprintf("/tarea/%d", id))
	}
	if status == fiber.StatusOK {
		status = fiber.StatusUnprocessableEntity
	}
	// Refused: the page again, with the task as it is now.
	data, err := s.taskPageData(c, id)
	if err != nil {
		return err
	}
	if status == fiber.StatusUnprocessableEntity {
		data.Form = form
	}
	data.Form.Problems = form.Problems
	return s.render(c, status, "pages/tasks/show", "", data)
}

// deleteTask is DELETE /tarea/:id (and POST /tarea/:id/eliminar without script).
func (s *Server) deleteTask(c *fiber.Ctx) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteTask(c.UserContext(), s.db, id); errors.Is(err, db.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "No existe esa tarea.")
	} else if err != nil {
		return err
	}
	// Its files go with it (their rows went with the task's, by cascade).
	if err := os.RemoveAll(s.taskDir(id)); err != nil {
		requestLogger(c, s.log).Error("remove task files", "task", id, "error", err)
	}
	s.setFlash(c, "Tarea eliminada.")
	return redirectAfterPost(c, "/app/tareas")
}

// addComment is POST /tarea/:id/comentarios (form texto): htmx gets the
// comments back, a plain form the task page. The assignee and the creator
// hear of it, the author does not.
func (s *Server) addComment(c *fiber.Ctx) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	texto := strings.TrimSpace(storable(c.FormValue("texto")))
	problem := ""
	if n := utf8.RuneCountInString(texto); n < 1 || n > 5000 {
		problem = "Escriba un comentario de 1 a 5.000 caracteres."
	} else {
		u := currentUser(c)
		err := s.db.RunInTx(c.UserContext(), nil, func(ctx context.Context, tx bun.Tx) error {
			t, err := s.store.Task(ctx, tx, id)
			if err != nil {
				return err
			}
			if err := s.store.AddComment(ctx, tx, id, u.ID, texto); err != nil {
				return err
			}
			to := jobs.Recipients(u.ID, t.AsignadoID, t.CreadoPor)
			if len(to) == 0 {
				return nil
			}
			summary := texto
			if utf8.RuneCountInString(summary) > 200 {
				summary = string([]rune(summary)[:200]) + "…"
			}
			return s.queue.Emit(ctx, tx, s.store, jobs.Event{Evento: "tarea_comentario",
				Titulo: fmt.Sprintf("Comentario en «%s»", t.Titulo), Texto: u.Email + ": " + summary,
				Enlace: fmt.Sprintf("/tarea/%d", id), UserIDs: to})
		})
		if errors.Is(err, db.ErrNotFound) {
			return fiber.NewError(fiber.StatusNotFound, "No existe esa tarea.")
		}
		if err != nil {
			return err
		}
	}
	if problem == "" && !isHTMX(c) {
		return c.Redirect(fmt.Sprintf("/tarea/%d#comentarios", id), fiber.StatusSeeOther)
	}
	data, err := s.taskPageData(c, id)
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if problem != "" {
		data.CommentProblem, status = problem, fiber.StatusUnprocessableEntity
	}
	return s.render(c, status, "pages/tasks/show", "partials/tasks/comments", data)
}
