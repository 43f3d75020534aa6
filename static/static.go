// Package static embeds the browser files: vendored libraries pinned from the
// npm registry (vendor/, see the Makefile's vendor target) and our own CSS/JS.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
)

//go:embed app.css app.js vendor
var files embed.FS

// Asset is one embedded file with the hash that versions its URL.
type Asset struct {
	Body        []byte
	ContentType string
	Hash        string
}

// Assets indexes every embedded file by its path (e.g. "vendor/htmx/htmx.min.js").
type Assets map[string]Asset

// Load reads and hashes every embedded file once, at start-up.
func Load() (Assets, error) {
	assets := Assets{}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		assets[p] = Asset{Body: body, ContentType: ct, Hash: hex.EncodeToString(sum[:])[:10]}
		return nil
	})
	return assets, err
}

// URL returns the versioned address of an asset: its content hash is in the
// query, so it can be cached for a year and still change with each release.
func (a Assets) URL(name string) string {
	if asset, ok := a[name]; ok {
		return "/static/" + name + "?v=" + asset.Hash
	}
	return "/static/" + name
}
