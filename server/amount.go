package server

import (
	"bytes"
	"encoding/json"
	"math/big"
	"regexp"
	"strings"
)

// An amount is what gwa_webhooks.amount holds, numeric(20, 2): up to 18
// integer digits and 2 decimals. The receiver keeps any other amount only in
// the raw payload; /v1/gwb refuses it as out of range.
var (
	maxAmount    = new(big.Rat).SetInt64(1_000_000_000_000_000_000) // 10^18, excluded
	amountCents  = big.NewRat(100, 1)
	decimalRegex = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$`)
)

// parseDecimal reads a JSON number or numeric string as a plain decimal
// number: what PostgreSQL's numeric reads (strconv.ParseFloat also takes hex,
// NaN, Inf and digit separators, which numeric refuses). The exponent is
// bounded by the pattern, so the value stays small in memory.
func parseDecimal(raw json.RawMessage) (*big.Rat, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	v := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, false
		}
	}
	v = strings.TrimSpace(v)
	if len(v) > 60 || !decimalRegex.MatchString(v) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(v)
	return r, ok
}

// amountFits reports whether r has at most 18 integer digits and 2 decimals.
func amountFits(r *big.Rat) bool {
	abs := new(big.Rat).Abs(r)
	return abs.Cmp(maxAmount) < 0 && new(big.Rat).Mul(r, amountCents).IsInt()
}

// storedAmount is the amount as the column stores it, or nil when it is not a
// number or does not fit (it stays in the raw payload).
func storedAmount(raw json.RawMessage) *string {
	r, ok := parseDecimal(raw)
	if !ok || !amountFits(r) {
		return nil
	}
	v := r.FloatString(2)
	return &v
}

// amountProblem says what is wrong with a required positive amount, or "".
func amountProblem(raw json.RawMessage) string {
	r, ok := parseDecimal(raw)
	switch {
	case !ok || r.Sign() <= 0:
		return "Debe ser un número mayor que 0."
	case !amountFits(r):
		return "Está fuera de rango: hasta 18 dígitos enteros y 2 decimales."
	}
	return ""
}
