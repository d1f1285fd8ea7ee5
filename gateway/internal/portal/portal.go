// Package portal serves the management portal's built static files, embedded
// from dist/ (filled by `make build`: the portal's index.html and assets/).
// Unknown non-file paths fall back to index.html so client-side routes work;
// when the portal was not built, a minimal page says so.
package portal

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:dist
var dist embed.FS

const notBuilt = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Agent Workspace Files</title></head>
<body><h1>Agent Workspace Files</h1>
<p>The management portal was not built into this binary. Run <code>make build</code> and restart the gateway.</p>
<p>The REST API is at <code>/api/v1/agent-gateway/</code> and the WebDAV view at <code>/dav/</code>.</p>
</body></html>
`

// Handler serves the embedded portal.
type Handler struct {
	files fs.FS
	index []byte
}

// New returns the handler for the embedded dist/ directory.
func New() *Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at build time; cannot fail
	}
	return NewFS(sub)
}

// NewFS serves files from fsys (tests).
func NewFS(fsys fs.FS) *Handler {
	h := &Handler{files: fsys}
	if b, err := fs.ReadFile(fsys, "index.html"); err == nil {
		h.index = b
	}
	return h
}

// Built reports whether an index.html is embedded.
func (h *Handler) Built() bool { return h.index != nil }

// ServeHTTP serves GET and HEAD.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name != "" && name != "index.html" && !strings.HasPrefix(path.Base(name), ".") {
		if f, err := h.files.Open(name); err == nil {
			st, serr := f.Stat()
			if serr == nil && !st.IsDir() {
				defer f.Close()
				if strings.HasPrefix(name, "assets/") {
					// Vite fingerprints asset names, so they never change.
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				}
				if rs, ok := f.(interface {
					Read([]byte) (int, error)
					Seek(int64, int) (int64, error)
				}); ok {
					http.ServeContent(w, r, name, time.Time{}, rs)
					return
				}
			}
			f.Close()
		}
		if strings.HasPrefix(name, "assets/") {
			http.NotFound(w, r)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	body := h.index
	if body == nil {
		body = []byte(notBuilt)
	}
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(body))
}
