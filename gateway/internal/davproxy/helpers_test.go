package davproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/webdav"
)

// fakeSidecar stands in for the sidecar's WebDAV server: x/net/webdav over
// a directory holding projects/ and global/, plus what x/net/webdav lacks and
// the real sidecar does (If-Match / If-None-Match on writes), plus a few
// deliberately leaky headers (Server, an absolute Location naming its own
// address) that the proxy must hide.
type fakeSidecar struct {
	srv  *httptest.Server
	root string
	mu   sync.Mutex
	seen []http.Header // request headers received
}

func newFakeSidecar(t *testing.T) *fakeSidecar {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"projects/demo/src", "projects/other", "global/skills/tool"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "projects/demo/README.md"), "# demo\n")
	writeFile(t, filepath.Join(root, "projects/demo/src/main.go"), "package main\n")
	writeFile(t, filepath.Join(root, "projects/demo/a b&c.txt"), "spaces\n")
	writeFile(t, filepath.Join(root, "global/AGENTS.md"), "agents\n")
	writeFile(t, filepath.Join(root, "global/skills/tool/SKILL.md"), "skill\n")
	fs := &fakeSidecar{root: root}
	dav := &webdav.Handler{FileSystem: webdav.Dir(root), LockSystem: webdav.NewMemLS()}
	fs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		fs.seen = append(fs.seen, r.Header.Clone())
		fs.mu.Unlock()
		self := "http://" + r.Host
		w.Header().Set("Server", "fake-sidecar "+self)
		w.Header().Set("X-Upstream-Debug", "served by "+self)
		w.Header().Set("X-Request-ID", "sidecar-made-"+r.Header.Get("X-Request-ID"))
		if r.URL.Path == "/leak" {
			http.Error(w, "boom at "+self, http.StatusInternalServerError)
			return
		}
		if status := checkConditions(root, r); status != 0 {
			http.Error(w, http.StatusText(status), status)
			return
		}
		if r.Method == http.MethodPut || r.Method == "MKCOL" {
			w.Header().Set("Location", self+r.URL.EscapedPath())
		}
		dav.ServeHTTP(w, r)
	}))
	t.Cleanup(fs.srv.Close)
	return fs
}

// checkConditions applies If-Match / If-None-Match like the real sidecar.
func checkConditions(root string, r *http.Request) int {
	switch r.Method {
	case http.MethodPut, http.MethodDelete, "MOVE", "COPY":
	default:
		return 0
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(r.URL.Path)))
	exists := err == nil
	etag := ""
	if exists {
		etag = fmt.Sprintf(`"%x%x"`, fi.ModTime().UnixNano(), fi.Size())
	}
	if im := r.Header.Get("If-Match"); im != "" {
		if !exists || (im != "*" && im != etag) {
			return http.StatusPreconditionFailed
		}
	}
	if r.Header.Get("If-None-Match") == "*" && exists {
		return http.StatusPreconditionFailed
	}
	return 0
}

func (f *fakeSidecar) url(t *testing.T) *url.URL {
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (f *fakeSidecar) lastHeaders() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		return nil
	}
	return f.seen[len(f.seen)-1]
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// env is a gateway-like server with the handler at /dav/ over two sidecars
// (agents "a" and "b"), an agent without a WebDAV endpoint ("nodav") and
// one whose sidecar is down ("down").
type env struct {
	srv       *httptest.Server
	a, b      *fakeSidecar
	downAddr  string
	reg       *prometheus.Registry
	mu        sync.Mutex
	mutations []Mutation
}

func newEnv(t *testing.T, writable bool) *env {
	t.Helper()
	e := &env{a: newFakeSidecar(t), b: newFakeSidecar(t), reg: prometheus.NewRegistry()}
	down := httptest.NewServer(http.NotFoundHandler())
	downURL, _ := url.Parse(down.URL)
	down.Close()
	e.downAddr = downURL.Host
	agents := map[string]*url.URL{"a": e.a.url(t), "b": e.b.url(t), "nodav": nil, "down": downURL}
	h, err := New(Options{
		Agents: func(id string) (*url.URL, bool) {
			u, ok := agents[id]
			return u, ok
		},
		AgentIDs:  func() []string { return []string{"down", "b", "a", "nodav"} },
		Writable:  writable,
		Operator:  func(*http.Request) string { return "alice" },
		RequestID: func(r *http.Request) string { return "rid-" + r.Method },
		OnMutation: func(_ *http.Request, m Mutation) {
			e.mu.Lock()
			e.mutations = append(e.mutations, m)
			e.mu.Unlock()
		},
		Logger:     hclog.NewNullLogger(),
		Registerer: e.reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	return e
}

// upstreamNames are strings that must never reach a client.
func (e *env) upstreamNames() []string {
	return []string{e.a.srv.Listener.Addr().String(), e.b.srv.Listener.Addr().String(), e.downAddr, "fake-sidecar"}
}

type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request and checks that no upstream name appears in the
// response's status line, headers or body.
func (e *env) do(t *testing.T, method, path string, body io.Reader, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		v := strings.ReplaceAll(hdr[i+1], "{host}", req.Host)
		req.Header.Set(hdr[i], v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: string(b)}
	e.assertNoLeak(t, method+" "+path, r)
	return r
}

func (e *env) assertNoLeak(t *testing.T, what string, r response) {
	t.Helper()
	var all bytes.Buffer
	for k, vs := range r.header {
		fmt.Fprintf(&all, "%s: %s\n", k, strings.Join(vs, ", "))
	}
	all.WriteString(r.body)
	for _, n := range e.upstreamNames() {
		if strings.Contains(all.String(), n) {
			t.Errorf("%s: response names the upstream %q:\n%s", what, n, all.String())
		}
	}
}

func (e *env) takeMutations() []Mutation {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.mutations
	e.mutations = nil
	return m
}

func withState(ctx context.Context, st *state) context.Context {
	return context.WithValue(ctx, stateKey{}, st)
}

func nopLogger() hclog.Logger { return hclog.NewNullLogger() }

func mustMetrics(t *testing.T) *metrics {
	t.Helper()
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readAll(t *testing.T, r io.ReadCloser) string {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
