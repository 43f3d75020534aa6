package server

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/fstest"
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

func TestMoneyIsWrittenAsInChile(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		amount   any
		currency string
		want     string
	}{
		{s("15990.00"), "CLP", "$15.990"},
		{s("12345678"), "CLP", "$12.345.678"},
		{s("999999999999999999.99"), "CLP", "$999.999.999.999.999.999,99"}, // never rounded away
		{s("-3.00"), "CLP", "-$3"},
		{s("1000.5"), "CLP", "$1.000,50"}, // cents on a peso amount are shown, not rounded
		{s("1234.5"), "USD", "USD 1.234,50"},
		{s("0.07"), "usd", "USD 0,07"},
		{s("100"), "", "100,00"},
		{s("1.2345"), "CLF", "CLF 1,2345"},
		{(*string)(nil), "CLP", "—"},
		{"", "CLP", "—"},
	}
	for _, tc := range cases {
		if got := money(tc.amount, tc.currency); got != tc.want {
			t.Errorf("money(%v, %q) = %q, want %q", tc.amount, tc.currency, got, tc.want)
		}
	}
}

func TestEventsAndStatesHaveSpanishLabels(t *testing.T) {
	events := map[string]string{
		"SALE_APPROVED": "Venta aprobada", "SALE_REJECTED": "Venta rechazada", "SALE_REVERSED": "Reverso",
		"CHARGEBACK": "Contracargo", "REFUND_CREATED": "REFUND_CREATED (evento desconocido)",
	}
	for event, want := range events {
		if got := eventLabel(event); got != want {
			t.Errorf("eventLabel(%q) = %q, want %q", event, got, want)
		}
	}
	for env, want := range map[string]string{"test": "Pruebas", "production": "Producción", "sandbox": "Sandbox"} {
		if got := envLabel(env); got != want {
			t.Errorf("envLabel(%q) = %q, want %q", env, got, want)
		}
	}
	for _, st := range []string{"pendiente", "pagado", "aprobado", "rechazado", "reversado", "contracargo", "desconocido", "activo", "revocado"} {
		b := badgeFor(st)
		if b.Label == st || b.Tone == "" {
			t.Errorf("state %q has no label or tone: %+v", st, b)
		}
	}
	if b := badgeFor("algo_nuevo"); b.Label != "algo_nuevo" || b.Tone != "neutral" {
		t.Errorf("an unknown state shows as it came, neutral: %+v", b)
	}
}

func TestAPageThatFailsToRenderIsAnErrorNotItsTextInTheLayout(t *testing.T) {
	layout, err := os.ReadFile("../views/layouts/base.html")
	if err != nil {
		t.Fatal(err)
	}
	files := fstest.MapFS{
		"layouts/base.html":   {Data: layout},
		"pages/broken.html":   {Data: []byte(`<p>{{.Missing.Field}}</p>`)},
		"partials/flash.html": {Data: []byte(``)},
	}
	engine := newEngine(http.FS(files))
	engine.AddFunc("asset", func(string) string { return "" })
	if err := engine.Load(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = engine.Render(&out, "pages/broken", Page{Title: "x"}, "layouts/base")
	if err == nil {
		t.Fatalf("a page that cannot render must fail, got a page: %s", out.String())
	}
}

func TestRejectionCountsKeepTheirMemoryBounded(t *testing.T) {
	rc := &rejectionCounter{pending: map[rejectionKey]rejectionCount{}}
	for i := 0; i < rejectionMaxKeys+500; i++ {
		rc.add("firma inválida", "10.0."+strings.Repeat("1", i%3+1)+"."+string(rune('a'+i%26))+strings.Repeat("x", i/26), 10)
	}
	if len(rc.pending) > rejectionMaxKeys+2 { // + the "(otras)" keys of this minute (and the next, if it turned)
		t.Fatalf("%d keys kept, want at most %d", len(rc.pending), rejectionMaxKeys+2)
	}
	var total int64
	others := int64(0)
	for k, c := range rc.pending {
		total += c.n
		if k.ip == rejectionOtherIPs {
			others += c.n
		}
	}
	if total != int64(rejectionMaxKeys+500) || others < 500 {
		t.Fatalf("every refusal is still counted: total %d, under (otras) %d", total, others)
	}
}
