package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// seedRealistic fills the console the way a real one looks: long e-mails and
// references, eight-digit amounts, every event, attempts with long links.
func seedRealistic(t *testing.T, b *bundle) (webhookID, attemptID int64) {
	t.Helper()
	ctx := context.Background()
	events := []string{"SALE_APPROVED", "SALE_REJECTED", "SALE_REVERSED", "CHARGEBACK", "REFUND_CREATED"}
	for i := 0; i < 120; i++ {
		ev := events[i%len(events)]
		amount := fmt.Sprintf("%d.00", 12345678+i)
		ref := fmt.Sprintf("ORD-2026-11-%06d-SANTIAGO-CENTRO-SUCURSAL-PROVIDENCIA", i)
		w := &db.Webhook{NotificationID: fmt.Sprintf("evt_2026_11_22_%06d_%s", i, strings.Repeat("x", 40)), Event: ev,
			Status: db.StatusForEvent(ev), Reference: ref, PaymentID: fmt.Sprintf("pay_%016x", i*7919),
			PayerEmail: fmt.Sprintf("maria.fernanda.gonzalez-valenzuela.%d@empresa-distribuidora-del-sur.cl", i),
			Amount:     &amount, Currency: "CLP", GatewayStatus: "APPROVED", Environment: db.EnvProduction, Verified: i%7 != 0,
			IP: "203.0.113.7", Payload: fmt.Sprintf(`{"id":"evt-%d","event":%q,"data":{"reference":%q,"amount":%q}}`, i, ev, ref, amount)}
		_, err := b.store.InsertWebhook(ctx, b.env.Pool, w)
		require.NoError(t, err)
		webhookID = w.ID
	}
	for i := 0; i < 60; i++ {
		params, _ := json.Marshal(map[string]string{"reference": fmt.Sprintf("ORD-2026-11-%06d-SANTIAGO-CENTRO-SUCURSAL-PROVIDENCIA", i),
			"payment_link": "https://pagos.example.cl/checkout/" + strings.Repeat("a1b2c3d4", 12), "email": "comprador@example.com"})
		a := &db.Attempt{Reference: fmt.Sprintf("ORD-2026-11-%06d-SANTIAGO-CENTRO-SUCURSAL-PROVIDENCIA", i),
			PaymentLink: "https://pagos.example.cl/checkout/" + strings.Repeat("a1b2c3d4", 12),
			Email:       fmt.Sprintf("maria.fernanda.gonzalez-valenzuela.%d@empresa-distribuidora-del-sur.cl", i), IP: "198.51.100.23",
			UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
			Params:    params}
		require.NoError(t, b.store.RecordAttempt(ctx, b.env.DB, a))
		attemptID = a.ID
	}
	require.NoError(t, b.store.CreateAPIToken(ctx, b.env.DB, &db.APIToken{Name: "tienda web de la sucursal de Providencia (producción)",
		TokenHash: []byte("realistic-token-hash-000000000001"), Prefix: "psk_9f3a"}))
	b.configureGWA(t, "production", testSecret)
	cards := httptest.NewServer(http.HandlerFunc(realisticCards))
	t.Cleanup(cards.Close)
	b.configureCards(t, cards.URL+"/v1")
	seedServer(t, b, "pagos-produccion-santiago-01.empresa-distribuidora-del-sur.cl")
	seedMonitors(t, b)
	admin, err := b.store.Authenticate(ctx, b.env.DB, adminEmail, testPassword)
	require.NoError(t, err)
	for i := 0; i < 12; i++ {
		require.NoError(t, b.store.AddToInbox(ctx, b.env.DB, []int64{admin.ID}, db.InboxItem{Evento: "servidor_caido",
			Titulo: fmt.Sprintf("El servidor pagos-produccion-santiago-%02d.empresa-distribuidora-del-sur.cl no responde", i),
			Texto:  "Sin latido del agente desde hace tres intervalos (90 s).", Enlace: "/app"}))
	}
	due := time.Now().AddDate(0, 0, -2)
	for i, title := range []string{"Conciliar los pagos aprobados de noviembre con la cartola del banco",
		"Renovar el certificado TLS de pagos-produccion-santiago-01", "Revisar contracargos pendientes", "Actualizar la clave secreta del webhook"} {
		task := &db.Task{Titulo: title, Prioridad: db.TaskPriorities[i%4], AsignadoID: &admin.ID}
		if i%2 == 0 {
			task.FechaLimite = &due
		}
		require.NoError(t, b.env.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := b.store.CreateTask(ctx, tx, task, admin.ID); err != nil {
				return err
			}
			_, err := b.store.MoveTask(ctx, tx, task.ID, db.TaskStates[i%4], 0, 0, admin.ID)
			return err
		}))
	}
	return webhookID, attemptID
}

var viewports = []struct {
	name          string
	width, height int64
}{{"1366", 1366, 900}, {"390", 390, 844}}

// TestBrowserEveryPageHoldsItsLayoutAndPassesAxe opens every page at a laptop
// and a phone width: nothing scrolls sideways, and axe-core finds no serious
// or critical violation. PASARELA_SCREENSHOTS=dir keeps a screenshot of each.
func TestBrowserEveryPageHoldsItsLayoutAndPassesAxe(t *testing.T) {
	b := setup(t)
	webhookID, attemptID := seedRealistic(t, b)
	var taskID int64
	require.NoError(t, b.env.DB.NewRaw("SELECT max(id) FROM tareas").Scan(context.Background(), &taskID))
	base := serve(t, b)
	ctx := chromium(t)
	axe, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	require.NoError(t, err, "axe-core comes from `make vendor`")
	shots := os.Getenv("PASARELA_SCREENSHOTS")

	pages := []string{
		"/app", "/app/webhooks/gwa", "/app/webhooks/gwa?page=3", fmt.Sprintf("/app/webhooks/gwa/%d", webhookID),
		"/app/webhooks/gwa?q=nada-coincide", "/app/pagos/intentos", fmt.Sprintf("/app/pagos/intentos/%d", attemptID),
		"/app/pasarelas", "/app/api-tokens", "/modules", "/app/perfil", "/app/no-existe",
		"/app/notificaciones", "/app/notificaciones/config", "/app/tareas", fmt.Sprintf("/tarea/%d", taskID),
		"/gwa/retorno?reference=ORD-2026-11-000001-SANTIAGO-CENTRO-SUCURSAL-PROVIDENCIA",
		"/app/tarjetas/config", "/app/tarjetas/tarjetas", "/app/tarjetas/tarjetas/tc_000001", "/app/tarjetas/pagos",
		"/app/servidores", fmt.Sprintf("/app/servidor/%d", serverID(t, b)),
		"/app/url-monitor", "/app/url-monitor?estado=down", fmt.Sprintf("/app/url-monitor/%d", monitorID(t, b)),
	}
	login(t, ctx, base)
	for _, vp := range viewports {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(vp.width, vp.height)))
		for _, p := range pages {
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+p), chromedp.WaitReady("body")), p)
			widths, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
			require.NoError(t, err)
			if widths[0] > widths[1] {
				t.Errorf("%s at %s px scrolls sideways: %d px wide", p, vp.name, widths[0])
			}
			_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](string(axe)+";true"))
			require.NoError(t, err)
			found, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ["violations"]}).then(r =>
				r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
				 .map(v => v.id + " (" + v.impact + "): " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(" | ")))`,
				chromedp.EvalAwaitPromise))
			require.NoError(t, err)
			for _, v := range found {
				t.Errorf("%s at %s px: axe: %s", p, vp.name, v)
			}
			if shots != "" {
				png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
				require.NoError(t, err)
				name := strings.NewReplacer("/", "_", "?", "_", "=", "_").Replace(strings.TrimPrefix(p, "/"))
				require.NoError(t, os.WriteFile(filepath.Join(shots, vp.name+"-"+name+".png"), png, 0o644))
			}
		}
	}
}

func TestBrowserPhoneMenuOpensAndClosesFromTheKeyboard(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/app/webhooks/gwa"),
		chromedp.WaitVisible(css("#menu-button"))))
	state := func() (string, bool) {
		t.Helper()
		expanded, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("menu-button").getAttribute("aria-expanded")`))
		require.NoError(t, err)
		visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("sidebar")).display !== "none"`))
		require.NoError(t, err)
		return expanded, visible
	}
	expanded, visible := state()
	require.Equal(t, "false", expanded)
	require.False(t, visible, "the sidebar hides behind the menu on a phone")

	require.NoError(t, chromedp.Do(ctx, chromedp.Focus(css("#menu-button")), chromedp.KeyEvent("\r")))
	expanded, visible = state()
	require.Equal(t, "true", expanded)
	require.True(t, visible, "Enter on the menu button opens the menu")

	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\u001b"))) // Escape
	expanded, visible = state()
	require.Equal(t, "false", expanded)
	require.False(t, visible, "Escape closes it")
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
	require.NoError(t, err)
	require.Equal(t, "menu-button", focused, "focus goes back to the button")
}

func TestBrowserFocusStaysInTheListAfterPaging(t *testing.T) {
	b := setup(t)
	ctx0 := context.Background()
	for i := 0; i < 60; i++ {
		_, err := b.store.InsertWebhook(ctx0, b.env.Pool, &db.Webhook{NotificationID: fmt.Sprintf("evt-%03d", i), Event: "SALE_APPROVED",
			Status: "aprobado", Reference: fmt.Sprintf("ORD-%03d", i), Environment: "test", Payload: "{}"})
		require.NoError(t, err)
	}
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/app/webhooks/gwa"), chromedp.WaitVisible(css(`a[rel="next"]`)),
		chromedp.Focus(css(`a[rel="next"]`)), chromedp.KeyEvent("\r"), chromedp.WaitVisible(css(`[data-range-from="51"]`))))
	deadline := time.Now().Add(5 * time.Second)
	for {
		inside, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("webhook-list").contains(document.activeElement)`))
		require.NoError(t, err)
		if inside {
			break
		}
		if time.Now().After(deadline) {
			tag, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.tagName`))
			t.Fatalf("after paging, focus is on %s, not in the list", tag)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBrowserANotificationSwitchIsSavedAtOnce(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	box := `[data-evento="tarea_estado"] input[name="canal_chat"]`
	checked := func() bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+box+`').checked`))
		require.NoError(t, err)
		return v
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/app/notificaciones/config"), chromedp.WaitVisible(css(box))))
	require.False(t, checked())
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(css(box)),
		chromedp.WaitVisible(css(`[data-evento="tarea_estado"] .saved`))))
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(css(box))))
	require.True(t, checked(), "the switch survives a reload: it was saved on change")
}

func TestBrowserDragACardToAnotherColumnAndItStaysAfterReload(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	id := createTask(t, br, "Arrastrar esta tarjeta")
	createTask(t, br, "Otra tarjeta")

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(base+"/app/tareas"),
		chromedp.WaitVisible(css(fmt.Sprintf(`[data-task-id="%d"]`, id)))))
	drag(t, ctx, fmt.Sprintf(`[data-task-id="%d"] .task-meta`, id), `section[data-estado="revisión"] ol.cards`)
	inReview := css(fmt.Sprintf(`section[data-estado="revisión"] [data-task-id="%d"][data-version="2"]`, id))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(inReview)), "the server's board shows the card moved")
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(inReview)), "and it is still there after a reload")
}

// drag holds the mouse on from and lets go over to, in small steps, as a hand does.
func drag(t *testing.T, ctx context.Context, from, to string) {
	t.Helper()
	center := func(sel string) (float64, float64) {
		t.Helper()
		xy, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector('`+sel+`').getBoundingClientRect();
			return [r.left + r.width / 2, r.top + Math.min(r.height / 2, 20)]; })()`))
		require.NoError(t, err)
		return xy[0], xy[1]
	}
	x0, y0 := center(from)
	x1, y1 := center(to)
	steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(chromedp.MousePressed, x0, y0, chromedp.ButtonLeft)}
	for i := 1; i <= 12; i++ {
		f := float64(i) / 12
		steps = append(steps, chromedp.MouseEvent(chromedp.MouseMoved, x0+(x1-x0)*f, y0+(y1-y0)*f, chromedp.ButtonLeft),
			chromedp.Sleep(30*time.Millisecond))
	}
	steps = append(steps, chromedp.MouseEvent(chromedp.MouseReleased, x1, y1, chromedp.ButtonLeft))
	require.NoError(t, chromedp.Do(ctx, steps...))
}

func TestBrowserARefusedMoveSnapsBackWithTheReason(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	id := createTask(t, br, "Tarjeta que otra persona cambia")

	card := fmt.Sprintf(`[data-task-id="%d"]`, id)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(base+"/app/tareas"),
		chromedp.WaitVisible(css(card))))
	// Stop this page's live updates, as a dropped connection would, so the
	// card on screen keeps its old version.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.dispatchEvent(new PageTransitionEvent("pagehide")), true`))
	require.NoError(t, err)
	resp, _ := br.put(fmt.Sprintf("/tarea/%d/estado", id), url.Values{"estado": {"en_progreso"}, "version": {"1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css(`section[data-estado="por_hacer"] `+card+`[data-version="1"]`))),
		"the page did not hear of the move")

	drag(t, ctx, card+" .task-meta", `section[data-estado="hecho"] ol.cards`)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css(`#board-problem`))))
	problem, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("board-problem").textContent`))
	require.NoError(t, err)
	require.Contains(t, problem, "Otra persona cambió esta tarea")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css(`section[data-estado="en_progreso"] `+card+`[data-version="2"]`))),
		"the card is where the other person put it, not where it was dropped")
}

func TestBrowserUploadAnAttachmentWithProgressAndSeeTheLimitRefused(t *testing.T) {
	dir := t.TempDir()
	b := setup(t, func(c *configT) { c.UploadDir, c.UploadMaxBytes = filepath.Join(dir, "uploads"), 2<<20 })
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	id := createTask(t, br, "Tarea con un adjunto")
	small, big := filepath.Join(dir, "cartola noviembre.csv"), filepath.Join(dir, "respaldo.zip")
	// 1.4 MB, and 2.5 MiB: over the limit, under the HTTP server's own cap (limit + 1 MiB).
	require.NoError(t, os.WriteFile(small, []byte(strings.Repeat("fecha;monto\n2026-11-01;12345\n", 50_000)), 0o600))
	require.NoError(t, os.WriteFile(big, make([]byte, 5<<19), 0o600))

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(fmt.Sprintf("%s/tarea/%d", base, id)),
		chromedp.WaitVisible(css("#archivo")),
		chromedp.SetUploadFiles(css("#archivo"), []string{small}),
		chromedp.Click(css(`#adjuntos button[type="submit"]:not(.link)`)),
		chromedp.WaitVisible(css(`#adjuntos [data-file-id] a[download]`))))
	name, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#adjuntos [data-file-id] a").textContent`))
	require.NoError(t, err)
	require.Equal(t, "cartola noviembre.csv", name)

	// The progress bar followed the upload: keep the last value it showed
	// before the answer replaced the form.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.lastProgress = 0; document.body.addEventListener("htmx:xhr:progress",
		() => { const p = document.querySelector("progress.upload-progress"); if (p) window.lastProgress = p.value; }); true`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.SetUploadFiles(css("#archivo"), []string{small}),
		chromedp.Click(css(`#adjuntos button[type="submit"]:not(.link)`)),
		chromedp.WaitVisible(css(`#adjuntos [data-file-id] + [data-file-id]`))))
	progress, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.lastProgress`))
	require.NoError(t, err)
	require.Equal(t, 100.0, progress, "the bar reached the end")

	require.NoError(t, chromedp.Do(ctx, chromedp.SetUploadFiles(css("#archivo"), []string{big}),
		chromedp.Click(css(`#adjuntos button[type="submit"]:not(.link)`)),
		chromedp.WaitVisible(css(`#alerts [role="alert"]`))))
	alert, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#alerts").textContent`))
	require.NoError(t, err)
	require.Contains(t, alert, "El archivo supera el máximo")
	files, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#adjuntos [data-file-id]").length`))
	require.NoError(t, err)
	require.Equal(t, 2, files, "the refused file is not listed")
}

func TestBrowserASecondAdminSeesMovesAndNotificationsWithoutReloading(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	watcher, mover := chromium(t), chromium(t)
	type css = chromedp.CSS
	login(t, watcher, base)
	login(t, mover, base)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/app/tareas")
	id := createTask(t, br, "Tarjeta que se mueve sola")
	card := fmt.Sprintf(`[data-task-id="%d"]`, id)

	for _, ctx := range []context.Context{watcher, mover} {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(base+"/app/tareas"),
			chromedp.WaitVisible(css(card))))
	}
	// The mover uses the card's state selector, as from the keyboard.
	require.NoError(t, chromedp.Do(mover, chromedp.SetValue(css(fmt.Sprintf("#move-%d", id)), "hecho")))
	_, err := chromedp.Run(mover, chromedp.Evaluate[bool](fmt.Sprintf(`document.getElementById("move-%d").dispatchEvent(new Event("change", {bubbles: true}))`, id)))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(mover, chromedp.WaitVisible(css(`section[data-estado="hecho"] `+card))))
	require.NoError(t, chromedp.Do(watcher, chromedp.WaitVisible(css(`section[data-estado="hecho"] `+card))),
		"the watcher's board shows the move without a reload")

	// Leave the board and come back through history (the back-forward cache):
	// the page catches up on what it missed while away.
	require.NoError(t, chromedp.Do(watcher, chromedp.Navigate(base+"/app/perfil"), chromedp.WaitReady("body")))
	resp, _ := br.put(fmt.Sprintf("/tarea/%d/estado", id), url.Values{"estado": {"revisión"}, "version": {"2"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = chromedp.Run(watcher, chromedp.Evaluate[bool](`history.back(), true`))
	require.NoError(t, err)
	// chromedp does not follow a page restored from the cache: ask the page.
	waitFor(t, watcher, `document.querySelector('section[data-estado="revisión"] `+card+`') !== null`,
		"the board came back up to date")

	notifyInbox(t, b, adminEmail)
	waitFor(t, watcher, `document.querySelector("#unread-notifications a.badge") !== null`, "the badge appears")
	badge, err := chromedp.Run(watcher, chromedp.Evaluate[string](`document.querySelector("#unread-notifications").textContent + "|" + document.querySelector("#unread-menu").textContent`))
	require.NoError(t, err)
	require.Equal(t, "1 sin leer| (1)", badge, "the unread badge and the menu's count update live")
}

// waitFor polls the page until expr is true, for up to 5 s.
func waitFor(t *testing.T, ctx context.Context, expr, what string) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		require.NoError(t, err)
		if ok {
			return
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%s: not within 5 s (%s)", what, expr)
		}
	}
}

func TestBrowserSaveTheCardAPIAndBrowseItsCards(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	cards := httptest.NewServer(http.HandlerFunc(realisticCards))
	t.Cleanup(cards.Close)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(base+"/app/tarjetas/config"),
		chromedp.WaitVisible(css("#base_url")),
		chromedp.SendKeys(css("#base_url"), cards.URL+"/v1"), chromedp.SendKeys(css("#api_key"), cardKey),
		chromedp.Click(css(`#cards-config button[type="submit"]`)),
		chromedp.WaitVisible(css(`#alerts .alert-ok`))))
	masked, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-field="api_key"]').textContent`))
	require.NoError(t, err)
	require.Equal(t, "••••7788", masked)

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(css(`#cards-probe`)), chromedp.Click(css(`form[action="/app/tarjetas/config/probar"] button`)),
		chromedp.WaitVisible(css(`[data-probe="ok"]`))), "the probe's outcome shows in place")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/app/tarjetas/tarjetas"),
		chromedp.WaitVisible(css(`#card-list tr[data-id="tc_000025"]`))))
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#card-list tbody tr").length`))
	require.NoError(t, err)
	require.Equal(t, 25, n, "the rows of the fake API")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(css(`#card-list tr[data-id="tc_000002"] a`)),
		chromedp.WaitVisible(css(`#card-detail[data-id="tc_000002"] pre.payload`))), "the detail opens above the list, through htmx")
	loc, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	require.NoError(t, err)
	require.Equal(t, "/app/tarjetas/tarjetas/tc_000002", loc, "with its own address")
}

// seedServer adds a server with a day of 30-second heartbeats and a gap of
// twenty minutes in the middle, and returns its id.
func seedServer(t *testing.T, b *bundle, name string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(t, b.env.DB.NewRaw(`INSERT INTO servidores (nombre, host, token_hash, token_prefix, estado, ultimo_latido, cpu, ram, swap, disk, tcp, load1)
		VALUES (?, ?, ?, 'pag_seed', 'online', now(), 35.5, 61.2, 3.1, 72.4, 180, 0.8) RETURNING id`, name, name, []byte(name)).Scan(ctx, &id))
	_, err := b.env.DB.ExecContext(ctx, `INSERT INTO servidor_metricas_history (servidor_id, created_at, cpu, ram, swap, disk, tcp, load1)
		SELECT ?, now() - make_interval(secs => 30 * i), 30 + 20 * sin(i / 40.0), 60 + 5 * cos(i / 90.0), 3, 72, 150 + i % 60, 0.5 + (i % 10) / 10.0
		FROM generate_series(0, 2879) AS i WHERE i NOT BETWEEN 1000 AND 1040`, id)
	require.NoError(t, err)
	return id
}

func serverID(t *testing.T, b *bundle) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.env.DB.NewRaw("SELECT max(id) FROM servidores").Scan(context.Background(), &id))
	return id
}

func TestBrowserAServerPageDrawsItsChartsAndSwitchesRange(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	id := seedServer(t, b, "web-1")
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(fmt.Sprintf("%s/app/servidor/%d", base, id)),
		chromedp.WaitVisible(css(`#metrics[data-horas="24"] .chart[data-series="cpu,ram,swap,disk"] canvas`))))
	count, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.chart[data-series="tcp"]').dataset.count`))
	require.NoError(t, err)
	require.NotEqual(t, "0", count, "the charts have data")
	// seedServer leaves 20 minutes without heartbeats: the line breaks there
	// (a null point) rather than joining across.
	gap, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const d = document.querySelector('.chart[data-series="tcp"]')._chart.data;
		return d[1].some(v => v === null) && d[1].filter(v => v !== null).length > 10; })()`))
	require.NoError(t, err)
	require.True(t, gap, "a gap where heartbeats are missing")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(css(`[data-horas="1"]`)),
		chromedp.WaitVisible(css(`#metrics[data-horas="1"] .chart[data-series="load1"] canvas`)),
		chromedp.WaitVisible(css(`[data-horas="1"][aria-pressed="true"]`))), "the range switches to the last hour")

	// The list filtered by state, in place, with the URL to come back to.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/app/servidores"),
		chromedp.WaitVisible(css(`#servers tr[data-estado="online"]`)),
		chromedp.SetValue(css("#estado"), "offline")))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("estado").dispatchEvent(new Event("change", {bubbles: true}))`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css(`#servers [data-empty="no-match"]`))))
	loc, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`))
	require.NoError(t, err)
	require.Equal(t, "?estado=offline", loc)
	forms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#server-filters").length`))
	require.NoError(t, err)
	require.Equal(t, 1, forms, "only the list was swapped")
}

// seedMonitors adds monitors in every state, with long URLs, a day of hourly
// figures and a page of checks.
func seedMonitors(t *testing.T, b *bundle) {
	t.Helper()
	ctx := context.Background()
	_, err := b.env.DB.ExecContext(ctx, `INSERT INTO url_monitores (nombre, url, estado, ultimo_check, ultima_latencia_ms, ultimo_status)
		SELECT 'Checkout sucursal ' || i, 'https://pagos-produccion-santiago-0' || i || '.empresa-distribuidora-del-sur.cl/api/v2/estado/salud?detalle=completo',
		       (ARRAY['up','down','pendiente'])[1 + i % 3], now(), 120 + i, 200 FROM generate_series(1, 60) AS i`)
	require.NoError(t, err)
	_, err = b.env.DB.ExecContext(ctx, `INSERT INTO url_monitor_horas (monitor_id, hora, checks, ok, latencia_sum)
		SELECT m.id, date_trunc('hour', now()) - make_interval(hours => h), 60, 60 - (h % 5), 60 * (100 + 10 * h)
		FROM url_monitores m, generate_series(0, 23) AS h WHERE h <> 7`)
	require.NoError(t, err)
	_, err = b.env.DB.ExecContext(ctx, `INSERT INTO url_monitor_log (monitor_id, created_at, metodo, status, latencia_ms, ok, error)
		SELECT m.id, now() - make_interval(mins => i), 'HEAD', CASE WHEN i % 7 = 0 THEN NULL ELSE 200 END, 100 + i, i % 7 <> 0,
		       CASE WHEN i % 7 = 0 THEN 'sin respuesta en 10s' ELSE '' END
		FROM url_monitores m, generate_series(1, 60) AS i`)
	require.NoError(t, err)
}

func monitorID(t *testing.T, b *bundle) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.env.DB.NewRaw("SELECT min(id) FROM url_monitores WHERE estado = 'down'").Scan(context.Background(), &id))
	return id
}

func TestBrowserAddAMonitorCheckItAndSeeTheLog(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(target.Close)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(base+"/app/url-monitor"),
		chromedp.Click(css("#new-monitor summary")),
		chromedp.SendKeys(css("#nombre"), "Tienda"), chromedp.SendKeys(css("#url"), target.URL+"/salud"),
		chromedp.Click(css(`#new-monitor button[type="submit"]`)),
		chromedp.WaitVisible(css(`#monitor[data-estado="pendiente"]`))), "the new monitor's page")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(css(`form[action$="/check"] button`)),
		chromedp.WaitVisible(css(`#check-result [data-ok="true"]`)),
		chromedp.WaitVisible(css(`#monitor-logs tbody tr[data-ok="true"]`))), "the result in place, and its row in the log")
}
