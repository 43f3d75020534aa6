package server_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestARoleWithoutTheModuleGetsForbidden(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(operatorEmail)

	resp, doc := br.get("/modules")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, "403", doc.Find("[data-status]").AttrOr("data-status", ""))
	require.Contains(t, doc.Text(), "Su rol no tiene el módulo Administración")
	require.NotEmpty(t, doc.Find(".sidebar").Nodes, "the error page is shown in the layout")

	resp, doc = br.get("/modules", "HX-Request", "true")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Empty(t, doc.Find(".sidebar").Nodes, "an htmx request gets only the error fragment")
	require.Equal(t, "403", doc.Find(".alert").AttrOr("data-status", ""))

	resp, _ = br.post("/modules", url.Values{"action": {"seed"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestModulesListsEveryRoleAndModule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	resp, doc := br.get("/modules")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	cell := doc.Find(`tr[data-module="Servidores"] td[data-role="Administrador"]`)
	require.Equal(t, "true", cell.AttrOr("data-enabled", ""))
	cell = doc.Find(`tr[data-module="Servidores"] td[data-role="Operador"]`)
	require.Equal(t, "false", cell.AttrOr("data-enabled", ""))
}

func TestGrantingAModuleOpensItToTheRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.browser(t)
	admin.login(adminEmail)
	admin.get("/modules")

	resp, doc := admin.post("/modules", url.Values{"role": {"Operador"}, "module": {"Administración"}, "enabled": {"on"}}, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, doc.Find("h1").Nodes, "htmx gets the table fragment only")
	require.Equal(t, "true", doc.Find(`tr[data-module="Administración"] td[data-role="Operador"]`).AttrOr("data-enabled", ""))

	op := b.browser(t)
	op.login(operatorEmail)
	resp, _ = op.get("/modules")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the operator now has the module")

	resp, _ = admin.post("/modules", url.Values{"role": {"Operador"}, "module": {"Administración"}, "enabled": {"off"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = op.get("/modules")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "withdrawn at once, on the next request")
}

func TestModuleChangesThatCannotBeMadeAreExplained(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/modules")
	cases := []struct {
		name string
		form url.Values
		want int
		text string
	}{
		{"admin keeps administration", url.Values{"role": {"Administrador"}, "module": {"Administración"}, "enabled": {"off"}}, http.StatusConflict, "debe conservar"},
		{"unknown role", url.Values{"role": {"Jefe"}, "module": {"Servidores"}, "enabled": {"on"}}, http.StatusUnprocessableEntity, "No existe el rol"},
		{"missing module", url.Values{"role": {"Operador"}, "enabled": {"on"}}, http.StatusUnprocessableEntity, "Indique el rol y el módulo"},
		{"bad switch", url.Values{"role": {"Operador"}, "module": {"Servidores"}, "enabled": {"maybe"}}, http.StatusUnprocessableEntity, "on u off"},
	}
	for _, tc := range cases {
		resp, doc := br.post("/modules", tc.form)
		require.Equal(t, tc.want, resp.StatusCode, tc.name)
		require.Contains(t, doc.Find("#modules-table .alert-error").Text(), tc.text, tc.name)
	}
}

func TestSeedActionRestoresTheDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.env.DB.NewDelete().TableExpr("notif_evento_config").Where("evento = 'servidor_caido'").Exec(t.Context())
	require.NoError(t, err)
	br := b.browser(t)
	br.login(adminEmail)
	br.get("/modules")
	resp, _ := br.post("/modules", url.Values{"action": {"seed"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/modules", resp.Header.Get("Location"))
	_, doc := br.get("/modules")
	require.Contains(t, doc.Find("#alerts").Text(), "Valores iniciales restaurados")
	n, err := b.env.DB.NewSelect().TableExpr("notif_evento_config").Count(t.Context())
	require.NoError(t, err)
	require.Equal(t, 10, n)
}
