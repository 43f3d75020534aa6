package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"pasarela/db"
)

type sseEvent struct{ id, name, data string }

// stream opens the page event stream of the browser's session over a real
// connection, as the page's EventSource does, from the given catch-up mark.
func stream(t *testing.T, base string, br *browser, since, lastEventID string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/app/eventos?desde="+since, nil)
	require.NoError(t, err)
	for k, v := range br.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	events := make(chan sseEvent, 16)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ") + "\n"
			}
		}
	}()
	return events
}

// next is the stream's next event; live updates must arrive within 2 s.
func next(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		require.True(t, ok, "the stream ended")
		return ev
	case <-time.After(2 * time.Second):
		t.Fatal("no event within 2 s")
		return sseEvent{}
	}
}

// liveMark is the catch-up mark a page was rendered with.
func liveMark(t testing.TB, br *browser) string {
	t.Helper()
	_, doc := br.get("/app")
	connect, ok := doc.Find(".shell").Attr("sse-connect")
	require.True(t, ok, "the layout connects to the event stream")
	return strings.TrimPrefix(connect, "/app/eventos?desde=")
}

// notifyInbox puts a notification in the user's inbox, committed.
func notifyInbox(t *testing.T, b *bundle, email string) {
	t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(t, b.env.DB.NewSelect().TableExpr("users").Column("id").Where("email = ?", email).Scan(ctx, &id))
	require.NoError(t, b.store.AddToInbox(ctx, b.env.DB, []int64{id}, db.InboxItem{Evento: "tarea_asignada", Titulo: "Aviso"}))
}

func TestAnOpenPageHearsOfABoardChangeMadeByAnotherAdmin(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	viewer, mover := b.browser(t), b.browser(t)
	viewer.login(adminEmail)
	mover.login(adminEmail)
	mover.get("/app/tareas")
	mark := liveMark(t, viewer)

	events := stream(t, base, viewer, mark, "")
	notifyInbox(t, b, adminEmail) // a fence: a stream that caught up would have told of the board first
	require.Equal(t, "bandeja", next(t, events).name, "a page that is up to date is not told to refresh")

	id := createTask(t, mover, "Nueva desde otra sesión")
	ev := next(t, events)
	require.Equal(t, "tablero", ev.name)
	require.NotEqual(t, mark, ev.id, "the event carries a newer catch-up mark")

	resp, _ := mover.put(fmt.Sprintf("/tarea/%d/estado", id), url.Values{"estado": {"hecho"}, "despues_de": {"0"}, "version": {"1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "tablero", next(t, events).name, "a move is told too")
}

func TestTheUnreadBadgeIsSentOnlyToItsOwner(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	admin := b.browser(t)
	admin.login(adminEmail)
	events := stream(t, base, admin, liveMark(t, admin), "")

	notifyInbox(t, b, operatorEmail)
	notifyInbox(t, b, adminEmail)
	ev := next(t, events)
	require.Equal(t, "bandeja", ev.name, "the operator's notification is not the admin's business")
	require.Contains(t, ev.data, `id="unread-notifications" data-unread="1"`)
	require.Contains(t, ev.data, "1 sin leer")
	require.Contains(t, ev.data, `<span id="unread-menu" hx-swap-oob="true"> (1)</span>`, "the menu's count changes with it")
}

func TestARolledBackChangeIsNeverAnnounced(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	admin := b.browser(t)
	admin.login(adminEmail)
	events := stream(t, base, admin, liveMark(t, admin), "")

	ctx := context.Background()
	tx, err := b.env.DB.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "INSERT INTO tareas (titulo, posicion) VALUES ('nunca', 1024)")
	require.NoError(t, err)
	require.NoError(t, tx.Rollback())
	notifyInbox(t, b, adminEmail) // notices arrive in commit order: the fence comes after
	require.Equal(t, "bandeja", next(t, events).name, "nothing about the rolled-back task")
}

func TestAStreamThatMissedSomethingCatchesUpAtOnce(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	admin := b.browser(t)
	admin.login(adminEmail)
	mark := liveMark(t, admin)

	for name, since := range map[string][2]string{
		"a page rendered by another process": {"0badc0de-7", ""},
		"a browser reconnecting by itself":   {mark, "0badc0de-7"},
	} {
		events := stream(t, base, admin, since[0], since[1])
		got := map[string]bool{next(t, events).name: true, next(t, events).name: true}
		require.Equal(t, map[string]bool{"tablero": true, "bandeja": true}, got, name)
	}
}

func TestAStatementThatChangesNothingIsNotAnnounced(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	admin := b.browser(t)
	admin.login(adminEmail)
	notifyInbox(t, b, adminEmail)
	events := stream(t, base, admin, liveMark(t, admin), "")

	ctx := context.Background()
	_, err := b.env.DB.ExecContext(ctx, "UPDATE tareas SET titulo = 'x' WHERE id = -1")
	require.NoError(t, err)
	_, err = b.env.DB.ExecContext(ctx, "UPDATE notificaciones SET read_at = COALESCE(read_at, now())")
	require.NoError(t, err)
	ev := next(t, events)
	require.Equal(t, "bandeja", ev.name, "the first read is told; the update that matched no task is not")
	_, err = b.env.DB.ExecContext(ctx, "UPDATE notificaciones SET read_at = COALESCE(read_at, now())")
	require.NoError(t, err)
	notifyInbox(t, b, adminEmail) // the fence
	require.Contains(t, next(t, events).data, `data-unread="1"`, "marking read what was read told nobody")
}

func TestAStreamWithoutASessionIsToldToStop(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	resp, err := http.Get(base + "/app/eventos")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "a 204 ends EventSource's reconnecting; a redirect to login would not")
}

func TestShutdownEndsTheOpenStreams(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	admin := b.browser(t)
	admin.login(adminEmail)
	events := stream(t, base, admin, liveMark(t, admin), "")

	require.NoError(t, b.app.ShutdownWithTimeout(10*time.Second), "the shutdown does not wait for the streams' browsers")
	select {
	case _, open := <-events:
		require.False(t, open, "the stream ended")
	case <-time.After(2 * time.Second):
		t.Fatal("the stream is still open after the shutdown")
	}
}
