package server

import (
	"strings"

	"pasarela/db"
)

// NavSection is one module's group of links in the sidebar.
type NavSection struct {
	Title string
	Items []NavItem
}

// NavItem is one link of the sidebar.
type NavItem struct {
	Label  string
	Href   string
	Active bool
}

// navigation is the whole menu, by module; a user sees the modules of their
// role. Each issue that adds a page adds its entry here.
var navigation = []struct {
	module string
	items  []NavItem
}{
	{db.ModuleAdmin, []NavItem{
		{Label: "Tareas", Href: "/app/tareas"},
		{Label: "Pasarelas de pago", Href: "/app/pasarelas"},
		{Label: "Notificaciones de pago", Href: "/app/webhooks/gwa"},
		{Label: "Intentos de pago", Href: "/app/pagos/intentos"},
		{Label: "Tokens de API", Href: "/app/api-tokens"},
		{Label: "Configurar notificaciones", Href: "/app/notificaciones/config"},
		{Label: "Módulos y roles", Href: "/modules"},
		{Label: "Trabajos en segundo plano", Href: "/app/jobs/"},
	}},
	{db.ModuleServers, []NavItem{
		{Label: "Servidores", Href: "/app/servidores"},
		{Label: "Monitor de URLs", Href: "/app/url-monitor"},
	}},
	{db.ModuleCards, []NavItem{
		{Label: "Tarjetas virtuales", Href: "/app/tarjetas/tarjetas"},
		{Label: "API de tarjetas", Href: "/app/tarjetas/config"},
	}},
}

func navFor(u *db.User, path string) []NavSection {
	var out []NavSection
	for _, section := range navigation {
		if !u.HasModule(section.module) || len(section.items) == 0 {
			continue
		}
		items := make([]NavItem, len(section.items))
		for i, it := range section.items {
			it.Active = path == it.Href || strings.HasPrefix(path, strings.TrimSuffix(it.Href, "/")+"/")
			items[i] = it
		}
		out = append(out, NavSection{Title: section.module, Items: items})
	}
	return out
}
