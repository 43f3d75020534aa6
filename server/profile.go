package server

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// commonZones are offered first; any IANA name is accepted.
var commonZones = []string{
	"America/Santiago", "America/Argentina/Buenos_Aires", "America/Bogota", "America/Lima",
	"America/Mexico_City", "America/Sao_Paulo", "America/Montevideo", "America/Caracas",
	"America/New_York", "Europe/Madrid", "UTC",
}

type profilePage struct {
	Page
	Zones   []string
	Problem string
	// Typed is what the user typed, kept when it is refused.
	Typed string
}

func (s *Server) showProfile(c *fiber.Ctx) error {
	return s.render(c, fiber.StatusOK, "pages/profile/index", "", profilePage{Page: s.page(c, "Perfil"), Zones: commonZones})
}

// saveProfile sets the time zone the user reads every date in.
func (s *Server) saveProfile(c *fiber.Ctx) error {
	tz := strings.TrimSpace(c.FormValue("time_zone"))
	if _, err := time.LoadLocation(tz); err != nil || tz == "" || tz == "Local" {
		data := profilePage{Page: s.page(c, "Perfil"), Zones: commonZones, Typed: tz,
			Problem: "Zona horaria desconocida: elija una de la lista o escriba un nombre IANA como America/Santiago."}
		return s.render(c, fiber.StatusUnprocessableEntity, "pages/profile/index", "", data)
	}
	if err := s.store.SetTimeZone(c.UserContext(), s.db, currentUser(c).ID, tz); err != nil {
		return err
	}
	s.setFlash(c, "Las fechas se muestran ahora en "+tz+".")
	return redirectAfterPost(c, "/app/perfil")
}
