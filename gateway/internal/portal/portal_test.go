package portal

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func get(h http.Handler, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w
}

func TestBuiltPortal(t *testing.T) {
	h := NewFS(fstest.MapFS{
		"index.html":       {Data: []byte("<html>app</html>")},
		"assets/app-1.js":  {Data: []byte("console.log(1)")},
		"assets/app-1.css": {Data: []byte("body{}")},
	})
	for path, want := range map[string]string{
		"/": "app", "/index.html": "app", "/agents/codex-a/projects/demo": "app", "/agents/x/file.md": "app",
		"/assets/app-1.js": "console.log(1)",
	} {
		w := get(h, path)
		if w.Code != 200 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d %q", path, w.Code, w.Body.String())
		}
	}
	if w := get(h, "/assets/app-1.js"); !strings.Contains(w.Header().Get("Cache-Control"), "immutable") || !strings.Contains(w.Header().Get("Content-Type"), "javascript") {
		t.Errorf("asset headers: %v", w.Header())
	}
	if w := get(h, "/"); w.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("index Cache-Control %q", w.Header().Get("Cache-Control"))
	}
	if w := get(h, "/assets/missing.js"); w.Code != 404 {
		t.Errorf("missing asset: %d", w.Code)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", w.Code)
	}
}

func TestNotBuilt(t *testing.T) {
	h := NewFS(fstest.MapFS{".keep": {}})
	if h.index != nil {
		t.Error("Built with no index.html")
	}
	w := get(h, "/")
	if w.Code != 200 || !strings.Contains(w.Body.String(), "make build") {
		t.Errorf("%d %q", w.Code, w.Body.String())
	}
	if w := get(h, "/.keep"); strings.Contains(w.Body.String(), "keep") && w.Code == 200 && !strings.Contains(w.Body.String(), "make build") {
		t.Error("dot-file served")
	}
}

// The embedded dist always opens (it holds at least .keep).
func TestEmbedded(t *testing.T) {
	if w := get(New(), "/"); w.Code != 200 {
		t.Errorf("embedded: %d", w.Code)
	}
}

// Precompressed files (#14): the encoded bytes for clients that accept them,
// with Content-Encoding and Vary; the plain file for the others.
func TestPrecompressed(t *testing.T) {
	h := NewFS(fstest.MapFS{
		"index.html":         {Data: []byte("<html>app</html>")},
		"index.html.gz":      {Data: []byte("GZ-INDEX")},
		"assets/app-1.js":    {Data: []byte("console.log(1)")},
		"assets/app-1.js.gz": {Data: []byte("GZ-JS")},
		"assets/app-1.js.br": {Data: []byte("BR-JS")},
		"assets/logo-1.png":  {Data: []byte("PNG")},
	})
	for _, tc := range []struct {
		path, accept, body, encoding, vary, cache string
	}{
		{"/assets/app-1.js", "gzip, deflate, br", "BR-JS", "br", "Accept-Encoding", "public, max-age=31536000, immutable"},
		{"/assets/app-1.js", "gzip", "GZ-JS", "gzip", "Accept-Encoding", "public, max-age=31536000, immutable"},
		{"/assets/app-1.js", "br;q=0, gzip;q=0.5", "GZ-JS", "gzip", "Accept-Encoding", "public, max-age=31536000, immutable"},
		{"/assets/app-1.js", "", "console.log(1)", "", "Accept-Encoding", "public, max-age=31536000, immutable"},
		{"/assets/app-1.js", "gzip;q=0, *", "BR-JS", "br", "Accept-Encoding", "public, max-age=31536000, immutable"},
		{"/assets/app-1.js", "identity", "console.log(1)", "", "Accept-Encoding", "public, max-age=31536000, immutable"},
		{"/assets/logo-1.png", "gzip", "PNG", "", "", "public, max-age=31536000, immutable"},
		{"/", "gzip", "GZ-INDEX", "gzip", "Accept-Encoding", "no-cache"},
		{"/agents/codex-a", "gzip", "GZ-INDEX", "gzip", "Accept-Encoding", "no-cache"},
		{"/", "", "<html>app</html>", "", "Accept-Encoding", "no-cache"},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.accept != "" {
			req.Header.Set("Accept-Encoding", tc.accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		hd := w.Header()
		if w.Code != 200 || w.Body.String() != tc.body || hd.Get("Content-Encoding") != tc.encoding || hd.Get("Vary") != tc.vary || hd.Get("Cache-Control") != tc.cache {
			t.Errorf("%s (Accept-Encoding %q): %d %q encoding %q vary %q cache %q", tc.path, tc.accept, w.Code, w.Body.String(), hd.Get("Content-Encoding"), hd.Get("Vary"), hd.Get("Cache-Control"))
		}
		if strings.HasSuffix(tc.path, ".js") && !strings.Contains(hd.Get("Content-Type"), "javascript") {
			t.Errorf("%s: Content-Type %q", tc.path, hd.Get("Content-Type"))
		}
		if (tc.path == "/" || !strings.Contains(tc.path, ".")) && !strings.HasPrefix(hd.Get("Content-Type"), "text/html") {
			t.Errorf("%s: Content-Type %q", tc.path, hd.Get("Content-Type"))
		}
	}
}
