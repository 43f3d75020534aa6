package server

import (
	"strings"

	"pasarela/db"
)

// badgeStyle is how one state is shown everywhere in the product.
type badgeStyle struct {
	Label string
	Tone  string // ok, err, warn, info, neutral: a CSS class tone-*
}

// states is the one colour map of every state the console shows (the wire
// values stay as they are; only what a person reads changes).
var states = map[string]badgeStyle{
	db.AttemptPending:   {"Pendiente", "warn"},
	db.AttemptPaid:      {"Pagado", "ok"},
	db.StatusApproved:   {"Aprobado", "ok"},
	db.StatusRejected:   {"Rechazado", "err"},
	db.StatusReversed:   {"Reversado", "warn"},
	db.StatusChargeback: {"Contracargo", "err"},
	db.StatusUnknown:    {"Desconocido", "neutral"},
	"activo":            {"Activo", "ok"},
	"revocado":          {"Revocado", "neutral"},
	"up":                {"Arriba", "ok"},
	"down":              {"Caído", "err"},
	"online":            {"En línea", "ok"},
	"offline":           {"Sin conexión", "err"},
	"por_hacer":         {"Por hacer", "neutral"},
	"en_progreso":       {"En progreso", "info"},
	"revisión":          {"En revisión", "info"},
	"hecho":             {"Hecho", "ok"},
	"procesada":         {"Procesada", "ok"},
	"sin_procesar":      {"Sin procesar", "warn"},
	"sin_verificar":     {"Sin verificar", "neutral"},
	"asignado":          {"Asignado", "ok"},
	"no_asignado":       {"No asignado", "neutral"},
	"siempre":           {"Siempre", "info"},
}

// badgeFor is the style of state; an unknown state shows as it came, neutral.
func badgeFor(state string) badgeStyle {
	if b, ok := states[state]; ok {
		return b
	}
	return badgeStyle{Label: state, Tone: "neutral"}
}

// eventLabels are the checkout gateway's events as the console names them.
var eventLabels = map[string]string{
	db.EventSaleApproved: "Venta aprobada",
	"SALE_REJECTED":      "Venta rechazada",
	"SALE_REVERSED":      "Reverso",
	"CHARGEBACK":         "Contracargo",
}

// eventLabel names an event in Spanish; an unknown one shows its raw code,
// marked as unknown.
func eventLabel(event string) string {
	if l, ok := eventLabels[event]; ok {
		return l
	}
	return event + " (evento desconocido)"
}

// envLabel names a gateway environment.
func envLabel(env string) string {
	switch env {
	case db.EnvTest:
		return "Pruebas"
	case db.EnvProduction:
		return "Producción"
	case "sandbox":
		return "Sandbox"
	}
	return env
}

// currencyDecimals is how many decimals a currency shows (ISO 4217); CLP has none.
var currencyDecimals = map[string]int{"CLP": 0, "CLF": 4, "JPY": 0, "KRW": 0, "PYG": 0}

// money formats an amount as people in Chile read it: CLP as $12.345.678,
// another currency with its code and its decimals (USD 1.234,50). amount is a
// decimal string, as stored (or nil: "—").
func money(amount any, currency string) string {
	var s string
	switch v := amount.(type) {
	case *string:
		if v == nil {
			return "—"
		}
		s = *v
	case string:
		s = v
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "—"
	}
	currency = strings.ToUpper(strings.TrimSpace(currency))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	whole, frac, _ := strings.Cut(s, ".")
	decimals, ok := currencyDecimals[currency]
	if !ok {
		decimals = 2
	}
	// Keep what the amount has beyond the currency's usual decimals: an amount
	// is never rounded for display.
	frac = strings.TrimRight(frac, "0")
	if len(frac) > decimals { // cents on a currency without them: shown as cents
		decimals = max(decimals, 2)
	}
	if len(frac) < decimals {
		frac += strings.Repeat("0", decimals-len(frac))
	}
	var b strings.Builder
	if neg {
		b.WriteString("-")
	}
	switch currency {
	case "CLP":
		b.WriteString("$")
	case "":
	default:
		b.WriteString(currency + " ")
	}
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteString("," + frac)
	}
	return b.String()
}
