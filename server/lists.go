package server

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// Pager is the position of a list page: the range shown, the total, and the
// links to the neighbouring pages (with the filters kept).
type Pager struct {
	Page, Pages     int
	From, To, Total int
	PrevURL         string
	NextURL         string
}

func newPager(path string, query url.Values, page, shown, total int) Pager {
	p := Pager{Page: page, Total: total, Pages: (total + db.PageSize - 1) / db.PageSize}
	if shown > 0 {
		p.From = (page-1)*db.PageSize + 1
		p.To = p.From + shown - 1
	}
	link := func(n int) string {
		q := url.Values{}
		for k, v := range query {
			if k != "page" && len(v) > 0 && v[0] != "" {
				q.Set(k, v[0])
			}
		}
		if n > 1 {
			q.Set("page", strconv.Itoa(n))
		}
		if len(q) == 0 {
			return path
		}
		return path + "?" + q.Encode()
	}
	if page > 1 {
		p.PrevURL = link(min(page-1, max(p.Pages, 1)))
	}
	if page < p.Pages {
		p.NextURL = link(page + 1)
	}
	return p
}

// listQuery reads page, status, event and q of a list, checking each. A value
// that cannot be used is reported by field, in Spanish, for a 422.
func listQuery(c *fiber.Ctx, statuses []string) (db.ListFilter, int, map[string]string) {
	problems := map[string]string{}
	f := db.ListFilter{
		Event:  strings.TrimSpace(c.Query("event")),
		Status: strings.TrimSpace(c.Query("status")),
		Q:      strings.TrimSpace(c.Query("q")),
		// Exact, as stored: references are never trimmed or cut.
		Reference: c.Query("reference"),
	}
	page := 1
	if v := c.Query("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			problems["page"] = "La página debe ser un número desde 1."
		} else {
			page = n
		}
	}
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		problems["status"] = "Estado desconocido: elija uno de la lista."
	}
	if len(f.Event) > 100 {
		problems["event"] = "El evento es demasiado largo."
	}
	if len(f.Q) > 200 {
		problems["q"] = "La búsqueda admite hasta 200 caracteres."
	}
	if utf8.RuneCountInString(f.Reference) > maxReferenceChars {
		problems["reference"] = fmt.Sprintf("Una referencia tiene hasta %d caracteres.", maxReferenceChars)
	}
	if len(problems) > 0 {
		return db.ListFilter{}, 1, problems
	}
	return f, page, nil
}
