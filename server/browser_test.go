package server_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"pasarela/db"
)

// chromium starts a headless Debian Chromium for t. `make test` installs it;
// without it the browser tests fail rather than pass silently.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		for _, p := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if found, err := exec.LookPath(p); err == nil {
				path = found
				break
			}
		}
	}
	if path == "" {
		t.Fatal("no Chromium found: install Debian's chromium package (make test does) or set CHROMIUM")
	}
	scratch, err := os.MkdirTemp("", "cr")
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium keeps scratch folders (org.chromium.Chromium.*) in TMPDIR:
		// in one of our own, they go with it. A short path: its singleton
		// socket's path must fit in a sockaddr.
		chromedp.Env("TMPDIR="+scratch),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc(); os.RemoveAll(scratch) })
	return ctx
}

// serve runs the app on a loopback port for a real browser.
func serve(t testing.TB, b *bundle) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = b.app.Listener(ln) }()
	t.Cleanup(func() { _ = b.app.Shutdown() })
	return "http://" + ln.Addr().String()
}

func TestBrowserLoginFlow(t *testing.T) {
	b := setup(t)
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS

	// A page under /app without a session lands on the login form.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/app"), chromedp.WaitVisible(css("#login-form"))))
	url, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, url, "/login?next=%2Fapp")

	// A wrong password shows the error on the form.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(css("#email"), adminEmail),
		chromedp.SendKeys(css("#password"), "wrong-password"),
		chromedp.Submit(css("#login-form")),
		chromedp.WaitVisible(css("#login-error")),
	))
	errText, err := chromedp.Run(ctx, chromedp.Text(css("#login-error")))
	require.NoError(t, err)
	require.Equal(t, "Correo o contraseña incorrectos.", strings.TrimSpace(errText))

	// The right password, through the real form post, opens the dashboard.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(css("#password"), testPassword),
		chromedp.Submit(css("#login-form")),
		chromedp.WaitVisible(css("#dashboard")),
	))
	heading, err := chromedp.Run(ctx, chromedp.Text(css("#dashboard")))
	require.NoError(t, err)
	require.Equal(t, "Panel", heading)
	url, err = chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, base+"/app", url, "the login returns to the page first asked for")

	// A POST without the CSRF token is refused, even with the session cookie.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`fetch("/modules", {method: "POST", body: new URLSearchParams({action: "seed"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, 403, status)

	// htmx sends the token from the meta tag: a toggle swaps the table in place.
	cell := `tr[data-module="Servidores"] td[data-role="Operador"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/modules"),
		chromedp.WaitVisible(css(cell+" button")),
		chromedp.Click(css(cell+" button")),
		chromedp.WaitVisible(css(cell+`[data-enabled="true"]`)),
	))
	url, err = chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, base+"/modules", url, "the htmx toggle does not navigate")
	var granted bool
	require.NoError(t, b.env.DB.NewRaw(`SELECT EXISTS (SELECT 1 FROM role_modules rm JOIN roles r ON r.id = rm.role_id
		JOIN modules m ON m.id = rm.module_id WHERE r.name = 'Operador' AND m.name = 'Servidores')`).Scan(ctx, &granted))
	require.True(t, granted, "the toggle reached the database")
}

func TestBrowserWebhookPagingHistoryDetailAndSettings(t *testing.T) {
	b := setup(t)
	ctx0 := context.Background()
	for i := 0; i < 120; i++ {
		_, err := b.store.InsertWebhook(ctx0, b.env.Pool, &db.Webhook{NotificationID: fmt.Sprintf("evt-%03d", i), Event: "SALE_APPROVED",
			Status: "aprobado", Reference: fmt.Sprintf("ORD-%03d", i), Environment: "test", Payload: fmt.Sprintf(`{"id":"evt-%03d"}`, i)})
		require.NoError(t, err)
	}
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS
	login(t, ctx, base)

	firstRow := func() string {
		t.Helper()
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#webhook-list tr[data-id]").dataset.id`))
		require.NoError(t, err)
		return id
	}
	from := func() string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("[data-range-from]").dataset.rangeFrom`))
		require.NoError(t, err)
		return v
	}

	// Page 2 through htmx: the list is swapped and the URL pushed, the page not reloaded.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/app/webhooks/gwa"), chromedp.WaitVisible(css(`a[rel="next"]`))))
	page1 := firstRow()
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__sameDocument = true`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(css(`a[rel="next"]`)),
		chromedp.WaitVisible(css(`[data-range-from="51"]`)),
	))
	url, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, base+"/app/webhooks/gwa?page=2", url)
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`))
	require.NoError(t, err)
	require.True(t, same, "paging is a partial update, not a page load")
	page2 := firstRow()
	require.NotEqual(t, page1, page2)

	// Reload shows page 2; back shows page 1.
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(css(`[data-range-from="51"]`))))
	require.Equal(t, page2, firstRow())
	require.NoError(t, chromedp.Do(ctx, chromedp.NavigateBack(), chromedp.WaitVisible(css(`[data-range-from="1"]`))))
	require.Equal(t, page1, firstRow())
	require.Equal(t, "1", from())
	require.NoError(t, chromedp.Do(ctx, chromedp.NavigateForward(), chromedp.WaitVisible(css(`[data-range-from="51"]`))))
	require.Equal(t, page2, firstRow())

	// Open a detail.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(css(`#webhook-list tr[data-id="`+page2+`"] a`)),
		chromedp.WaitVisible(css("#payload")),
	))
	payload, err := chromedp.Run(ctx, chromedp.Text(css("#payload")))
	require.NoError(t, err)
	require.Contains(t, payload, `"id": "evt-`)

	// Save gateway settings and see the masked key.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/app/pasarelas"),
		chromedp.WaitVisible(css("#gwa-api_key_test")),
		chromedp.SendKeys(css("#gwa-api_key_test"), "pk_test_ABCD9876"),
		chromedp.Submit(css("#gwa-api_key_test")),
		chromedp.WaitVisible(css("#alerts .alert-ok")), // the page after the 303

	))
	masked, err := chromedp.Run(ctx, chromedp.Text(css(`#gateway-gwa [data-field="active_key"]`)))
	require.NoError(t, err)
	require.Equal(t, "••••9876", masked)
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	require.NoError(t, err)
	require.NotContains(t, html, "pk_test_ABCD9876")
}

// login signs in as the admin through the real form.
func login(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	type css = chromedp.CSS
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(css("#login-form")),
		chromedp.SendKeys(css("#email"), adminEmail),
		chromedp.SendKeys(css("#password"), testPassword),
		chromedp.Submit(css("#login-form")),
		chromedp.WaitVisible(css("#dashboard")),
	))
}

func TestBrowserPayerPageTurnsPaidWhenTheApprovalArrives(t *testing.T) {
	b := setupWith(t, options{worker: true})
	b.configureGWA(t, "test", testSecret)
	base := serve(t, b)
	ctx := chromium(t)
	type css = chromedp.CSS

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/gwa/retorno?reference=ORD-1001&email=comprador%40example.com"),
		chromedp.WaitVisible(css(`#payment-status[data-status="pendiente"]`)),
	))
	// The gateway's approval arrives while the payer waits on the page.
	body := fixture(t, "sale_approved.json")
	status, _ := b.postWebhook(t, body, "X-Signature", "sha256="+sign(testSecret, body))
	require.Equal(t, 200, status)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css(`#payment-status[data-status="pagado"]`))))
	text, err := chromedp.Run(ctx, chromedp.Text(css("#payment-status")))
	require.NoError(t, err)
	require.Contains(t, text, "pago confirmado")
}
