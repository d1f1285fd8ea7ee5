// Package portal serves the management portal's built static files, embedded
// from dist/ (filled by `make build`: the portal's index.html and assets/).
// Unknown non-file paths fall back to index.html so client-side routes work;
// when the portal was not built, a minimal page says so.
//
// Files are compressed at build time (deploy/scripts/build-portal.sh writes
// name.gz, and name.br where a brotli tool is installed): a client that
// accepts the encoding gets those bytes with Content-Encoding, and every
// response that could have been encoded says Vary: Accept-Encoding.
// Fingerprinted assets (assets/) are cached for a year as immutable;
// index.html is revalidated on every load (no-cache).
package portal

import (
	"bytes"
	"embed"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
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

// encodings are the precompressed variants, best first.
var encodings = []struct{ name, ext string }{{"br", ".br"}, {"gzip", ".gz"}}

// accepts reports whether an Accept-Encoding header allows enc (q=0 refuses;
// an explicit entry wins over "*").
func accepts(header, enc string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.TrimSpace(name)
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.TrimSpace(k) == "q" {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		switch {
		case strings.EqualFold(name, enc):
			return q > 0
		case name == "*":
			star = q > 0
		}
	}
	return star
}

// serveFile serves name (a regular file of h.files), or its precompressed
// variant when the client accepts it. False when name cannot be opened.
func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request, name string) bool {
	ae := r.Header.Get("Accept-Encoding")
	varies := false
	for _, e := range encodings {
		f, err := h.files.Open(name + e.ext)
		if err != nil {
			continue
		}
		defer f.Close()
		varies = true
		if rs, ok := f.(io.ReadSeeker); ok && accepts(ae, e.name) {
			w.Header().Set("Vary", "Accept-Encoding")
			w.Header().Set("Content-Encoding", e.name)
			if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			http.ServeContent(w, r, name, time.Time{}, rs)
			return true
		}
	}
	f, err := h.files.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	rs, ok := f.(io.ReadSeeker)
	if err != nil || st.IsDir() || !ok {
		return false
	}
	if varies {
		w.Header().Set("Vary", "Accept-Encoding")
	}
	http.ServeContent(w, r, name, time.Time{}, rs)
	return true
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

// ServeHTTP serves GET and HEAD.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name != "" && name != "index.html" && !strings.HasPrefix(path.Base(name), ".") {
		if st, err := fs.Stat(h.files, name); err == nil && !st.IsDir() {
			if strings.HasPrefix(name, "assets/") {
				// Vite fingerprints asset names, so they never change.
				w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			}
			if h.serveFile(w, r, name) {
				return
			}
			w.Header().Del("Cache-Control")
		}
		if strings.HasPrefix(name, "assets/") {
			http.NotFound(w, r)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if h.index != nil && h.serveFile(w, r, "index.html") {
		return
	}
	body := h.index
	if body == nil {
		body = []byte(notBuilt)
	}
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(body))
}
