// Package webui is lily's chat page: static HTML, CSS and JavaScript embedded in the binary (no
// build step, nothing fetched from elsewhere), served by `lily serve` at / with its files under
// /ui/. The page talks to the server only through the public API (/v1/chat/completions streamed,
// /v1/lily/info) and keeps conversations in the browser's localStorage.
package webui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
)

//go:embed static
var static embed.FS

// Budget is the most bytes the page may weigh, all its files together, uncompressed (issue 19).
const Budget = 150 << 10

// csp allows the page its own origin only: no CDN, no inline script, no request elsewhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentType is the Content-Type of a page file by its extension, fixed here rather than read
// from the system's MIME tables, which differ between machines.
func contentType(ext string) (string, bool) {
	switch ext {
	case ".html":
		return "text/html; charset=utf-8", true
	case ".css":
		return "text/css; charset=utf-8", true
	case ".js":
		return "text/javascript; charset=utf-8", true
	}
	return "", false
}

// File is one file of the page.
type File struct {
	Name string // path under /ui/ ("index.html" is served at /)
	Data []byte
	Type string // Content-Type
	etag string
}

// Files returns the page's files, sorted by name.
func Files() []File {
	var out []File
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		typ, ok := contentType(path.Ext(p))
		if !ok {
			return fmt.Errorf("%s: no content type for its extension", p)
		}
		sum := sha256.Sum256(b)
		out = append(out, File{Name: strings.TrimPrefix(p, "static/"), Data: b, Type: typ,
			etag: `"` + hex.EncodeToString(sum[:8]) + `"`})
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("webui: reading the embedded files: %v", err)) // the embed is fixed at build time
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Handler serves GET and HEAD of / (index.html) and /ui/NAME (the other files); anything else is
// 404. Responses carry a Content-Security-Policy that keeps the page on its own origin, and an
// ETag so a reload revalidates instead of downloading again. Safe for concurrent use.
func Handler() http.Handler {
	byPath := map[string]File{}
	for _, f := range Files() {
		if f.Name == "index.html" {
			byPath["/"] = f
		} else {
			byPath["/ui/"+f.Name] = f
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := byPath[r.URL.Path]
		if !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.Type)
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		if r.Header.Get("If-None-Match") == f.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Length", fmt.Sprint(len(f.Data)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(f.Data)
		}
	})
}
