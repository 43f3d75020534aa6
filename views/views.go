// Package views embeds the html/template files: layouts/, pages/<resource>/,
// partials/<resource>/ and errors/. A partial that is both part of a page and
// an htmx response is one template, included by the page.
package views

import "embed"

// FS holds every template, named by its path without ".html".
//
//go:embed layouts pages partials errors
var FS embed.FS
