package davproxy

import (
	"bytes"
	"crypto/tls"
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

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/sidecar/sidecartest"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// backend names which sidecar WebDAV server a test runs against: the real
// agent-sidecar binary (sidecar/sidecartest) or ContractSidecar, x/net/webdav
// with the wire contract added (contract_test.go). The real sidecar serves
// the gateway's /dav/{agent}/ paths only once it implements the contract's
// prefix (the sidecar side of issue #13).
type backend string

const (
	realSidecar     backend = "sidecar"
	contractSidecar backend = "contract"
)

var backends = []backend{realSidecar, contractSidecar}

// forEachBackend runs f as a subtest per backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) { f(t, b) })
	}
}

// upstream is one sidecar under test: its WebDAV URL and the host
// directories behind /projects and /global.
type upstream struct {
	base      *url.URL
	projects  string
	codexHome string
	real      *sidecartest.Sidecar
	fake      *ContractSidecar
}

// path maps "projects/x/y" or "global/AGENTS.md" to the host file.
func (u *upstream) path(rel string) string {
	if r, ok := strings.CutPrefix(rel, "global/"); ok {
		return filepath.Join(u.codexHome, filepath.FromSlash(r))
	}
	return filepath.Join(u.projects, filepath.FromSlash(strings.TrimPrefix(rel, "projects/")))
}

// writeFile writes a file into a volume, owned as the sidecar needs.
func (u *upstream) writeFile(t *testing.T, rel string, data []byte) {
	t.Helper()
	p := u.path(rel)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if u.real != nil {
		sidecartest.Chown(t, p)
	}
}

// chown hands a file the test created in a volume to the sidecar's user.
func (u *upstream) chown(t *testing.T, rel string) {
	t.Helper()
	if u.real != nil {
		sidecartest.Chown(t, u.path(rel))
	}
}

// populate lays out the tree every test starts from.
func populate(t testing.TB, projects, codexHome string) {
	t.Helper()
	for _, d := range []string{filepath.Join(projects, "demo/src"), filepath.Join(projects, "other"), filepath.Join(codexHome, "skills/tool")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(projects, "demo/README.md"), "# demo\n")
	writeFile(t, filepath.Join(projects, "demo/src/main.go"), "package main\n")
	writeFile(t, filepath.Join(projects, "demo/a b&c.txt"), "spaces\n")
	writeFile(t, filepath.Join(projects, "other/keep.txt"), "keep\n")
	writeFile(t, filepath.Join(codexHome, "AGENTS.md"), "agents\n")
	writeFile(t, filepath.Join(codexHome, "auth.json"), `{"secret":"never-shown"}`)
	writeFile(t, filepath.Join(codexHome, "skills/tool/SKILL.md"), "skill\n")
}

// newUpstream is agentID's upstream.
func newUpstream(t *testing.T, b backend, agentID string) *upstream {
	t.Helper()
	if b == contractSidecar {
		f := NewContractSidecar(t)
		return &upstream{base: f.url(t), projects: filepath.Join(f.Root, "projects"), codexHome: filepath.Join(f.Root, "global"), fake: f}
	}
	base := proctest.TempDir(t, "davproxy-test-")
	projects, codexHome := filepath.Join(base, "projects"), filepath.Join(base, "codex-home")
	populate(t, projects, codexHome)
	s := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, CodexHome: codexHome, AgentID: agentID})
	u, err := url.Parse(s.DavURL)
	if err != nil {
		t.Fatal(err)
	}
	return &upstream{base: u, projects: s.ProjectsDir, codexHome: s.CodexHome, real: s}
}

func writeFile(t testing.TB, p, s string) {
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
	a, b      *upstream
	downAddr  string
	reg       *prometheus.Registry
	mu        sync.Mutex
	mutations []Mutation
}

func newEnv(t *testing.T, writable bool, be backend) *env {
	t.Helper()
	e := &env{a: newUpstream(t, be, "a"), b: newUpstream(t, be, "b"), reg: prometheus.NewRegistry()}
	downURL := &url.URL{Scheme: "http", Host: refusingAddr(t)}
	e.downAddr = downURL.Host
	agents := map[string]*url.URL{"a": e.a.base, "b": e.b.base, "nodav": nil, "down": downURL}
	h, err := New(Options{
		Agents: func(id string) (*url.URL, bool) {
			u, ok := agents[id]
			return u, ok
		},
		AgentIDs: func() []string { return []string{"down", "b", "a", "nodav"} },
		// A real sidecar serves only mutual TLS, as the gateway reaches it.
		TLS: func(id string) *tls.Config {
			if up := map[string]*upstream{"a": e.a, "b": e.b}[id]; up != nil && up.real != nil {
				return up.real.ClientTLS(t, pki.ProtoHTTP)
			}
			return nil
		},
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
	return []string{e.a.base.Host, e.b.base.Host, e.downAddr, "fake-sidecar", "never-shown"}
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

func readAll(t *testing.T, r io.ReadCloser) string {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// refusingAddr returns a loopback address that refuses connections for the
// whole test: a socket bound to the port but never listening answers every
// SYN with a reset, and holding it keeps any other listener (such as the
// next httptest server) from taking the port, as a closed port would allow.
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
}
