package server

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

type modulesPage struct {
	Page
	Roles []string
	Rows  []moduleRow
	Error string
}

type moduleRow struct {
	Module string
	Cells  []moduleCell
}

type moduleCell struct {
	Role, Module string
	Enabled      bool
	// Locked: the Administrador role always keeps Administración (no button).
	Locked bool
}

func (s *Server) modulesData(c *fiber.Ctx) (modulesPage, error) {
	pairs, err := s.store.RoleModules(c.UserContext(), s.db)
	if err != nil {
		return modulesPage{}, err
	}
	data := modulesPage{Page: s.page(c, "Módulos y roles")}
	rowOf := map[string]int{}
	seenRole := map[string]bool{}
	for _, p := range pairs {
		if !seenRole[p.RoleName] {
			seenRole[p.RoleName] = true
			data.Roles = append(data.Roles, p.RoleName)
		}
		i, ok := rowOf[p.ModuleName]
		if !ok {
			i = len(data.Rows)
			rowOf[p.ModuleName] = i
			data.Rows = append(data.Rows, moduleRow{Module: p.ModuleName})
		}
		data.Rows[i].Cells = append(data.Rows[i].Cells, moduleCell{Role: p.RoleName, Module: p.ModuleName, Enabled: p.Enabled,
			Locked: p.RoleName == db.RoleAdmin && p.ModuleName == db.ModuleAdmin})
	}
	return data, nil
}

func (s *Server) listModules(c *fiber.Ctx) error {
	data, err := s.modulesData(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/modules/index", "partials/modules/table", data)
}

// updateModules re-runs the seed (action=seed) or grants or withdraws one
// module from one role (role, module, enabled).
func (s *Server) updateModules(c *fiber.Ctx) error {
	ctx := c.UserContext()
	status, problem, flash := fiber.StatusOK, "", ""
	if c.FormValue("action") == "seed" {
		if _, err := s.store.Seed(ctx, s.db, db.SeedInput{}); err != nil {
			return err
		}
		flash = "Valores iniciales restaurados."
	} else {
		enabled, ok := parseSwitch(c.FormValue("enabled"))
		role, module := c.FormValue("role"), c.FormValue("module")
		switch {
		case !ok:
			status, problem = fiber.StatusUnprocessableEntity, "El campo enabled debe ser on u off."
		case role == "" || module == "":
			status, problem = fiber.StatusUnprocessableEntity, "Indique el rol y el módulo."
		}
		if problem == "" {
			switch err := s.store.SetRoleModule(ctx, s.db, role, module, enabled); {
			case errors.Is(err, db.ErrNotFound):
				status, problem = fiber.StatusUnprocessableEntity, "No existe el rol «"+role+"» o el módulo «"+module+"»."
			case errors.Is(err, db.ErrLockout):
				status, problem = fiber.StatusConflict, "El rol Administrador debe conservar el módulo Administración."
			case err != nil:
				return err
			default:
				flash = "Módulo " + module + " actualizado para el rol " + role + "."
			}
		}
	}
	if problem == "" && !isHTMX(c) {
		s.setFlash(c, flash)
		return c.Redirect("/modules", fiber.StatusSeeOther)
	}
	data, err := s.modulesData(c)
	if err != nil {
		return err
	}
	data.Error = problem
	return s.render(c, status, "pages/modules/index", "partials/modules/table", data)
}

// parseSwitch reads a form switch: on/true/1 or off/false/0; an absent field
// is off, as an unchecked checkbox sends nothing.
func parseSwitch(v string) (on, ok bool) {
	switch v {
	case "on", "true", "1":
		return true, true
	case "", "off", "false", "0":
		return false, true
	}
	return false, false
}
