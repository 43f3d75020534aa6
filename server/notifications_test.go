package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"pasarela/db"
)

func TestNotificationSettingsListTheTenEventsAndSaveEachSwitch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app/notificaciones/config")
	require.Equal(t, 10, doc.Find("[data-evento]").Length())
	row := doc.Find(`[data-evento="servidor_caido"]`)
	for _, ch := range []string{"canal_email", "canal_chat", "canal_sistema"} {
		_, checked := row.Find(`input[type=checkbox][name="` + ch + `"]`).Attr("checked")
		require.True(t, checked, "servidor_caido goes out on %s by default", ch)
	}

	// htmx: the row comes back with the switches as saved.
	resp, doc := br.post("/app/notificaciones/config/servidor_caido", url.Values{"canal_chat": {"on"}}, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	row = doc.Find(`[data-evento="servidor_caido"]`)
	_, email := row.Find(`[name="canal_email"]`).Attr("checked")
	_, chat := row.Find(`[name="canal_chat"]`).Attr("checked")
	require.Equal(t, [2]bool{false, true}, [2]bool{email, chat})
	cfg, err := b.store.EventConfig(context.Background(), b.env.DB, "servidor_caido")
	require.NoError(t, err)
	require.Equal(t, [3]bool{false, true, false}, [3]bool{cfg.CanalEmail, cfg.CanalChat, cfg.CanalSistema})

	// A plain form post answers 303 and the page shows the saved state.
	resp, _ = br.post("/app/notificaciones/config/tarea_estado", url.Values{"canal_email": {"on"}, "canal_sistema": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, doc = br.get("/app/notificaciones/config")
	_, email = doc.Find(`[data-evento="tarea_estado"] [name="canal_email"]`).Attr("checked")
	require.True(t, email)

	resp, _ = br.post("/app/notificaciones/config/no_existe", url.Values{})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = br.post("/app/notificaciones/config/tarea_estado", url.Values{"canal_chat": {"quizás"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp, _ = br.post("/app/notificaciones/config/tarea_estado", url.Values{"_csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	op := b.browser(t)
	op.login(operatorEmail)
	resp, _ = op.get("/app/notificaciones/config")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "settings need the Administración module")
}

func TestTheInboxShowsUnreadFirstAndMarksRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	admin, err := b.store.Authenticate(ctx, b.env.DB, adminEmail, testPassword)
	require.NoError(t, err)
	operator, err := b.store.Authenticate(ctx, b.env.DB, operatorEmail, testPassword)
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		require.NoError(t, b.store.AddToInbox(ctx, b.env.DB, []int64{admin.ID}, db.InboxItem{Evento: "servidor_caido",
			Titulo: fmt.Sprintf("Servidor %d caído", i), Enlace: "/app"}))
	}
	require.NoError(t, b.store.AddToInbox(ctx, b.env.DB, []int64{operator.ID}, db.InboxItem{Evento: "tarea_asignada", Titulo: "Ajena"}))

	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app/notificaciones")
	require.Equal(t, "3", doc.Find("#unread-notifications").AttrOr("data-unread", ""), "the layout counts the unread")
	items := doc.Find("ul.inbox li[data-id]")
	require.Equal(t, 3, items.Length(), "only the user's own")
	first := items.First().AttrOr("data-id", "")

	resp, doc := br.post("/app/notificaciones/"+first+"/leida", nil, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "2", doc.Find(`#unread-notifications[hx-swap-oob]`).AttrOr("data-unread", ""), "the badge updates with the list")
	last := doc.Find("ul.inbox li[data-id]").Last()
	require.Equal(t, first, last.AttrOr("data-id", ""), "a read one goes after the unread")
	require.Equal(t, "true", last.AttrOr("data-read", ""))

	var foreign int64
	require.NoError(t, b.env.DB.NewSelect().TableExpr("notificaciones").Column("id").Where("user_id = ?", operator.ID).Scan(ctx, &foreign))
	resp, _ = br.post(fmt.Sprintf("/app/notificaciones/%d/leida", foreign), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "another user's notification is not there")

	resp, _ = br.post("/app/notificaciones/leidas", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, doc = br.get("/app/notificaciones")
	require.Equal(t, "0", doc.Find("#unread-notifications").AttrOr("data-unread", ""))
	n, err := b.store.UnreadCount(ctx, b.env.DB, operator.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n, "marking all read touches only the user's own")
}

func TestTheInboxPagesUnreadFirstAcrossPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	admin, err := b.store.Authenticate(ctx, b.env.DB, adminEmail, testPassword)
	require.NoError(t, err)
	for i := 1; i <= 60; i++ {
		require.NoError(t, b.store.AddToInbox(ctx, b.env.DB, []int64{admin.ID}, db.InboxItem{Evento: "tarea_estado",
			Titulo: fmt.Sprintf("Aviso %02d", i)}))
	}
	// The oldest five read: they go to the end, after the 55 unread.
	_, err = b.env.DB.ExecContext(ctx, `UPDATE notificaciones SET read_at = now() WHERE titulo IN ('Aviso 01', 'Aviso 02', 'Aviso 03', 'Aviso 04', 'Aviso 05')`)
	require.NoError(t, err)

	br := b.browser(t)
	br.login(adminEmail)
	_, doc := br.get("/app/notificaciones")
	items := doc.Find("ul.inbox li[data-id]")
	require.Equal(t, 50, items.Length())
	require.Zero(t, doc.Find(`ul.inbox li[data-read="true"]`).Length(), "page 1 is all unread")
	require.Contains(t, items.First().Text(), "Aviso 60", "newest first")
	_, doc = br.get("/app/notificaciones?page=2")
	items = doc.Find("ul.inbox li[data-id]")
	require.Equal(t, 10, items.Length())
	require.Equal(t, 5, doc.Find(`ul.inbox li[data-read="true"]`).Length(), "the read ones close the list")
	_, doc = br.get("/app/notificaciones?page=9")
	require.Equal(t, 10, doc.Find("ul.inbox li[data-id]").Length(), "past the last page: the last page")
	resp, _ := br.get("/app/notificaciones?page=cero")
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
}
