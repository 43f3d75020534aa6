package server

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"
)

type errorPage struct {
	Page
	Status  int
	Heading string
	Message string
}

// headings are the Spanish titles of the statuses users meet; the message of a
// fiber.Error, when set by a handler, says what exactly went wrong.
var headings = map[int]string{
	fiber.StatusBadRequest:            "Solicitud no válida",
	fiber.StatusUnauthorized:          "Sesión requerida",
	fiber.StatusForbidden:             "Acceso denegado",
	fiber.StatusNotFound:              "Página no encontrada",
	fiber.StatusMethodNotAllowed:      "Método no permitido",
	fiber.StatusConflict:              "Conflicto",
	fiber.StatusRequestEntityTooLarge: "Contenido demasiado grande",
	fiber.StatusUnsupportedMediaType:  "Tipo de contenido no admitido",
	fiber.StatusUnprocessableEntity:   "Datos no válidos",
	fiber.StatusTooManyRequests:       "Demasiados intentos",
	fiber.StatusServiceUnavailable:    "Servicio no disponible",
	fiber.StatusBadGateway:            "Pasarela sin respuesta",
	fiber.StatusGatewayTimeout:        "Pasarela sin respuesta a tiempo",
}

var defaultMessages = map[int]string{
	fiber.StatusNotFound:              "La dirección que abrió no existe o ya no está disponible.",
	fiber.StatusForbidden:             "Su rol no tiene acceso a esta sección.",
	fiber.StatusMethodNotAllowed:      "Esta dirección no acepta ese método.",
	fiber.StatusRequestEntityTooLarge: "El contenido enviado supera el tamaño permitido.",
	fiber.StatusInternalServerError:   "Ocurrió un error inesperado. Ya quedó registrado; intente de nuevo en unos minutos.",
}

// handleError is Fiber's ErrorHandler: it logs a server error once, with the
// request id, and answers every error in the form the client reads: JSON for
// the APIs, a fragment for htmx, a page in the layout otherwise. A user never
// sees an internal error's text.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	// A fiber.Error is ours to show: its message was written for the user. Any
	// other error is internal: logged once, and the user sees a generic text.
	status, msg := fiber.StatusInternalServerError, ""
	var fe *fiber.Error
	if errors.As(err, &fe) {
		status, msg = fe.Code, fe.Message
		if status >= 500 {
			requestLogger(c, s.log).Warn("request answered with a server error", slog.Int("status", status), slog.String("error", msg))
		}
	} else {
		requestLogger(c, s.log).Error("request failed", slog.String("error", err.Error()))
	}
	if msg == "" || msg == fiberDefaultText(status) {
		msg = defaultMessages[status]
		if msg == "" {
			msg = defaultMessages[fiber.StatusInternalServerError]
		}
	}
	heading := headings[status]
	if heading == "" {
		heading = "Error"
	}

	c.Status(status)
	if wantsJSON(c) {
		return c.JSON(fiber.Map{"error": msg})
	}
	data := errorPage{Page: s.page(c, heading), Status: status, Heading: heading, Message: msg}
	if isHTMX(c) {
		return c.Render("errors/fragment", data)
	}
	if rerr := c.Render("errors/error", data, "layouts/base"); rerr != nil {
		s.log.Error("render error page", slog.String("error", rerr.Error()))
		return c.SendString(msg)
	}
	return nil
}

// fiberDefaultText is the English text Fiber gives its own errors.
func fiberDefaultText(status int) string {
	return fiber.NewError(status).Message
}

func wantsJSON(c *fiber.Ctx) bool {
	p := c.Path()
	return strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/webhooks/") ||
		strings.HasPrefix(p, "/app/jobs/api/") || strings.HasPrefix(p, "/app/tarjetas/api/")
}
