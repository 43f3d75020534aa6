package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func addMonitor(t *testing.T, br *browser, name, target string) int64 {
	t.Helper()
	br.get("/app/url-monitor")
	resp, _ := br.post("/app/url-monitor", url.Values{"nombre": {name}, "url": {target}, "timeout_s": {"2"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var id int64
	_, err := fmt.Sscanf(resp.Header.Get("Location"), "/app/url-monitor/%d", &id)
	require.NoError(t, err)
	return id
}

func TestAMonitorIsAddedCheckedByHandAndItsLogShown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	id := addMonitor(t, br, "Tienda", up.URL+"/salud")

	_, doc := br.get("/app/url-monitor")
	row := doc.Find(fmt.Sprintf(`tr[data-id="%d"]`, id))
	require.Equal(t, "pendiente", row.AttrOr("data-estado", ""))

	// From the list: the row comes back with the result.
	resp, body := br.send(http.MethodPost, fmt.Sprintf("/app/url-monitor/%d/check", id), "", "HX-Request", "true", "HX-Target", fmt.Sprintf("monitor-row-%d", id))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(strings.TrimSpace(body), fmt.Sprintf(`<tr id="monitor-row-%d" data-id="%d" data-estado="up">`, id, id)), body)
	require.Contains(t, body, "Comprobado ahora: HEAD 200")

	// From its page: the result, and the log with the new row.
	resp, frag := br.post(fmt.Sprintf("/app/url-monitor/%d/check", id), nil, "HX-Request", "true", "HX-Target", "check-result")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "true", frag.Find("[data-ok]").First().AttrOr("data-ok", ""))
	require.Equal(t, "up", frag.Find(`#monitor[hx-swap-oob]`).AttrOr("data-estado", ""), "the state is refreshed with it")
	require.Equal(t, 2, frag.Find(`#monitor-logs[hx-swap-oob] tbody tr`).Length(), "both checks are in the log")

	resp, doc = br.get(fmt.Sprintf("/app/url-monitor/%d/logs?page=1", id))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, doc.Find("#monitor-logs tbody tr").Length())

	_, doc = br.get("/app/url-monitor?estado=up")
	require.Equal(t, 1, doc.Find("tr[data-id]").Length(), "the filter by state")
	_, doc = br.get("/app/url-monitor?estado=down")
	require.Equal(t, "no-match", doc.Find("[data-empty]").AttrOr("data-empty", ""))
}

func TestAMonitorIsEditedAndDeletedAndBadInputIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	id := addMonitor(t, br, "API", "https://api.example.cl/")

	for name, form := range map[string]url.Values{
		"not http":      {"nombre": {"x"}, "url": {"ftp://example.cl/"}},
		"no host":       {"nombre": {"x"}, "url": {"https://"}},
		"no name":       {"nombre": {""}, "url": {"https://example.cl/"}},
		"a long wait":   {"nombre": {"x"}, "url": {"https://example.cl/"}, "timeout_s": {"90"}},
		"zero failures": {"nombre": {"x"}, "url": {"https://example.cl/"}, "fallos_para_caida": {"0"}},
	} {
		resp, doc := br.post("/app/url-monitor", form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		require.Equal(t, 1, doc.Find(`[aria-invalid="true"]`).Length(), name)
	}

	resp, _ := br.put(fmt.Sprintf("/app/url-monitor/%d", id), url.Values{"nombre": {"API pagos"}, "url": {"https://api.example.cl/v2"},
		"timeout_s": {"5"}, "fallos_para_caida": {"3"}, "activo": {"off"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, doc := br.get(fmt.Sprintf("/app/url-monitor/%d", id))
	require.Equal(t, "API pagos", strings.TrimSpace(doc.Find("h1").Text()))
	require.Contains(t, doc.Find("#monitor").Text(), "en pausa")
	require.Equal(t, "3", doc.Find("#fallos_para_caida").AttrOr("value", ""))

	resp, _ = br.post(fmt.Sprintf("/app/url-monitor/%d/eliminar", id), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = br.get(fmt.Sprintf("/app/url-monitor/%d", id))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	// DELETE, as CONTRACT §5 lists it (htmx's verb).
	other := addMonitor(t, br, "Otra", "https://otra.example.cl/")
	for path, status := range map[string]int{fmt.Sprintf("/app/url-monitor/%d", other): http.StatusNoContent, "/app/url-monitor/999999": http.StatusNotFound} {
		req := httptest.NewRequest(http.MethodDelete, path, nil)
		req.Header.Set("X-CSRF-Token", br.csrf)
		req.Header.Set("HX-Request", "true")
		require.Equal(t, status, br.do(req).StatusCode, path)
	}
	resp, _ = br.get(fmt.Sprintf("/app/url-monitor/%d", other))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	op := b.browser(t)
	op.login(operatorEmail)
	resp, _ = op.get("/app/url-monitor")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
