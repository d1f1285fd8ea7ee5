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
	if h.Built() {
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
