package server

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"pasarela/db"
)

// routes lists every route and its middleware: public, then session, then module.
func (s *Server) routes(app *fiber.App) {
	app.Use(s.logRequests, recover.New(), secureHeaders, s.refuseOtherMethods, refuseEncodedBodies)

	// Public, no cookies: health, files, and what the gateway and payers call.
	app.Get("/healthz", s.healthz)
	app.Get("/readyz", s.readyz)
	app.Get("/static/*", s.serveStatic)
	app.Post("/webhooks/gwa", s.receiveGWAWebhook)
	app.Get("/gwa/retorno", s.paymentReturn)
	app.Post("/gwa/retorno", s.paymentReturn)
	app.Get("/gwa/retorno/estado", s.paymentStatus)
	app.Post("/api/agente/heartbeat", s.receiveHeartbeat)

	// Everything below knows the session's user, if any, and the CSRF token.
	app.Use(s.loadSession, s.checkCSRF)
	app.Get("/", func(c *fiber.Ctx) error { return c.Redirect("/app", fiber.StatusSeeOther) })
	app.Get("/login", s.showLogin)
	app.Post("/login", s.login)
	app.Post("/logout", s.logout)

	// The subscription gateway's API: an API token, or an admin session with CSRF.
	gwb := app.Group("/v1/gwb", s.apiAuth)
	gwb.Post("/subscription/crear-plan", s.createPlan)
	gwb.Get("/subscription/ver-plan/:id", s.showPlan)
	gwb.Patch("/subscription/actualizar-plan/:id", s.updatePlan)
	gwb.Post("/payment/crear-pago", s.createPayment)

	// Session required.
	// The event stream answers a visitor without a session itself (live.go).
	app.Get(liveEventsPath, s.liveEvents)
	appGroup := app.Group("/app", requireUser)
	appGroup.Get("/", s.home)
	appGroup.Post("/panel/aviso-silencio", requireModule(db.ModuleAdmin), s.saveSilenceAlert)
	appGroup.Get("/notificaciones", s.showInbox)
	appGroup.Post("/notificaciones/leidas", s.markAllRead)
	appGroup.Post("/notificaciones/:id/leida", s.markRead)
	appGroup.Get("/perfil", s.showProfile)
	appGroup.Post("/perfil", s.saveProfile)

	admin := requireModule(db.ModuleAdmin)
	appGroup.Get("/pasarelas", admin, s.showGateways)
	appGroup.Post("/pasarelas/:gateway", admin, s.saveGateway)
	appGroup.Get("/webhooks/gwa", admin, s.listWebhooks)
	appGroup.Get("/webhooks/gwa/:id", admin, s.showWebhook)
	appGroup.Post("/webhooks/gwa/:id/reprocesar", admin, s.reprocessWebhook)
	appGroup.Get("/pagos/intentos", admin, s.listAttempts)
	appGroup.Get("/pagos/intentos/:id", admin, s.showAttempt)
	appGroup.Get("/notificaciones/config", admin, s.showNotifConfig)
	appGroup.Post("/notificaciones/config/:evento", admin, s.saveNotifConfig)
	appGroup.Get("/api-tokens", admin, s.listTokens)
	appGroup.Post("/api-tokens", admin, s.createToken)
	appGroup.Get("/api-tokens/:id", admin, s.showToken)
	appGroup.Post("/api-tokens/:id/revocar", admin, s.revokeToken)

	appGroup.Get("/tareas", admin, s.showBoard)
	tasks := app.Group("/tarea", requireUser, admin)
	tasks.Post("/", s.createTask)
	tasks.Get("/:id", s.showTask)
	tasks.Put("/:id", s.updateTask)
	tasks.Post("/:id", s.updateTask) // the edit form without script
	tasks.Delete("/:id", s.deleteTask)
	tasks.Post("/:id/eliminar", s.deleteTask) // the delete form without script
	tasks.Put("/:id/estado", s.moveTask)
	tasks.Post("/:id/comentarios", s.addComment)
	tasks.Post("/:id/adjuntos", s.uploadTaskFile)
	tasks.Get("/:id/adjuntos/:adj", s.downloadTaskFile)
	tasks.Delete("/:id/adjuntos/:adj", s.deleteTaskFile)
	tasks.Post("/:id/adjuntos/:adj/eliminar", s.deleteTaskFile) // without script

	servers := requireModule(db.ModuleServers)
	appGroup.Get("/servidores", servers, s.listServers)
	appGroup.Post("/servidores", servers, s.createServer)
	appGroup.Get("/servidor/:id", servers, s.showServer)
	appGroup.Post("/servidor/:id", servers, s.updateServer)
	appGroup.Delete("/servidor/:id", servers, s.deleteServer)
	appGroup.Post("/servidor/:id/eliminar", servers, s.deleteServer) // the delete form without script
	appGroup.Post("/servidor/:id/token", servers, s.rotateServerToken)
	appGroup.Get("/servidor/:id/metricas-history", servers, s.metricsHistory)

	appGroup.Get("/url-monitor", servers, s.listMonitors)
	appGroup.Post("/url-monitor", servers, s.createMonitor)
	appGroup.Get("/url-monitor/:id", servers, s.showMonitor)
	appGroup.Put("/url-monitor/:id", servers, s.updateMonitor)
	appGroup.Post("/url-monitor/:id", servers, s.updateMonitor) // the edit form without script
	appGroup.Delete("/url-monitor/:id", servers, s.deleteMonitor)
	appGroup.Post("/url-monitor/:id/eliminar", servers, s.deleteMonitor) // the delete form without script
	appGroup.Post("/url-monitor/:id/check", servers, s.checkMonitorNow)
	appGroup.Get("/url-monitor/:id/logs", servers, s.showMonitor)

	cards := requireModule(db.ModuleCards)
	appGroup.Get("/tarjetas/config", cards, s.showCardConfig)
	appGroup.Post("/tarjetas/config", cards, s.saveCardConfig)
	appGroup.Post("/tarjetas/config/probar", cards, s.probeCards)
	for _, method := range []string{fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch, fiber.MethodDelete, fiber.MethodOptions} {
		appGroup.Add(method, "/tarjetas/api/:recurso/*", cards, s.proxyCards)
	}
	appGroup.Get("/tarjetas/:recurso", cards, s.showCardResource)
	appGroup.Get("/tarjetas/:recurso/:id", cards, s.showCardItem)

	modules := app.Group("/modules", requireUser, admin)
	modules.Get("/", s.listModules)
	modules.Post("/", s.updateModules)

	if s.jobsUI != nil {
		jobsUI := adaptor.HTTPHandler(s.jobsUI)
		appGroup.All("/jobs", admin, linkBackToConsole, jobsUI)
		appGroup.All("/jobs/*", admin, linkBackToConsole, jobsUI)
	}

	app.Use(func(*fiber.Ctx) error { return fiber.ErrNotFound })
	s.methods = newRouteTable(app.GetRoutes(true))
}

var bodyTag = regexp.MustCompile(`<body[^>]*>`)

// consoleLink is put at the top of River's UI, a single-page app of its own
// with no way back to the console. (River's UI is outside our CSP, see
// secureHeaders, so the inline style is allowed there.)
const consoleLink = `<a href="/app" style="display:block;padding:.5rem 1rem;background:#111827;color:#fff;font:600 14px system-ui,sans-serif;text-decoration:none">← Volver a Pasarela</a>`

// linkBackToConsole adds consoleLink to the HTML pages of River's UI.
func linkBackToConsole(c *fiber.Ctx) error {
	if err := c.Next(); err != nil {
		return err
	}
	if !strings.HasPrefix(string(c.Response().Header.ContentType()), "text/html") {
		return nil
	}
	body := c.Response().Body()
	if loc := bodyTag.FindIndex(body); loc != nil {
		out := make([]byte, 0, len(body)+len(consoleLink))
		out = append(append(append(out, body[:loc[1]]...), consoleLink...), body[loc[1]:]...)
		c.Response().SetBodyRaw(out)
	}
	return nil
}

func (s *Server) healthz(c *fiber.Ctx) error {
	return c.SendString("ok")
}

func (s *Server) readyz(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		return c.Status(fiber.StatusServiceUnavailable).SendString("database unavailable")
	}
	return c.SendString("ok")
}

// serveStatic answers embedded files. A request carrying the current content
// hash (?v=, as asset URLs do) may be cached for a year.
func (s *Server) serveStatic(c *fiber.Ctx) error {
	a, ok := s.assets[c.Params("*")]
	if !ok {
		return fiber.ErrNotFound
	}
	if c.Query("v") == a.Hash {
		c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		c.Set(fiber.HeaderCacheControl, "no-cache")
	}
	c.Set(fiber.HeaderETag, `"`+a.Hash+`"`)
	if c.Get(fiber.HeaderIfNoneMatch) == `"`+a.Hash+`"` {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, a.ContentType)
	return c.Send(a.Body)
}
