package server

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// routeTable knows which methods each route pattern answers, so that a method
// a route does not have gets 405 with Allow before any other middleware (the
// CSRF check would otherwise answer a PUT to a GET-only page with 403).
type routeTable []routePattern

type routePattern struct {
	segments []string
	method   string
}

// newRouteTable reads the app's routes once they are all registered. It knows
// `:name` and a final `*`; a route using any other pattern syntax stops the
// start, since a path the table misread would skip the CSRF check (see
// localNoRoute).
func newRouteTable(routes []fiber.Route) routeTable {
	var t routeTable
	for _, r := range routes {
		p := routePattern{segments: splitPath(r.Path), method: r.Method}
		for i, seg := range p.segments {
			if strings.ContainsAny(seg, "+?<>()") || (strings.Contains(seg, "*") && (seg != "*" || i != len(p.segments)-1)) ||
				(strings.Contains(seg, ":") && !strings.HasPrefix(seg, ":")) {
				panic(fmt.Sprintf("server: route %s %s uses a pattern the route table does not read", r.Method, r.Path))
			}
		}
		t = append(t, p)
	}
	return t
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(strings.ToLower(p), "/"), "/")
}

// match follows Fiber's defaults: case-insensitive, a trailing slash optional,
// `:name` one segment, `*` the rest of the path.
func (r routePattern) match(path []string) bool {
	for i, seg := range r.segments {
		switch {
		case seg == "*":
			return true
		case i >= len(path):
			return false
		case strings.HasPrefix(seg, ":"):
			if path[i] == "" {
				return false
			}
		case seg != path[i]:
			return false
		}
	}
	return len(path) == len(r.segments)
}

// allowed returns the methods that path answers, sorted.
func (t routeTable) allowed(path string) []string {
	segs := splitPath(path)
	seen := map[string]bool{}
	var methods []string
	for _, r := range t {
		if !seen[r.method] && r.match(segs) {
			seen[r.method] = true
			methods = append(methods, r.method)
		}
	}
	sort.Strings(methods)
	return methods
}

const localNoRoute = "no_route"

// refuseOtherMethods answers 405 to a method the path's routes do not have,
// before any session or CSRF work. A path no route has goes on to the 404 (in
// the layout, or to the login page under /app, like any page), marked so that
// the CSRF check leaves it alone.
func (s *Server) refuseOtherMethods(c *fiber.Ctx) error {
	methods := s.methods.allowed(c.Path())
	if len(methods) == 0 {
		c.Locals(localNoRoute, true)
		return c.Next()
	}
	for _, m := range methods {
		if m == c.Method() {
			return c.Next()
		}
	}
	c.Set(fiber.HeaderAllow, strings.Join(methods, ", "))
	return fiber.ErrMethodNotAllowed
}
