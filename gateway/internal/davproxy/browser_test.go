package davproxy

import (
	"net/http"
	"testing"
)

// TestBrowserOpensCollection (#14): a collection URL opened in a browser
// (GET with Accept: text/html, which x/net/webdav answers 405) is sent to
// the portal at that place; a WebDAV client's GET and a file are not.
func TestBrowserOpensCollection(t *testing.T) {
	e := newEnv(t, false, realSidecar)
	const html = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	noFollow := *e.srv.Client()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(path, accept string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for path, want := range map[string]string{
		"/dav/a/projects/":         "/agents/a",
		"/dav/a/projects/demo/":    "/agents/a/projects/demo",
		"/dav/a/projects/demo/src": "/agents/a/projects/demo",
		"/dav/a/global/":           "/agents/a/global",
		"/dav/a/global/skills/":    "/agents/a/global",
	} {
		resp := get(path, html)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("browser GET %s: %d Location %q, want 303 %q", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	if resp := get("/dav/a/projects/demo/", ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("client GET of a collection: %d, want the sidecar's 405", resp.StatusCode)
	}
	if resp := get("/dav/a/projects/demo/README.md", html); resp.StatusCode != http.StatusOK {
		t.Errorf("browser GET of a file: %d, want 200", resp.StatusCode)
	}
	if resp := get("/dav/a/projects/nope/", html); resp.StatusCode != http.StatusNotFound {
		t.Errorf("browser GET of a missing project: %d, want 404", resp.StatusCode)
	}
}
