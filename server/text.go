package server

import (
	"strings"
	"unicode/utf8"
)

// cleanText makes text from outside storable in a PostgreSQL text or jsonb
// value, which refuse invalid UTF-8 and NUL: invalid bytes become U+FFFD, NULs
// are dropped, and the result is cut to at most maxBytes bytes without
// splitting a character.
func cleanText(s string, maxBytes int) string {
	s = storable(s)
	if len(s) <= maxBytes {
		return s
	}
	cut := maxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// storable is cleanText without a length limit, for text whose length was
// checked already (identifiers are refused, never cut).
func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}
