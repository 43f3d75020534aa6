package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"pasarela/db"
)

// The pages that browse the card API: whatever a resource returns, shown as
// a table (columns from the JSON keys), paged when the API pages, with a
// detail view and the raw JSON. The API's shape is not ours: these pages
// read the common ones and fall back to the raw JSON.

// maxCardColumns keeps a table readable; the detail shows every field.
const maxCardColumns = 8

type cardTable struct {
	Columns []string
	Rows    []cardRow
	// Page is the API's page (0 when it does not page); HasNext/HasPrev
	// offer the neighbours.
	Page             int
	HasNext, HasPrev bool
	// HasIDs: some rows have an id, so the table links to their detail.
	HasIDs bool
}

type cardRow struct {
	ID    string
	Cells []string
}

type cardField struct{ Name, Value string }

type cardResourcePage struct {
	Page
	Resource  string
	Resources []string
	Query     url.Values
	Table     cardTable
	// Problem is the API's failure, shown in place; Status its HTTP status (0: no answer).
	Problem string
	Status  int
	// Detail view.
	ItemID string
	Fields []cardField
	Raw    string
}

func (p cardResourcePage) PageURL(page int) string {
	q := url.Values{}
	for k, v := range p.Query {
		q[k] = v
	}
	q.Set("page", strconv.Itoa(page))
	return "/app/tarjetas/" + p.Resource + "?" + q.Encode()
}

func (p cardResourcePage) DetailURL(id string) string {
	return "/app/tarjetas/" + p.Resource + "/" + url.PathEscape(id)
}

// fetchCards calls the API for a page and turns a failure into the page's
// message (the console page itself worked: 200 with the problem in place).
func (s *Server) fetchCards(c *fiber.Ctx, data *cardResourcePage, upstreamPath, query string) ([]byte, bool, error) {
	resp, err := s.callCards(c, http.MethodGet, upstreamPath, query, nil)
	var fe *fiber.Error
	switch {
	case errors.As(err, &fe):
		data.Problem, data.Status = fe.Message, 0
		if fe.Code == fiber.StatusServiceUnavailable {
			data.Status = fe.Code
		}
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case resp.Status >= 400:
		data.Status = resp.Status
		data.Problem = fmt.Sprintf("La API de tarjetas respondió %d%s.", resp.Status, upstreamMessage(resp.Body))
		return nil, false, nil
	}
	return resp.Body, true, nil
}

func (s *Server) showCardResource(c *fiber.Ctx) error {
	resource, err := knownCardResource(c)
	if err != nil {
		return err
	}
	data := cardResourcePage{Page: s.page(c, "Tarjetas virtuales: "+resource), Resource: resource,
		Resources: db.CardResources, Query: url.Values{}}
	c.Context().QueryArgs().VisitAll(func(k, v []byte) { data.Query.Add(string(k), string(v)) })
	body, ok, err := s.fetchCards(c, &data, "/"+resource, data.Query.Encode())
	if err != nil {
		return err
	}
	if ok {
		if data.Table, err = tableFromJSON(body, resource); err != nil {
			data.Problem = "La respuesta de la API no es una lista que se pueda mostrar; este es su JSON."
			data.Raw = prettyJSON(body)
		}
		// An API that says there is more without saying which page this is:
		// the page asked for (1 when none).
		if t := &data.Table; t.Page == 0 && t.HasNext {
			t.Page = 1
			if p, err := strconv.Atoi(data.Query.Get("page")); err == nil && p > 1 {
				t.Page = p
			}
			t.HasPrev = t.Page > 1
		}
	}
	return s.render(c, fiber.StatusOK, "pages/cards/resource", "partials/cards/list", data)
}

func (s *Server) showCardItem(c *fiber.Ctx) error {
	resource, err := knownCardResource(c)
	if err != nil {
		return err
	}
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil || id == "" || strings.ContainsAny(id, "/\\%") || len(id) > 200 {
		return fiber.NewError(fiber.StatusNotFound, "Identificador no válido.")
	}
	data := cardResourcePage{Page: s.page(c, "Tarjetas virtuales: "+resource+" "+id), Resource: resource,
		Resources: db.CardResources, ItemID: id}
	body, ok, err := s.fetchCards(c, &data, "/"+resource+"/"+url.PathEscape(id), "")
	if err != nil {
		return err
	}
	if ok {
		data.Fields = fieldsFromJSON(body)
		data.Raw = prettyJSON(body)
	}
	return s.render(c, fiber.StatusOK, "pages/cards/item", "partials/cards/detail", data)
}

// tableFromJSON reads a list: a JSON array of objects, or an object holding
// one under data, items, results or the resource's name, with its paging
// (page/pagina, total_pages/last_page, has_more, next/next_page).
func tableFromJSON(body []byte, resource string) (cardTable, error) {
	var t cardTable
	var top any
	if err := decodeJSON(body, &top); err != nil {
		return t, err
	}
	var items []any
	listKey := "" // where the list is: "" for a top-level array
	switch v := top.(type) {
	case []any:
		items = v
	case map[string]any:
		for _, k := range []string{"data", "items", "results", resource} {
			if list, ok := v[k].([]any); ok {
				items, listKey = list, k
				break
			}
		}
		if items == nil {
			return t, errors.New("no list in the object")
		}
		t.Page = intField(v, "page", "pagina", "current_page")
		last := intField(v, "total_pages", "last_page", "paginas")
		more, _ := v["has_more"].(bool)
		next := v["next"] != nil || v["next_page"] != nil
		t.HasNext = more || next || (t.Page > 0 && t.Page < last)
		t.HasPrev = t.Page > 1
	default:
		return t, errors.New("neither a list nor an object")
	}
	// Columns: the first object's scalar keys, in its order.
	if len(items) > 0 {
		for _, k := range orderedKeys(firstItem(body, listKey)) {
			if obj, ok := items[0].(map[string]any); ok && isScalar(obj[k]) && len(t.Columns) < maxCardColumns {
				t.Columns = append(t.Columns, k)
			}
		}
	}
	for _, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			t.Rows = append(t.Rows, cardRow{Cells: []string{jsonText(it)}})
			continue
		}
		row := cardRow{ID: scalarText(obj["id"])}
		t.HasIDs = t.HasIDs || row.ID != ""
		for _, col := range t.Columns {
			row.Cells = append(row.Cells, jsonText(obj[col]))
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.Columns) == 0 && len(t.Rows) > 0 {
		t.Columns = []string{"valor"}
	}
	return t, nil
}

// firstItem is the raw JSON of a list's first element, the list being the
// document itself (key "") or its field key.
func firstItem(body []byte, key string) []byte {
	list := json.RawMessage(body)
	if key != "" {
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) != nil {
			return nil
		}
		list = obj[key]
	}
	var items []json.RawMessage
	if json.Unmarshal(list, &items) != nil || len(items) == 0 {
		return nil
	}
	return items[0]
}

// fieldsFromJSON lists an object's fields in their order; anything else is one field.
func fieldsFromJSON(body []byte) []cardField {
	var obj map[string]any
	if decodeJSON(body, &obj) != nil {
		return nil
	}
	var out []cardField
	for _, k := range orderedKeys(body) {
		out = append(out, cardField{Name: k, Value: jsonText(obj[k])})
	}
	return out
}

func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return dec.Decode(v)
}

// orderedKeys is the top-level keys of a JSON object in document order (a Go
// map forgets it, and the API's order is the one its authors meant).
func orderedKeys(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

func intField(obj map[string]any, names ...string) int {
	for _, n := range names {
		if v, ok := obj[n].(json.Number); ok {
			if i, err := strconv.Atoi(v.String()); err == nil {
				return i
			}
		}
	}
	return 0
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

// jsonText shows a value in a cell: text as is, null as a dash, nested values as compact JSON.
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return "—"
	case string:
		return x
	case bool:
		if x {
			return "sí"
		}
		return "no"
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
