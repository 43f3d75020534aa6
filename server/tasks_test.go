package server_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pasarela/db"
)

// put sends a form with PUT (as htmx does), with the page's CSRF token.
func (br *browser) put(path string, form url.Values, headers ...string) (*http.Response, *goquerySelection) {
	br.t.Helper()
	req := httptest.NewRequest(http.MethodPut, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-CSRF-Token", br.csrf)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp := br.do(req)
	return resp, parse(br.t, resp).Selection
}

func createTask(t *testing.T, br *browser, title string, extra ...string) int64 {
	t.Helper()
	form := url.Values{"titulo": {title}, "prioridad": {"alta"}}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	resp, _ := br.post("/tarea", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var id int64
	_, err := fmt.Sscanf(resp.Header.Get("Location"), "/tarea/%d", &id)
	require.NoError(t, err, resp.Header.Get("Location"))
	return id
}

func TestTheBoardShowsColumnsInOrderAndMovesCards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	a := createTask(t, br, "Conciliar pagos de noviembre")
	c := createTask(t, br, "Renovar certificado TLS")

	_, doc := br.get("/app/tareas")
	var cols []string
	doc.Find("[data-estado]").Each(func(_ int, s *goquerySelection) {
		cols = append(cols, s.AttrOr("data-estado", "")) // one marker a column, nothing else
	})
	require.Equal(t, []string{"por_hacer", "en_progreso", "revisión", "hecho"}, cols)
	require.Equal(t, 2, doc.Find(`section[data-estado="por_hacer"] [data-task-id]`).Length())
	version := doc.Find(fmt.Sprintf(`[data-task-id="%d"]`, a)).AttrOr("data-version", "")
	require.Equal(t, "1", version)

	// A move, as the board's script sends it: the card lands in revisión.
	resp, board := br.put(fmt.Sprintf("/tarea/%d/estado", a), url.Values{"estado": {"revisión"}, "despues_de": {"0"}, "version": {"1"}}, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 1, board.Find(fmt.Sprintf(`section[data-estado="revisión"] [data-task-id="%d"]`, a)).Length())
	// Below it, by neighbour id.
	resp, board = br.put(fmt.Sprintf("/tarea/%d/estado", c), url.Values{"estado": {"revisión"}, "despues_de": {fmt.Sprint(a)}}, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var order []string
	board.Find(`section[data-estado="revisión"] [data-task-id]`).Each(func(_ int, s *goquerySelection) {
		order = append(order, s.AttrOr("data-task-id", ""))
	})
	require.Equal(t, []string{fmt.Sprint(a), fmt.Sprint(c)}, order)

	// JSON works too.
	req := httptest.NewRequest(http.MethodPut, fmt.Sprintf("/tarea/%d/estado", c), strings.NewReader(`{"estado":"hecho","despues_de":0}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-CSRF-Token", br.csrf)
	r := br.do(req)
	require.Equal(t, http.StatusOK, r.StatusCode)

	cases := []struct {
		name   string
		path   string
		form   url.Values
		status int
	}{
		{"unknown state", fmt.Sprintf("/tarea/%d/estado", a), url.Values{"estado": {"archivada"}}, 422},
		{"unknown task", "/tarea/999999/estado", url.Values{"estado": {"hecho"}}, 404},
		{"neighbour in another column", fmt.Sprintf("/tarea/%d/estado", a), url.Values{"estado": {"por_hacer"}, "despues_de": {fmt.Sprint(c)}}, 422},
		{"stale version", fmt.Sprintf("/tarea/%d/estado", a), url.Values{"estado": {"hecho"}, "version": {"1"}}, 409},
	}
	for _, tc := range cases {
		resp, board := br.put(tc.path, tc.form, "HX-Request", "true")
		require.Equal(t, tc.status, resp.StatusCode, tc.name)
		if tc.status == 409 {
			require.NotEmpty(t, board.Find("#board-problem").Text(), "the fresh board comes back with the reason")
			require.Equal(t, 1, board.Find(fmt.Sprintf(`section[data-estado="revisión"] [data-task-id="%d"]`, a)).Length(), "where the card really is")
		}
	}
	// Without CSRF, and without the module.
	req = httptest.NewRequest(http.MethodPut, fmt.Sprintf("/tarea/%d/estado", a), strings.NewReader("estado=hecho"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusForbidden, br.do(req).StatusCode)
	op := b.browser(t)
	op.login(operatorEmail)
	resp, _ = op.get("/app/tareas")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = op.put(fmt.Sprintf("/tarea/%d/estado", a), url.Values{"estado": {"hecho"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a role without Administración moves nothing")
}

func TestTheBoardFiltersAndAMoveOnAFilteredBoardKeepsTheWholeOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	operator, err := b.store.Authenticate(ctx, b.env.DB, operatorEmail, testPassword)
	require.NoError(t, err)
	admin, err := b.store.Authenticate(ctx, b.env.DB, adminEmail, testPassword)
	require.NoError(t, err)
	uno, dos, tres := createTask(t, br, "uno"), createTask(t, br, "dos", "prioridad", "baja"), createTask(t, br, "tres")
	x := createTask(t, br, "equis", "asignado_id", fmt.Sprint(operator.ID), "fecha_limite", "2020-01-31")
	createTask(t, br, "propia", "prioridad", "media", "asignado_id", fmt.Sprint(admin.ID))
	after := int64(0)
	for _, id := range []int64{uno, dos, tres} { // en_progreso: uno, dos, tres
		resp, _ := br.put(fmt.Sprintf("/tarea/%d/estado", id), url.Values{"estado": {"en_progreso"}, "despues_de": {fmt.Sprint(after)}}, "HX-Request", "true")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		after = id
	}
	column := func(doc interface {
		Find(string) *goquerySelection
	}, estado string) []string {
		var titles []string
		doc.Find(fmt.Sprintf(`section[data-estado=%q] [data-task-id]`, estado)).Each(func(_ int, s *goquerySelection) {
			titles = append(titles, strings.TrimSpace(s.Find(".task-title").Text()))
		})
		return titles
	}
	for _, tc := range []struct {
		query string
		want  []string // en_progreso, then por_hacer
		count string   // en_progreso's count
	}{
		{"", []string{"uno", "dos", "tres", "propia", "equis"}, "3"},
		{"?prioridad=alta", []string{"uno", "tres", "equis"}, "2"},
		{"?q=DOS", []string{"dos"}, "1"},
		{fmt.Sprintf("?asignado=%d", operator.ID), []string{"equis"}, "0"},
		{"?prioridad=nada&asignado=x", []string{"uno", "dos", "tres", "propia", "equis"}, "3"}, // nonsense filters: no filter
	} {
		_, doc := br.get("/app/tareas"+tc.query, "HX-Request", "true")
		require.Equal(t, tc.want, append(column(doc, "en_progreso"), column(doc, "por_hacer")...), tc.query)
		require.Equal(t, tc.count, doc.Find(`section[data-estado="en_progreso"] .count`).AttrOr("data-count", ""), tc.query)
	}
	// On the board filtered to alta, dos is hidden between uno and tres. The
	// user drops equis right below uno: it lands between uno and dos.
	resp, _ := br.put(fmt.Sprintf("/tarea/%d/estado", x), url.Values{"estado": {"en_progreso"}, "despues_de": {fmt.Sprint(uno)}},
		"HX-Request", "true", "HX-Current-URL", "http://console/app/tareas?prioridad=alta")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, doc := br.get("/app/tareas")
	require.Equal(t, []string{"uno", "equis", "dos", "tres"}, column(doc, "en_progreso"), "the whole column keeps its order")

	_, doc = br.get("/app")
	for figure, want := range map[string]string{"tasks-open": "5", "tasks-overdue": "1", "tasks-mine": "1"} {
		require.Equal(t, want, doc.Find(fmt.Sprintf(`[data-figure=%q] .tile-value`, figure)).Text(), figure)
	}
	require.Equal(t, fmt.Sprintf("/app/tareas?asignado=%d", admin.ID), doc.Find(`[data-figure="tasks-mine"]`).AttrOr("href", ""))
}

func TestATaskIsCreatedEditedAndDeletedWithItsHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	resp, doc := br.post("/tarea", url.Values{"titulo": {"  "}, "fecha_limite": {"mañana"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, "true", doc.Find("#titulo").AttrOr("aria-invalid", ""))
	require.NotEmpty(t, doc.Find("#fecha_limite-error").Text())

	operator, err := b.store.Authenticate(ctx, b.env.DB, operatorEmail, testPassword)
	require.NoError(t, err)
	id := createTask(t, br, "Revisar contracargos", "asignado_id", fmt.Sprint(operator.ID), "fecha_limite", "2020-01-31")
	var jobs int
	require.NoError(t, b.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE kind = 'notificacion' AND args->>'evento' = 'tarea_asignada'`).Scan(ctx, &jobs))
	require.Positive(t, jobs, "the assignee hears of it, in the task's transaction")

	_, doc = br.get(fmt.Sprintf("/tarea/%d", id))
	require.Contains(t, doc.Find("h1").Text(), "Revisar contracargos")
	require.Contains(t, doc.Find("#task-detail").Text(), "vencida", "past its due date")
	require.Contains(t, doc.Find("ul.history").Text(), "creada")
	require.Contains(t, doc.Find("ul.history").Text(), "asignada ("+operatorEmail+")")

	// An edit from an old version is refused with the fresh task.
	resp, _ = br.post(fmt.Sprintf("/tarea/%d", id), url.Values{"titulo": {"Revisar contracargos de octubre"}, "prioridad": {"urgente"}, "version": {"1"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, doc = br.post(fmt.Sprintf("/tarea/%d", id), url.Values{"titulo": {"Otra cosa"}, "prioridad": {"baja"}, "version": {"1"}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, "Revisar contracargos de octubre", doc.Find("#titulo").AttrOr("value", ""))
	task, err := b.store.Task(ctx, b.env.DB, id)
	require.NoError(t, err)
	require.Equal(t, "urgente", task.Prioridad)
	require.Nil(t, task.AsignadoID, "the edit left the assignee out")
	_, doc = br.get(fmt.Sprintf("/tarea/%d", id))
	require.Contains(t, doc.Find("ul.history").Text(), "asignada (sin asignar)")

	// From curl, as CONTRACT §4 lists it: PUT with the fields and no version.
	resp, _ = br.put(fmt.Sprintf("/tarea/%d", id), url.Values{"titulo": {"Desde curl"}, "prioridad": {"media"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	task, err = b.store.Task(ctx, b.env.DB, id)
	require.NoError(t, err)
	require.Equal(t, "Desde curl", task.Titulo)
	resp, _ = br.put(fmt.Sprintf("/tarea/%d", id), url.Values{"titulo": {"x"}, "prioridad": {"media"}, "version": {"uno"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "a version that is not a number")

	resp, _ = br.post(fmt.Sprintf("/tarea/%d/eliminar", id), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, err = b.store.Task(ctx, b.env.DB, id)
	require.ErrorIs(t, err, db.ErrNotFound)
	resp, _ = br.get(fmt.Sprintf("/tarea/%d", id))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestACommentIsAppendedAndTheOthersHearOfIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	operator, err := b.store.Authenticate(ctx, b.env.DB, operatorEmail, testPassword)
	require.NoError(t, err)
	id := createTask(t, br, "Revisar contracargos", "asignado_id", fmt.Sprint(operator.ID))

	resp, doc := br.post(fmt.Sprintf("/tarea/%d/comentarios", id), url.Values{"texto": {"<b>Listo</b> el lote de octubre"}}, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, doc.Find("h1").Nodes, "htmx gets the comments alone")
	require.Equal(t, 1, doc.Find("[data-comment-id]").Length())
	require.Contains(t, doc.Find("[data-comment-id]").Text(), "<b>Listo</b>", "shown as text")

	resp, doc = br.post(fmt.Sprintf("/tarea/%d/comentarios", id), url.Values{"texto": {"   "}}, "HX-Request", "true")
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, "true", doc.Find("#texto").AttrOr("aria-invalid", ""))

	var to []string
	require.NoError(t, b.env.DB.NewRaw(`SELECT args->>'user_ids' FROM river_job WHERE kind = 'notificacion' AND args->>'evento' = 'tarea_comentario'`).
		Scan(ctx, &to))
	require.NotEmpty(t, to)
	for _, ids := range to {
		require.Equal(t, fmt.Sprintf("[%d]", operator.ID), ids, "to the assignee; not to the author, who also created the task")
	}
	_, doc = br.get(fmt.Sprintf("/tarea/%d", id))
	require.Contains(t, doc.Find("ul.history").Text(), "comentada")
	_, doc = br.get("/app/tareas")
	require.Equal(t, "1 comentario", doc.Find(fmt.Sprintf(`[data-task-id="%d"] .task-counts`, id)).Text(), "the card counts its comments")
}

// upload posts one file as the task page's form does.
func upload(t *testing.T, br *browser, taskID int64, name string, content []byte) *http.Response {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	require.NoError(t, w.WriteField("_csrf", br.csrf))
	part, err := w.CreateFormFile("archivo", name)
	require.NoError(t, err)
	_, err = part.Write(content)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	req := httptest.NewRequest(http.MethodPost, fmt.Sprintf("/tarea/%d/adjuntos", taskID), &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	return br.do(req)
}

func TestAttachmentsStayInTheTasksFolderAndDownloadAsAttachments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, func(c *configT) { c.UploadDir, c.UploadMaxBytes = dir, 1000 })
	ctx := context.Background()
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	id := createTask(t, br, "Con adjuntos")
	taskDir := filepath.Join(dir, "tareas", fmt.Sprint(id))

	require.Equal(t, http.StatusRequestEntityTooLarge, upload(t, br, id, "grande.bin", bytes.Repeat([]byte("x"), 1001)).StatusCode)
	for _, name := range []string{"../../etc/passwd", "a/b.txt", `..\..\win.ini`} {
		resp := upload(t, br, id, name, []byte("contenido de "+name))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, name)
	}
	html := upload(t, br, id, "pagina.html", []byte(`<script>alert(1)</script>`))
	require.Equal(t, http.StatusSeeOther, html.StatusCode)

	files, err := b.store.TaskFiles(ctx, b.env.DB, id)
	require.NoError(t, err)
	require.Len(t, files, 4, "the oversized one left no row")
	onDisk, err := os.ReadDir(taskDir)
	require.NoError(t, err)
	require.Len(t, onDisk, 4, "and no file; every file inside the task's folder")
	names := map[string]bool{}
	for _, f := range files {
		names[f.Nombre] = true
		require.Regexp(t, `^[0-9a-f]{32}$`, f.Archivo, "a name the server chose")
	}
	require.Equal(t, map[string]bool{"passwd": true, "b.txt": true, "win.ini": true, "pagina.html": true}, names)
	_, err = os.Stat(filepath.Join(dir, "etc", "passwd"))
	require.True(t, os.IsNotExist(err), "nothing escaped the folder")

	last := files[len(files)-1]
	resp, _ := br.get(fmt.Sprintf("/tarea/%d/adjuntos/%d", id, last.ID))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `attachment; filename="pagina.html"; filename*=UTF-8''pagina.html`, resp.Header.Get("Content-Disposition"))
	require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	resp, _ = br.get(fmt.Sprintf("/tarea/%d/adjuntos/%d", id+1000, last.ID))
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a file is reached only through its own task")

	counts := func() string {
		_, doc := br.get("/app/tareas")
		return doc.Find(fmt.Sprintf(`[data-task-id="%d"] .task-counts`, id)).Text()
	}
	require.Equal(t, "4 adjuntos", counts(), "the card counts its files")
	resp, _ = br.post(fmt.Sprintf("/tarea/%d/adjuntos/%d/eliminar", id, last.ID), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	onDisk, err = os.ReadDir(taskDir)
	require.NoError(t, err)
	require.Len(t, onDisk, 3)
	require.Equal(t, "3 adjuntos", counts(), "and counts a deleted one no more")

	resp, _ = br.post(fmt.Sprintf("/tarea/%d/eliminar", id), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, err = os.Stat(taskDir)
	require.True(t, os.IsNotExist(err), "a deleted task takes its files with it")
}

func TestAMoveTellsTheAssigneeOnlyWhenTheStateChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	operator, err := b.store.Authenticate(ctx, b.env.DB, operatorEmail, testPassword)
	require.NoError(t, err)
	mine := createTask(t, br, "Solo mía")
	theirs := createTask(t, br, "Asignada", "asignado_id", fmt.Sprint(operator.ID))
	count := func() int {
		var n int
		require.NoError(t, b.env.DB.NewRaw(`SELECT count(*) FROM river_job WHERE kind = 'notificacion' AND args->>'evento' = 'tarea_estado'`).Scan(ctx, &n))
		return n
	}
	br.put(fmt.Sprintf("/tarea/%d/estado", mine), url.Values{"estado": {"hecho"}}, "HX-Request", "true")
	require.Zero(t, count(), "nobody else to tell: the mover created it and nobody is assigned")
	br.put(fmt.Sprintf("/tarea/%d/estado", theirs), url.Values{"estado": {"por_hacer"}}, "HX-Request", "true")
	require.Zero(t, count(), "a move within its column is no change of state")
	br.put(fmt.Sprintf("/tarea/%d/estado", theirs), url.Values{"estado": {"hecho"}}, "HX-Request", "true")
	require.Positive(t, count(), "the assignee hears that it is done")
}
