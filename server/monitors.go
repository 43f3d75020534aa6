package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
	"pasarela/jobs"
)

// The URL monitor's pages (CONTRACT §5). Checks run as River jobs in the
// worker (jobs/urlcheck.go); "comprobar ahora" runs one here, with the same checker.

type monitorRow struct {
	db.Monitor
	Spark sparkline
}

// sparkline is a monitor's hourly average latency over 24 h as SVG polylines
// (an hour without checks breaks the line).
type sparkline struct {
	Lines    []string
	Min, Max int64
}

const sparkW, sparkH = 96, 24

// maxPage bounds a page number read from the URL: past it (or not a number)
// the first page is shown, and an OFFSET can never overflow.
const maxPage = 1_000_000

func newSparkline(values []int64) sparkline {
	var s sparkline
	for _, v := range values {
		if v > 0 && (s.Min == 0 || v < s.Min) {
			s.Min = v
		}
		s.Max = max(s.Max, v)
	}
	if s.Max == 0 || len(values) < 2 {
		return s
	}
	var line []string
	flush := func() {
		if len(line) > 1 {
			s.Lines = append(s.Lines, strings.Join(line, " "))
		}
		line = nil
	}
	for i, v := range values {
		if v == 0 {
			flush()
			continue
		}
		x := float64(i) * sparkW / float64(len(values)-1)
		y := sparkH - 2 - float64(v)*(sparkH-4)/float64(s.Max)
		line = append(line, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	flush()
	return s
}

type monitorsPage struct {
	Page
	Rows   []monitorRow
	Estado string
	States []string
	Counts map[string]int
	Pager  Pager
	Form   monitorForm
}

type monitorForm struct {
	Nombre, URL, TimeoutS, Fallos string
	Activo                        bool
	Problems                      map[string]string
}

func (s *Server) monitorsData(c *fiber.Ctx, form monitorForm) (monitorsPage, error) {
	ctx := c.UserContext()
	data := monitorsPage{Page: s.page(c, "Monitor de URLs"), States: db.MonitorStates, Form: form}
	if e := c.Query("estado"); slices.Contains(db.MonitorStates, e) {
		data.Estado = e
	}
	page, err := strconv.Atoi(c.Query("page", "1"))
	if err != nil || page < 1 || page > maxPage {
		page = 1
	}
	rows, total, err := s.store.Monitors(ctx, s.db, db.MonitorFilter{Estado: data.Estado}, page)
	if err != nil {
		return data, err
	}
	if pages := (total + db.PageSize - 1) / db.PageSize; page > pages && pages > 0 {
		// Past the end (the list shrank): the last page.
		page = pages
		if rows, total, err = s.store.Monitors(ctx, s.db, db.MonitorFilter{Estado: data.Estado}, page); err != nil {
			return data, err
		}
	}
	for _, m := range rows {
		data.Rows = append(data.Rows, monitorRow{Monitor: m, Spark: newSparkline(m.Latencias)})
	}
	q := url.Values{}
	if data.Estado != "" {
		q.Set("estado", data.Estado)
	}
	data.Pager = newPager("/app/url-monitor", q, page, len(rows), total)
	if data.Counts, err = s.store.MonitorCounts(ctx, s.db); err != nil {
		return data, err
	}
	return data, nil
}

func (s *Server) listMonitors(c *fiber.Ctx) error {
	data, err := s.monitorsData(c, monitorForm{TimeoutS: "10", Fallos: "2", Activo: true})
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/monitors/index", "partials/monitors/list", data)
}

// readMonitorForm checks a monitor's fields. activo: our forms send a hidden
// "off" and the checkbox's "on"; a request without the field keeps def.
func readMonitorForm(c *fiber.Ctx, def bool) (monitorForm, *db.Monitor) {
	f := monitorForm{Nombre: strings.TrimSpace(c.FormValue("nombre")), URL: strings.TrimSpace(c.FormValue("url")),
		TimeoutS: strings.TrimSpace(c.FormValue("timeout_s")), Fallos: strings.TrimSpace(c.FormValue("fallos_para_caida")),
		Activo: def, Problems: map[string]string{}}
	if values := c.Request().PostArgs().PeekMulti("activo"); len(values) > 0 {
		f.Activo = false
		for _, v := range values {
			if s := string(v); s == "on" || s == "true" || s == "1" {
				f.Activo = true
			}
		}
	}
	m := &db.Monitor{Nombre: f.Nombre, URL: f.URL, TimeoutS: 10, FallosParaCaida: 2, Activo: f.Activo}
	if n := len([]rune(f.Nombre)); n < 1 || n > 100 {
		f.Problems["nombre"] = "Escriba un nombre de 1 a 100 caracteres."
	}
	if u, err := url.Parse(f.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(f.URL) > 2000 {
		f.Problems["url"] = "Una URL completa con http:// o https://, de hasta 2000 caracteres."
	}
	if f.TimeoutS != "" {
		v, err := strconv.Atoi(f.TimeoutS)
		if err != nil || v < 1 || v > 30 {
			f.Problems["timeout_s"] = "Entre 1 y 30 segundos."
		}
		m.TimeoutS = v
	}
	if f.Fallos != "" {
		v, err := strconv.Atoi(f.Fallos)
		if err != nil || v < 1 || v > 10 {
			f.Problems["fallos_para_caida"] = "Entre 1 y 10 comprobaciones fallidas seguidas."
		}
		m.FallosParaCaida = v
	}
	return f, m
}

func (s *Server) createMonitor(c *fiber.Ctx) error {
	form, m := readMonitorForm(c, true)
	if len(form.Problems) > 0 {
		data, err := s.monitorsData(c, form)
		if err != nil {
			return err
		}
		return s.render(c, fiber.StatusUnprocessableEntity, "pages/monitors/index", "", data)
	}
	m.Estado = db.MonitorPending
	if err := s.store.CreateMonitor(c.UserContext(), s.db, m); err != nil {
		return err
	}
	s.setFlash(c, "Monitor «"+m.Nombre+"» creado; se comprueba cada minuto.")
	return redirectAfterPost(c, "/app/url-monitor/"+strconv.FormatInt(m.ID, 10))
}

func (s *Server) monitorParam(c *fiber.Ctx) (*db.Monitor, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, fiber.NewError(fiber.StatusNotFound, "No existe ese monitor.")
	}
	m, err := s.store.MonitorByID(c.UserContext(), s.db, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, fiber.NewError(fiber.StatusNotFound, "No existe ese monitor.")
	}
	return m, err
}

type monitorPage struct {
	Page
	Row    monitorRow
	Form   monitorForm
	Logs   []db.MonitorLogEntry
	Pager  Pager
	Result *db.CheckResult
	// OOB is false: the log is in the page (partials/monitors/logs also takes a dict).
	OOB bool
}

func (s *Server) monitorData(c *fiber.Ctx, m *db.Monitor, form monitorForm) (monitorPage, error) {
	data := monitorPage{Page: s.page(c, m.Nombre), Row: monitorRow{Monitor: *m, Spark: newSparkline(m.Latencias)}, Form: form}
	if form.Problems == nil {
		data.Form = monitorForm{Nombre: m.Nombre, URL: m.URL, TimeoutS: strconv.Itoa(m.TimeoutS),
			Fallos: strconv.Itoa(m.FallosParaCaida), Activo: m.Activo}
	}
	page, err := strconv.Atoi(c.Query("page", "1"))
	if err != nil || page < 1 || page > maxPage {
		page = 1
	}
	logs, total, err := s.store.MonitorLog(c.UserContext(), s.db, m.ID, page)
	if err != nil {
		return data, err
	}
	if pages := (total + db.PageSize - 1) / db.PageSize; page > pages && pages > 0 {
		// Past the end (the log is purged as it ages): the last page.
		page = pages
		if logs, total, err = s.store.MonitorLog(c.UserContext(), s.db, m.ID, page); err != nil {
			return data, err
		}
	}
	data.Logs = logs
	data.Pager = newPager(fmt.Sprintf("/app/url-monitor/%d/logs", m.ID), url.Values{}, page, len(logs), total)
	return data, nil
}

// showMonitor is the monitor's page; GET /app/url-monitor/:id/logs?page=N is
// the same page, whose htmx fragment is the log alone.
func (s *Server) showMonitor(c *fiber.Ctx) error {
	m, err := s.monitorParam(c)
	if err != nil {
		return err
	}
	data, err := s.monitorData(c, m, monitorForm{})
	if err != nil {
		return err
	}
	fragment := ""
	if strings.HasSuffix(c.Path(), "/logs") {
		fragment = "partials/monitors/logs"
	}
	return s.render(c, fiber.StatusOK, "pages/monitors/show", fragment, data)
}

func (s *Server) updateMonitor(c *fiber.Ctx) error {
	m, err := s.monitorParam(c)
	if err != nil {
		return err
	}
	form, changed := readMonitorForm(c, m.Activo)
	if len(form.Problems) > 0 {
		data, err := s.monitorData(c, m, form)
		if err != nil {
			return err
		}
		return s.render(c, fiber.StatusUnprocessableEntity, "pages/monitors/show", "", data)
	}
	changed.ID = m.ID
	if err := s.store.UpdateMonitor(c.UserContext(), s.db, changed); err != nil {
		return err
	}
	s.setFlash(c, "Monitor guardado.")
	return redirectAfterPost(c, "/app/url-monitor/"+strconv.FormatInt(m.ID, 10))
}

func (s *Server) deleteMonitor(c *fiber.Ctx) error {
	m, err := s.monitorParam(c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteMonitor(c.UserContext(), s.db, m.ID); err != nil {
		return err
	}
	s.setFlash(c, "Monitor «"+m.Nombre+"» eliminado con su historial.")
	return redirectAfterPost(c, "/app/url-monitor")
}

// checkMonitorNow is POST /app/url-monitor/:id/check: one check now, recorded
// like the minute's (log row, threshold, alert), its result shown in place.
func (s *Server) checkMonitorNow(c *fiber.Ctx) error {
	m, err := s.monitorParam(c)
	if err != nil {
		return err
	}
	r := s.checker.Check(c.UserContext(), m.URL, time.Duration(m.TimeoutS)*time.Second)
	if err := jobs.RecordCheck(context.WithoutCancel(c.UserContext()), s.db, s.pool, s.store, m.ID, r, s.queue.InsertManyPgxTx); err != nil {
		return err
	}
	if m, err = s.monitorParam(c); err != nil {
		return err
	}
	if !isHTMX(c) && strings.Contains(c.Get(fiber.HeaderAccept), "json") {
		return c.JSON(fiber.Map{"id": m.ID, "estado": m.Estado, "ok": r.OK, "metodo": r.Method, "status": r.Status,
			"latencia_ms": r.LatencyMS, "error": r.Error, "at": r.At.Format(time.RFC3339)})
	}
	if c.Get("HX-Target") == fmt.Sprintf("monitor-row-%d", m.ID) {
		// From the list: its row, with the result under the name.
		c.Vary("HX-Request")
		return c.Render("partials/monitors/row", fiber.Map{"R": monitorRow{Monitor: *m, Spark: newSparkline(m.Latencias)},
			"TZ": currentUser(c).TimeZone, "Result": &r})
	}
	data, err := s.monitorData(c, m, monitorForm{})
	if err != nil {
		return err
	}
	data.Result = &r
	return s.render(c, fiber.StatusOK, "pages/monitors/show", "partials/monitors/check", data)
}
