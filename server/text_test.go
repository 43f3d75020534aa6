package server

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanTextKeepsWhatPostgreSQLCanStore(t *testing.T) {
	cases := []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain text is kept", "ORD-1", 200, "ORD-1"},
		{"a NUL is dropped", "A\x00B", 200, "AB"},
		{"invalid bytes become U+FFFD", "A\xff\xfeB", 200, "A\uFFFDB"},
		{"a cut never splits a character", "abé", 3, "ab"},
		{"a cut on a boundary keeps the character", "abé", 4, "abé"},
		{"a long value is cut", strings.Repeat("x", 300), 200, strings.Repeat("x", 200)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := cleanText(tc.in, tc.max)
			if got != tc.want {
				t.Fatalf("cleanText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if !utf8.ValidString(got) || len(got) > tc.max {
				t.Fatalf("cleanText(%q, %d) = %q: not valid UTF-8 within %d bytes", tc.in, tc.max, got, tc.max)
			}
		})
	}
}

func TestMinutesTextRoundsUpAsRetryAfterDoes(t *testing.T) {
	cases := map[int]string{900: "15 minutos", 899: "15 minutos", 841: "15 minutos", 840: "14 minutos", 61: "2 minutos", 60: "1 minuto", 1: "1 minuto"}
	for secs, want := range cases {
		if got := minutesText(secs); got != want {
			t.Errorf("minutesText(%d) = %q, want %q", secs, got, want)
		}
	}
}
