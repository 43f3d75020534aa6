package server

import (
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
	"pasarela/db/secretbox"
)

var fieldLabels = map[string]string{
	"environment":           "Entorno activo",
	"api_key_test":          "Clave de API (pruebas)",
	"api_key_production":    "Clave de API (producción)",
	"secret_key_test":       "Clave secreta del webhook (pruebas)",
	"secret_key_production": "Clave secreta del webhook (producción)",
	"callback_url":          "URL de retorno (callback)",
	"access_key_production": "Clave de acceso (producción)",
	"access_key_sandbox":    "Clave de acceso (sandbox)",
	"url_production":        "URL de la API (producción)",
	"url_sandbox":           "URL de la API (sandbox)",
}

type gatewayFieldView struct {
	Name, Label string
	Secret      bool
	// Masked is a stored secret's last four characters; Value a plain field's value.
	Masked, Value string
	Problem       string
}

type gatewayView struct {
	Gateway      string
	Title        string
	Environment  string
	Environments []string
	Fields       []gatewayFieldView
	Changes      []db.SettingChange
	// ActiveKey (masked) and ActiveURL are what the page summarises.
	ActiveKey string
	ActiveURL string
	Problems  map[string]string
}

type gatewaysPage struct {
	Page
	GWA, GWB   gatewayView
	WebhookURL string
	Calls      []db.UpstreamCall
}

func (s *Server) gatewayView(c *fiber.Ctx, gateway string, problems map[string]string) (gatewayView, error) {
	ctx := c.UserContext()
	g, err := s.store.GatewaySettings(ctx, s.db, s.box, gateway)
	if err != nil {
		return gatewayView{}, err
	}
	v := gatewayView{
		Gateway: gateway, Environment: g.Environment(), Environments: db.GatewayEnvironments[gateway],
		Problems: problems,
	}
	switch gateway {
	case db.GatewayCheckout:
		v.Title = "Pasarela de pago (gwa)"
		v.ActiveKey = secretbox.Mask(g.Active("api_key"))
		v.ActiveURL = g.Values["callback_url"]
	case db.GatewaySubscription:
		v.Title = "Pasarela de suscripciones (gwb)"
		v.ActiveKey = secretbox.Mask(g.Active("access_key"))
		v.ActiveURL = g.Active("url")
	}
	for _, f := range db.GatewayFields[gateway] {
		if f.Name == "environment" {
			continue
		}
		fv := gatewayFieldView{Name: f.Name, Label: fieldLabels[f.Name], Secret: f.Secret, Problem: problems[f.Name]}
		if f.Secret {
			fv.Masked = secretbox.Mask(g.Values[f.Name])
		} else {
			fv.Value = g.Values[f.Name]
		}
		v.Fields = append(v.Fields, fv)
	}
	if v.Changes, err = s.store.SettingChanges(ctx, s.db, gateway, 20); err != nil {
		return gatewayView{}, err
	}
	return v, nil
}

func (s *Server) gatewaysData(c *fiber.Ctx, problems map[string]map[string]string) (gatewaysPage, error) {
	data := gatewaysPage{Page: s.page(c, "Pasarelas de pago"), WebhookURL: s.cfg.BaseURL + "/webhooks/gwa"}
	var err error
	if data.GWA, err = s.gatewayView(c, db.GatewayCheckout, problems[db.GatewayCheckout]); err != nil {
		return data, err
	}
	if data.GWB, err = s.gatewayView(c, db.GatewaySubscription, problems[db.GatewaySubscription]); err != nil {
		return data, err
	}
	if data.Calls, err = s.store.UpstreamCalls(c.UserContext(), s.db, 20); err != nil {
		return data, err
	}
	return data, nil
}

func (s *Server) showGateways(c *fiber.Ctx) error {
	data, err := s.gatewaysData(c, nil)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "pages/gateways/index", "", data)
}

// saveGateway stores one gateway's form: a blank key keeps the stored one,
// clear_<field>=on empties it; plain fields take what the form shows.
func (s *Server) saveGateway(c *fiber.Ctx) error {
	gateway := c.Params("gateway")
	if gateway != db.GatewayCheckout && gateway != db.GatewaySubscription {
		return fiber.NewError(fiber.StatusNotFound, "No existe esa pasarela.")
	}
	changes, problems := gatewayChanges(c, gateway)
	if len(problems) > 0 {
		data, err := s.gatewaysData(c, map[string]map[string]string{gateway: problems})
		if err != nil {
			return err
		}
		return s.render(c, fiber.StatusUnprocessableEntity, "pages/gateways/index", "", data)
	}
	changed, err := s.store.SaveGatewaySettings(c.UserContext(), s.db, s.box, gateway, changes, currentUser(c))
	if err != nil {
		return err
	}
	if gateway == db.GatewayCheckout {
		s.forgetGWASecret()
	}
	if len(changed) == 0 {
		s.setFlash(c, "Sin cambios.")
	} else {
		s.setFlash(c, "Configuración guardada: "+strings.Join(labels(changed), ", ")+".")
	}
	return redirectAfterPost(c, "/app/pasarelas")
}

func gatewayChanges(c *fiber.Ctx, gateway string) ([]db.FieldChange, map[string]string) {
	problems := map[string]string{}
	var changes []db.FieldChange
	for _, f := range db.GatewayFields[gateway] {
		v := strings.TrimSpace(c.FormValue(f.Name))
		switch {
		case f.Name == "environment":
			if !slices.Contains(db.GatewayEnvironments[gateway], v) {
				problems[f.Name] = "Elija " + strings.Join(db.GatewayEnvironments[gateway], " o ") + "."
				continue
			}
			changes = append(changes, db.FieldChange{Field: f.Name, Value: v})
		case f.Secret:
			if c.FormValue("clear_"+f.Name) == "on" {
				changes = append(changes, db.FieldChange{Field: f.Name, Clear: true})
				continue
			}
			if v == "" {
				continue // blank keeps the stored value
			}
			if len(v) > 500 || strings.ContainsAny(v, " \t\r\n") {
				problems[f.Name] = "La clave no puede tener espacios ni más de 500 caracteres."
				continue
			}
			changes = append(changes, db.FieldChange{Field: f.Name, Value: v})
		default: // a URL
			if v != "" {
				if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(v) > 500 {
					problems[f.Name] = "Escriba una URL completa que empiece por http:// o https://."
					continue
				}
			}
			changes = append(changes, db.FieldChange{Field: f.Name, Value: v, Clear: v == ""})
		}
	}
	return changes, problems
}

func labels(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = fieldLabels[f]
	}
	return out
}
