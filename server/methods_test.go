package server

import (
	"testing"

	"github.com/gofiber/fiber/v2"
)

func TestRouteTableMatchesAsFiberDoesAndRefusesWhatItCannotRead(t *testing.T) {
	table := newRouteTable([]fiber.Route{
		{Method: "GET", Path: "/app/webhooks/gwa/:id"},
		{Method: "POST", Path: "/app/webhooks/gwa/:id/reprocesar"},
		{Method: "GET", Path: "/static/*"},
		{Method: "GET", Path: "/modules/"},
	})
	cases := map[string]string{
		"/app/webhooks/gwa/12":            "GET",
		"/APP/Webhooks/gwa/12/":           "GET", // case-insensitive, trailing slash optional
		"/app/webhooks/gwa/12/reprocesar": "POST",
		"/app/webhooks/gwa/":              "",
		"/static/vendor/htmx/htmx.min.js": "GET",
		"/modules":                        "GET",
		"/nothing":                        "",
	}
	for path, want := range cases {
		got := ""
		if m := table.allowed(path); len(m) > 0 {
			got = m[0]
		}
		if got != want {
			t.Errorf("allowed(%q) = %q, want %q", path, got, want)
		}
	}
	for _, pattern := range []string{"/a/:id?", "/a/+", "/a/:id<int>", "/a/*/b", "/a/x:y"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: a pattern the table cannot read must stop the start", pattern)
				}
			}()
			newRouteTable([]fiber.Route{{Method: "GET", Path: pattern}})
		}()
	}
}
