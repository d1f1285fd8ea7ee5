package dav_test

// Tests of (*FS).WebDAV (issue 2, item 6): the webdav.FileSystem driven
// through a real golang.org/x/net/webdav.Handler on a 127.0.0.1:0 listener
// with a real http.Client, plus direct calls where the HTTP handler hides
// the error (x/net/webdav maps every non-"not exist" error to 404/405).
// Every helper starts with "wd".

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/sidecar/internal/dav"
)

const (
	wdReadme  = "# demo\nhello, webdav\n"
	wdMain    = "package main\n\nfunc main() {}\n"
	wdSecret  = "canary-secret-do-not-serve\n"
	wdAuth    = `{"token":"canary-auth-json"}`
	wdConfig  = "model = \"canary-config-toml\"\n"
	wdAgents  = "# agents\n"
	wdSkill   = "skill body\n"
	wdOtherRd = "other project\n"
)

// wdEnv is one FS over a temp tree, served by x/net/webdav on loopback.
type wdEnv struct {
	t        *testing.T
	base     string
	projects string
	codex    string
	outside  string
	fs       *davfs.FS
	dav      webdav.FileSystem
	url      string
	client   *http.Client

	mu     sync.Mutex
	logged map[string]error // "METHOD /path" -> the handler's error
}

// wdLayout builds:
//
//	outside/secret.txt                      canary outside every root
//	projects/demo/README.md, src/main.go    a normal project
//	projects/demo/link.txt => ../../outside/secret.txt
//	projects/demo/linkdir => ../../outside
//	projects/demo/node_modules/x.js, .git/config   denylisted
//	projects/other/README.md                second project
//	projects/linked => ../outside           symlinked "project"
//	projects/node_modules/                  denylisted "project"
//	codex/skills/s1/SKILL.md, codex/AGENTS.md
//	codex/auth.json, codex/config.toml      CODEX_HOME secrets
func wdLayout(t *testing.T, base string) {
	t.Helper()
	files := map[string]string{
		"outside/secret.txt":              wdSecret,
		"projects/demo/README.md":         wdReadme,
		"projects/demo/src/main.go":       wdMain,
		"projects/demo/node_modules/x.js": wdSecret,
		"projects/demo/.git/config":       wdSecret,
		"projects/other/README.md":        wdOtherRd,
		"projects/node_modules/x.js":      wdSecret,
		"codex/skills/s1/SKILL.md":        wdSkill,
		"codex/AGENTS.md":                 wdAgents,
		"codex/auth.json":                 wdAuth,
		"codex/config.toml":               wdConfig,
	}
	for rel, content := range files {
		p := filepath.Join(base, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"projects/demo/link.txt": "../../outside/secret.txt",
		"projects/demo/linkdir":  "../../outside",
		"projects/linked":        "../outside",
	}
	for rel, target := range links {
		if err := os.Symlink(target, filepath.Join(base, filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
	}
}

func wdSetup(t *testing.T) *wdEnv {
	t.Helper()
	base := t.TempDir()
	wdLayout(t, base)
	e := &wdEnv{
		t:        t,
		base:     base,
		projects: filepath.Join(base, "projects"),
		codex:    filepath.Join(base, "codex"),
		outside:  filepath.Join(base, "outside"),
		logged:   map[string]error{},
	}
	fsys, err := davfs.Open(davfs.Config{
		ProjectsRoot:  e.projects,
		CodexHome:     e.codex,
		MaxUploadSize: 4 << 20,
		DeniedNames:   []string{".git", "node_modules"},
	})
	if err != nil {
		t.Fatalf("davfs.Open: %v", err)
	}
	t.Cleanup(func() { fsys.Close() })
	e.fs = fsys
	e.dav = dav.NewFileSystem(fsys, nil, dav.RequestState{})
	ls := webdav.NewMemLS()
	h := func(st dav.RequestState) http.Handler {
		return &webdav.Handler{
			FileSystem: dav.NewFileSystem(fsys, nil, st),
			LockSystem: ls,
			Logger: func(r *http.Request, err error) {
				e.mu.Lock()
				e.logged[r.Method+" "+r.URL.Path] = err
				e.mu.Unlock()
			},
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(wdPreconditions(h))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	e.url = srv.URL
	e.client = srv.Client()
	e.client.Timeout = 30 * time.Second
	return e
}

// wdPreconditions is the thin wrapper a sidecar puts in front of
// x/net/webdav: one FileSystem per request, with If-Match /
// If-None-Match: * as the precondition davfs checks at commit time, aimed
// at the request's own resource.
func wdPreconditions(next func(dav.RequestState) http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p davfs.Precondition
		set := false
		if v := r.Header.Get("If-Match"); v != "" {
			p.IfMatch, set = strings.Trim(v, `"`), true
		}
		if r.Header.Get("If-None-Match") == "*" {
			p.IfNoneMatch, set = true, true
		}
		var st dav.RequestState
		if set {
			st = wdPreFor(r.URL.Path, p)
		}
		if r.Method == "MOVE" {
			// Refuse, before x/net/webdav deletes an Overwrite: T
			// destination, a move across workspaces or of a workspace root.
			if u, err := url.Parse(r.Header.Get("Destination")); err == nil {
				sws, src, sok := dav.WebDAVWorkspace(r.URL.Path)
				dws, dst, dok := dav.WebDAVWorkspace(u.Path)
				if !sok || !dok || sws != dws || src == "" || dst == "" {
					http.Error(w, "Forbidden", http.StatusForbidden)
					return
				}
			}
		}
		next(st).ServeHTTP(w, r)
	})
}

// wdPre is a request whose every written name has the precondition p.
func wdPre(p davfs.Precondition) dav.RequestState {
	return dav.RequestState{Preconditions: func(string) davfs.Precondition { return p }}
}

// wdPreFor is a request in which only the WebDAV name target (cleaned as
// the adapter cleans it: no empty segment, no trailing slash) has the
// precondition p.
func wdPreFor(target string, p davfs.Precondition) dav.RequestState {
	target = "/" + strings.Join(strings.FieldsFunc(target, func(r rune) bool { return r == '/' }), "/")
	return dav.RequestState{Preconditions: func(name string) davfs.Precondition {
		if name != target {
			return davfs.Precondition{}
		}
		return p
	}}
}

func wdDo(t *testing.T, e *wdEnv, method, p string, body []byte, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+p, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, p, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, p, err)
	}
	return resp, b
}

// wdLogged is the error x/net/webdav reported for a request (nil if none).
func wdLogged(e *wdEnv, method, p string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.mu.Lock()
		err, ok := e.logged[method+" "+p]
		e.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type wdMultistatus struct {
	Responses []struct {
		Href      string `xml:"href"`
		Propstats []struct {
			Prop struct {
				ETag         string `xml:"getetag"`
				ContentType  string `xml:"getcontenttype"`
				Length       string `xml:"getcontentlength"`
				ResourceType struct {
					Collection *struct{} `xml:"collection"`
				} `xml:"resourcetype"`
			} `xml:"prop"`
			Status string `xml:"status"`
		} `xml:"propstat"`
	} `xml:"response"`
}

type wdProp struct {
	etag, ctype, length string
	dir                 bool
}

// wdPropfind runs PROPFIND (allprop) and returns the props by href.
func wdPropfind(t *testing.T, e *wdEnv, p, depth string) (int, map[string]wdProp) {
	t.Helper()
	resp, body := wdDo(t, e, "PROPFIND", p, nil, map[string]string{"Depth": depth})
	if resp.StatusCode != http.StatusMultiStatus {
		return resp.StatusCode, nil
	}
	var ms wdMultistatus
	if err := xml.Unmarshal(body, &ms); err != nil {
		t.Fatalf("PROPFIND %s: %v\n%s", p, err, body)
	}
	out := map[string]wdProp{}
	for _, r := range ms.Responses {
		var pr wdProp
		for _, ps := range r.Propstats {
			if !strings.Contains(ps.Status, "200") {
				continue
			}
			pr.etag, pr.ctype, pr.length = ps.Prop.ETag, ps.Prop.ContentType, ps.Prop.Length
			pr.dir = ps.Prop.ResourceType.Collection != nil
		}
		out[r.Href] = pr
	}
	return resp.StatusCode, out
}

func wdKeys(m map[string]wdProp) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func wdProject(name string) davfs.Workspace {
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
}

var wdGlobal = davfs.Workspace{Scope: davfs.ScopeGlobal}

func wdRev(t *testing.T, e *wdEnv, ws davfs.Workspace, p string) string {
	t.Helper()
	en, err := e.fs.Stat(context.Background(), ws, p)
	if err != nil {
		t.Fatalf("Stat(%v, %q): %v", ws, p, err)
	}
	return en.Revision
}

func wdRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wdNoTemp asserts dir holds exactly the names want (no davfs temp file).
func wdNoTemp(t *testing.T, dir string, want ...string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range des {
		got = append(got, d.Name())
	}
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %v; want %v", dir, got, want)
	}
}

func wdCanariesIntact(t *testing.T, e *wdEnv) {
	t.Helper()
	for p, want := range map[string]string{
		filepath.Join(e.outside, "secret.txt"): wdSecret,
		filepath.Join(e.codex, "auth.json"):    wdAuth,
		filepath.Join(e.codex, "config.toml"):  wdConfig,
	} {
		if got := wdRead(t, p); got != want {
			t.Errorf("canary %s changed", p)
		}
	}
}

func wdNoCanary(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, c := range []string{"canary-secret", "canary-auth-json", "canary-config-toml"} {
		if bytes.Contains(b, []byte(c)) {
			t.Errorf("%s served canary content %q", what, c)
		}
	}
}

func TestWebDAVPropfindNamespaces(t *testing.T) {
	e := wdSetup(t)
	tests := []struct {
		path string
		want []string
	}{
		{"/", []string{"/", "/global/", "/projects/"}},
		{"/projects/", []string{"/projects/", "/projects/demo/", "/projects/other/"}},
		{"/projects/demo/", []string{"/projects/demo/", "/projects/demo/README.md", "/projects/demo/src/"}},
		{"/global/", []string{"/global/", "/global/AGENTS.md", "/global/skills/"}},
		{"/global/skills/", []string{"/global/skills/", "/global/skills/s1/"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, props := wdPropfind(t, e, tt.path, "1")
			if status != http.StatusMultiStatus {
				t.Fatalf("PROPFIND %s = %d", tt.path, status)
			}
			if got := wdKeys(props); strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("PROPFIND %s lists %v; want %v", tt.path, got, tt.want)
			}
			for href, p := range props {
				// x/net/webdav reports getetag for files only.
				if !p.dir && (p.etag == "" || !strings.HasPrefix(p.etag, `"`) || !strings.HasSuffix(p.etag, `"`)) {
					t.Errorf("%s: ETag %q is not a strong quoted tag", href, p.etag)
				}
				if strings.HasSuffix(href, "/") != p.dir {
					t.Errorf("%s: collection=%v", href, p.dir)
				}
			}
		})
	}

	// The ETag in a listing is the revision, as on every other surface.
	_, props := wdPropfind(t, e, "/projects/demo/", "1")
	if got, want := props["/projects/demo/README.md"].etag, `"`+wdRev(t, e, wdProject("demo"), "README.md")+`"`; got != want {
		t.Errorf("README.md getetag = %s; want %s", got, want)
	}
	if ct := props["/projects/demo/README.md"].ctype; !strings.HasPrefix(ct, "text/") {
		t.Errorf("README.md getcontenttype = %q", ct)
	}

	// Directory ETags (not in PROPFIND, but ETager for a wrapper that
	// honours If-Match on collections): a real directory's is its revision;
	// virtual ones are stable and follow their children.
	if got, want := wdETag(t, e, "/projects/demo/src"), `"`+wdRev(t, e, wdProject("demo"), "src")+`"`; got != want {
		t.Errorf("src/ ETag = %s; want %s", got, want)
	}
	if got, want := wdETag(t, e, "/projects/demo"), `"`+wdRev(t, e, wdProject("demo"), "")+`"`; got != want {
		t.Errorf("project root ETag = %s; want %s", got, want)
	}
	if a, b := wdETag(t, e, "/"), wdETag(t, e, "/"); a != b {
		t.Errorf("/ ETag not stable: %s then %s", a, b)
	}
	for _, p := range []string{"/projects", "/global"} {
		a, b := wdETag(t, e, p), wdETag(t, e, p)
		if a != b {
			t.Errorf("%s ETag not stable: %s then %s", p, a, b)
		}
		var err error
		if p == "/projects" {
			err = os.Mkdir(filepath.Join(e.projects, "third"), 0o755)
		} else {
			err = os.Remove(filepath.Join(e.codex, "AGENTS.md"))
		}
		if err != nil {
			t.Fatal(err)
		}
		if c := wdETag(t, e, p); c == a {
			t.Errorf("%s ETag did not change with its children", p)
		}
	}
	if _, props := wdPropfind(t, e, "/global/", "1"); strings.Join(wdKeys(props), " ") != "/global/ /global/skills/" {
		t.Errorf("/global/ without AGENTS.md lists %v", wdKeys(props))
	}
}

func wdETag(t *testing.T, e *wdEnv, name string) string {
	t.Helper()
	fi, err := e.dav.Stat(context.Background(), name)
	if err != nil {
		t.Fatalf("Stat(%s): %v", name, err)
	}
	tag, err := fi.(webdav.ETager).ETag(context.Background())
	if err != nil || !strings.HasPrefix(tag, `"`) || !strings.HasSuffix(tag, `"`) || len(tag) < 3 {
		t.Fatalf("ETag(%s) = %q, %v", name, tag, err)
	}
	return tag
}

func TestWebDAVHiddenNamesNeverListedOrServed(t *testing.T) {
	e := wdSetup(t)
	// Depth 1 listings: no symlink, no denylisted name, no CODEX_HOME secret.
	for _, p := range []string{"/", "/projects/", "/projects/demo/", "/global/"} {
		status, props := wdPropfind(t, e, p, "1")
		if status != http.StatusMultiStatus {
			t.Fatalf("PROPFIND %s = %d", p, status)
		}
		for href := range props {
			for _, bad := range []string{"link.txt", "linkdir", "linked", "node_modules", ".git", "auth.json", "config.toml"} {
				if strings.Contains(href, bad) {
					t.Errorf("PROPFIND %s lists %s", p, href)
				}
			}
		}
	}
	refused := []string{
		"/global/auth.json",
		"/global/config.toml",
		"/global/AUTH.JSON",
		"/global/skills/../auth.json",
		"/projects/demo/link.txt",
		"/projects/demo/linkdir/secret.txt",
		"/projects/linked/secret.txt",
		"/projects/demo/node_modules/x.js",
		"/projects/demo/.git/config",
		"/projects/node_modules/x.js",
		"/projects/demo/../../outside/secret.txt",
		"/outside/secret.txt",
	}
	for _, p := range refused {
		t.Run("GET"+p, func(t *testing.T) {
			resp, body := wdDo(t, e, "GET", p, nil, nil)
			if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s = %d; want 404 or 403", p, resp.StatusCode)
			}
			wdNoCanary(t, "GET "+p, body)
			if status, _ := wdPropfind(t, e, p, "0"); status == http.StatusMultiStatus {
				t.Errorf("PROPFIND %s = 207", p)
			}
			resp, _ = wdDo(t, e, "PUT", p, []byte("pwned\n"), nil)
			if resp.StatusCode < 400 {
				t.Errorf("PUT %s = %d", p, resp.StatusCode)
			}
			resp, _ = wdDo(t, e, "DELETE", p, nil, nil)
			if resp.StatusCode < 400 {
				t.Errorf("DELETE %s = %d", p, resp.StatusCode)
			}
		})
	}
	wdCanariesIntact(t, e)
	if _, err := os.Lstat(filepath.Join(e.projects, "demo", "link.txt")); err != nil {
		t.Errorf("symlink removed: %v", err)
	}
}

func TestWebDAVGetETagAndRange(t *testing.T) {
	e := wdSetup(t)
	resp, body := wdDo(t, e, "GET", "/projects/demo/README.md", nil, nil)
	if resp.StatusCode != http.StatusOK || string(body) != wdReadme {
		t.Fatalf("GET = %d %q", resp.StatusCode, body)
	}
	rev := wdRev(t, e, wdProject("demo"), "README.md")
	if got := resp.Header.Get("ETag"); got != `"`+rev+`"` {
		t.Errorf("ETag = %s; want %q", got, rev)
	}

	// Conditional GET: the handler's http.ServeContent sees our ETag.
	resp, _ = wdDo(t, e, "GET", "/projects/demo/README.md", nil, map[string]string{"If-None-Match": `"` + rev + `"`})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET If-None-Match current = %d; want 304", resp.StatusCode)
	}

	// Range reads of a file bigger than the editable limit (1 MiB).
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>11)
	}
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ from, to int }{{0, 0}, {2, 5}, {1 << 20, 1<<20 + 4095}, {len(big) - 10, len(big) - 1}} {
		resp, body := wdDo(t, e, "GET", "/projects/demo/big.bin", nil, map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", r.from, r.to)})
		if resp.StatusCode != http.StatusPartialContent {
			t.Errorf("Range %d-%d = %d", r.from, r.to, resp.StatusCode)
			continue
		}
		if !bytes.Equal(body, big[r.from:r.to+1]) {
			t.Errorf("Range %d-%d returned wrong bytes", r.from, r.to)
		}
	}
	resp, body = wdDo(t, e, "GET", "/projects/demo/big.bin", nil, nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, big) {
		t.Errorf("GET big.bin = %d, %d bytes", resp.StatusCode, len(body))
	}
	if got, want := resp.Header.Get("ETag"), `"`+wdRev(t, e, wdProject("demo"), "big.bin")+`"`; got != want {
		t.Errorf("big.bin ETag = %s; want %s", got, want)
	}

	// Global files and directories.
	resp, body = wdDo(t, e, "GET", "/global/AGENTS.md", nil, nil)
	if resp.StatusCode != http.StatusOK || string(body) != wdAgents {
		t.Errorf("GET /global/AGENTS.md = %d %q", resp.StatusCode, body)
	}
	if got, want := resp.Header.Get("ETag"), `"`+wdRev(t, e, wdGlobal, "AGENTS.md")+`"`; got != want {
		t.Errorf("AGENTS.md ETag = %s; want %s", got, want)
	}
	resp, body = wdDo(t, e, "GET", "/global/skills/s1/SKILL.md", nil, nil)
	if resp.StatusCode != http.StatusOK || string(body) != wdSkill {
		t.Errorf("GET skill = %d %q", resp.StatusCode, body)
	}
	resp, _ = wdDo(t, e, "GET", "/projects/demo/", nil, nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET a directory = %d; want 405", resp.StatusCode)
	}
	resp, _ = wdDo(t, e, "GET", "/projects/demo/missing.txt", nil, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET missing = %d; want 404", resp.StatusCode)
	}
}

func TestWebDAVPut(t *testing.T) {
	e := wdSetup(t)
	demo := filepath.Join(e.projects, "demo")

	// Create.
	resp, _ := wdDo(t, e, "PUT", "/projects/demo/new.txt", []byte("v1\n"), nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT new = %d", resp.StatusCode)
	}
	if got := wdRead(t, filepath.Join(demo, "new.txt")); got != "v1\n" {
		t.Fatalf("new.txt = %q", got)
	}
	rev1 := wdRev(t, e, wdProject("demo"), "new.txt")
	if got := resp.Header.Get("ETag"); got != `"`+rev1+`"` {
		t.Errorf("PUT ETag = %s; want the new revision %q", got, rev1)
	}

	// Overwrite, unconditionally and with the current If-Match.
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/new.txt", []byte("v2\n"), nil)
	if resp.StatusCode >= 300 || wdRead(t, filepath.Join(demo, "new.txt")) != "v2\n" {
		t.Fatalf("PUT overwrite = %d", resp.StatusCode)
	}
	rev2 := wdRev(t, e, wdProject("demo"), "new.txt")
	if rev2 == rev1 {
		t.Errorf("revision did not change on overwrite")
	}
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/new.txt", []byte("v3\n"), map[string]string{"If-Match": `"` + rev2 + `"`})
	if resp.StatusCode >= 300 || wdRead(t, filepath.Join(demo, "new.txt")) != "v3\n" {
		t.Fatalf("PUT If-Match current = %d", resp.StatusCode)
	}

	// A stale If-Match is refused with REVISION_MISMATCH and writes nothing.
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/new.txt", []byte("stale\n"), map[string]string{"If-Match": `"` + rev2 + `"`})
	if resp.StatusCode < 400 {
		t.Errorf("PUT stale If-Match = %d", resp.StatusCode)
	}
	if de, ok := dav.ErrorFromWebDAV(wdLogged(e, "PUT", "/projects/demo/new.txt")); !ok || de.Reason != davfs.ReasonRevisionMismatch {
		t.Errorf("PUT stale If-Match: error %v; want REVISION_MISMATCH", wdLogged(e, "PUT", "/projects/demo/new.txt"))
	}
	if got := wdRead(t, filepath.Join(demo, "new.txt")); got != "v3\n" {
		t.Errorf("stale PUT changed the file to %q", got)
	}

	// If-None-Match: * creates only.
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/README.md", []byte("clobber\n"), map[string]string{"If-None-Match": "*"})
	if resp.StatusCode < 400 || wdRead(t, filepath.Join(demo, "README.md")) != wdReadme {
		t.Errorf("PUT If-None-Match:* over an existing file = %d", resp.StatusCode)
	}
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/fresh.txt", []byte("fresh\n"), map[string]string{"If-None-Match": "*"})
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("PUT If-None-Match:* new = %d", resp.StatusCode)
	}

	// Missing parent -> 409; into a directory name -> refused; Global rules.
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/nodir/x.txt", []byte("x"), nil)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("PUT with a missing parent = %d; want 409", resp.StatusCode)
	}
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/src", []byte("x"), nil)
	if resp.StatusCode < 400 {
		t.Errorf("PUT onto a directory = %d", resp.StatusCode)
	}
	resp, _ = wdDo(t, e, "PUT", "/global/skills/s1/SKILL.md", []byte("new skill\n"), nil)
	if resp.StatusCode >= 300 || wdRead(t, filepath.Join(e.codex, "skills", "s1", "SKILL.md")) != "new skill\n" {
		t.Errorf("PUT skill = %d", resp.StatusCode)
	}
	resp, _ = wdDo(t, e, "PUT", "/global/notes.txt", []byte("x"), nil)
	if resp.StatusCode < 400 {
		t.Errorf("PUT /global/notes.txt = %d", resp.StatusCode)
	}
	if _, err := os.Lstat(filepath.Join(e.codex, "notes.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("PUT /global/notes.txt created a file in CODEX_HOME")
	}
	resp, _ = wdDo(t, e, "PUT", "/projects/newproj", []byte("x"), nil)
	if resp.StatusCode < 400 {
		t.Errorf("PUT /projects/newproj = %d", resp.StatusCode)
	}

	// A multi-MiB body streams through (under maxUploadSize, over the
	// editable limit) and reads back byte for byte.
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/big.bin", big, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("PUT 3 MiB = %d", resp.StatusCode)
	}
	if resp, body := wdDo(t, e, "GET", "/projects/demo/big.bin", nil, nil); !bytes.Equal(body, big) {
		t.Errorf("GET after PUT 3 MiB = %d, %d bytes", resp.StatusCode, len(body))
	}
	if err := os.Remove(filepath.Join(demo, "big.bin")); err != nil {
		t.Fatal(err)
	}

	// Too large: ResourceExhausted/TOO_LARGE, nothing written.
	// (Only a little over the limit, so that the server drains the unread
	// rest and the client always gets the response.)
	resp, _ = wdDo(t, e, "PUT", "/projects/demo/huge.bin", make([]byte, 4<<20+64<<10), nil)
	if resp.StatusCode < 400 {
		t.Errorf("PUT over maxUploadSize = %d", resp.StatusCode)
	}
	if de, ok := dav.ErrorFromWebDAV(wdLogged(e, "PUT", "/projects/demo/huge.bin")); !ok || de.Reason != davfs.ReasonTooLarge {
		t.Errorf("PUT too large: error %v; want TOO_LARGE", wdLogged(e, "PUT", "/projects/demo/huge.bin"))
	}
	wdNoTemp(t, demo, ".git", "README.md", "fresh.txt", "link.txt", "linkdir", "new.txt", "node_modules", "src")
	wdCanariesIntact(t, e)
}

// TestWebDAVPutAbortedCommitsNothing cuts a PUT body short on a raw
// connection: x/net/webdav's io.Copy fails, the file's ReadFrom aborts the
// upload, and neither the target nor a temp file changes.
func TestWebDAVPutAbortedCommitsNothing(t *testing.T) {
	e := wdSetup(t)
	demo := filepath.Join(e.projects, "demo")
	for _, name := range []string{"README.md", "brand-new.txt"} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "PUT /projects/demo/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", name)
			conn.Write(bytes.Repeat([]byte("partial "), 1000))
			time.Sleep(100 * time.Millisecond)
			conn.Close()
			err = wdLogged(e, "PUT", "/projects/demo/"+name)
			if err == nil {
				t.Fatalf("aborted PUT reported no error")
			}
			if name == "README.md" && wdRead(t, filepath.Join(demo, name)) != wdReadme {
				t.Errorf("aborted PUT changed %s", name)
			}
			if name == "brand-new.txt" {
				if _, err := os.Lstat(filepath.Join(demo, name)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("aborted PUT created %s", name)
				}
			}
			wdNoTemp(t, demo, ".git", "README.md", "link.txt", "linkdir", "node_modules", "src")
		})
	}

	// The same through the FileSystem: Abort then Close commits nothing.
	ctx := context.Background()
	f, err := e.dav.OpenFile(ctx, "/projects/demo/README.md", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	a, ok := f.(dav.Aborter)
	if !ok {
		t.Fatalf("write handle %T does not implement dav.Aborter", f)
	}
	a.Abort(errors.New("client went away"))
	if err := f.Close(); err == nil {
		t.Errorf("Close after Abort = nil; want the abort cause")
	}
	if got := wdRead(t, filepath.Join(demo, "README.md")); got != wdReadme {
		t.Errorf("Abort committed %.40q", got)
	}
	wdNoTemp(t, demo, ".git", "README.md", "link.txt", "linkdir", "node_modules", "src")
}

func TestWebDAVMkcolDelete(t *testing.T) {
	e := wdSetup(t)
	demo := filepath.Join(e.projects, "demo")
	resp, _ := wdDo(t, e, "MKCOL", "/projects/demo/newdir", nil, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("MKCOL = %d", resp.StatusCode)
	}
	if fi, err := os.Lstat(filepath.Join(demo, "newdir")); err != nil || !fi.IsDir() {
		t.Fatalf("MKCOL made no directory: %v", err)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/projects/demo/newdir", http.StatusMethodNotAllowed}, // exists
		{"/projects/demo/a/b", http.StatusConflict},            // missing parent
	} {
		if resp, _ := wdDo(t, e, "MKCOL", c.path, nil, nil); resp.StatusCode != c.want {
			t.Errorf("MKCOL %s = %d; want %d", c.path, resp.StatusCode, c.want)
		}
	}
	for _, p := range []string{"/projects/newproj", "/global/newdir", "/newtop", "/projects/demo/node_modules2/../node_modules"} {
		if resp, _ := wdDo(t, e, "MKCOL", p, nil, nil); resp.StatusCode < 400 {
			t.Errorf("MKCOL %s = %d", p, resp.StatusCode)
		}
	}
	if _, err := os.Lstat(filepath.Join(e.projects, "newproj")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("MKCOL created a project")
	}
	if _, err := os.Lstat(filepath.Join(e.codex, "newdir")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("MKCOL created a directory in CODEX_HOME")
	}

	// DELETE: a stale If-Match refuses, the current one deletes.
	rev := wdRev(t, e, wdProject("demo"), "README.md")
	if err := os.WriteFile(filepath.Join(demo, "README.md"), []byte("changed by the agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, _ = wdDo(t, e, "DELETE", "/projects/demo/README.md", nil, map[string]string{"If-Match": `"` + rev + `"`})
	if resp.StatusCode < 400 {
		t.Errorf("DELETE stale If-Match = %d", resp.StatusCode)
	}
	if de, ok := dav.ErrorFromWebDAV(wdLogged(e, "DELETE", "/projects/demo/README.md")); !ok || de.Reason != davfs.ReasonRevisionMismatch {
		t.Errorf("DELETE stale: error %v; want REVISION_MISMATCH", wdLogged(e, "DELETE", "/projects/demo/README.md"))
	}
	if _, err := os.Lstat(filepath.Join(demo, "README.md")); err != nil {
		t.Fatalf("stale DELETE removed the file")
	}
	rev = wdRev(t, e, wdProject("demo"), "README.md")
	resp, _ = wdDo(t, e, "DELETE", "/projects/demo/README.md", nil, map[string]string{"If-Match": `"` + rev + `"`})
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE current If-Match = %d", resp.StatusCode)
	}
	// Unconditional, recursive.
	resp, _ = wdDo(t, e, "DELETE", "/projects/demo/src/", nil, nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE src/ = %d", resp.StatusCode)
	}
	if _, err := os.Lstat(filepath.Join(demo, "src")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("src still exists")
	}
	resp, _ = wdDo(t, e, "DELETE", "/projects/demo/src/", nil, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE missing = %d; want 404", resp.StatusCode)
	}
	for _, p := range []string{"/projects/demo/", "/projects/", "/global/", "/global/skills/", "/"} {
		if resp, _ := wdDo(t, e, "DELETE", p, nil, nil); resp.StatusCode < 400 {
			t.Errorf("DELETE %s = %d", p, resp.StatusCode)
		}
	}
	if _, err := os.Lstat(filepath.Join(demo, "newdir")); err != nil {
		t.Errorf("project content lost: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(e.codex, "skills")); err != nil || !fi.IsDir() {
		t.Errorf("skills/ lost: %v", err)
	}
	wdCanariesIntact(t, e)
}

func TestWebDAVMove(t *testing.T) {
	e := wdSetup(t)
	demo := filepath.Join(e.projects, "demo")
	move := func(src, dst string, hdr map[string]string) int {
		t.Helper()
		h := map[string]string{"Destination": e.url + dst}
		for k, v := range hdr {
			h[k] = v
		}
		resp, _ := wdDo(t, e, "MOVE", src, nil, h)
		return resp.StatusCode
	}
	if got := move("/projects/demo/README.md", "/projects/demo/src/README.md", nil); got != http.StatusCreated {
		t.Fatalf("MOVE within a project = %d", got)
	}
	if got := wdRead(t, filepath.Join(demo, "src", "README.md")); got != wdReadme {
		t.Errorf("moved content = %q", got)
	}
	if got := move("/projects/demo/src", "/projects/demo/lib", nil); got != http.StatusCreated {
		t.Errorf("MOVE a directory = %d", got)
	}
	// Stale If-Match on the source: REVISION_MISMATCH, nothing moves.
	rev := wdRev(t, e, wdProject("demo"), "lib/main.go")
	if err := os.WriteFile(filepath.Join(demo, "lib", "main.go"), []byte("package main // edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := move("/projects/demo/lib/main.go", "/projects/demo/main.go", map[string]string{"If-Match": `"` + rev + `"`}); got < 400 {
		t.Errorf("MOVE stale If-Match = %d", got)
	}
	if de, ok := dav.ErrorFromWebDAV(wdLogged(e, "MOVE", "/projects/demo/lib/main.go")); !ok || de.Reason != davfs.ReasonRevisionMismatch {
		t.Errorf("MOVE stale: %v; want REVISION_MISMATCH", wdLogged(e, "MOVE", "/projects/demo/lib/main.go"))
	}
	refused := []struct{ src, dst string }{
		{"/projects/demo/lib/main.go", "/projects/other/main.go"}, // across projects
		{"/projects/demo/lib/main.go", "/global/skills/main.go"},  // project -> Global
		{"/global/AGENTS.md", "/projects/demo/AGENTS.md"},         // Global -> project
		{"/global/skills", "/global/skills2"},                     // protected root
		{"/global/AGENTS.md", "/global/skills/AGENTS.md"},         // AGENTS.md never moves
		{"/projects/demo", "/projects/demo2"},                     // project roots
		{"/projects/demo/lib", "/projects/demo/lib/inner"},        // into itself
		{"/projects/demo/link.txt", "/projects/demo/l2.txt"},      // symlink
	}
	for _, r := range refused {
		if got := move(r.src, r.dst, nil); got < 400 {
			t.Errorf("MOVE %s -> %s = %d", r.src, r.dst, got)
		}
	}
	if got := move("/projects/demo/lib/main.go", "/projects/other/main.go", nil); got != http.StatusForbidden {
		t.Errorf("MOVE across projects = %d; want 403", got)
	}
	// Overwrite: T onto an existing file in another project: refused
	// before anything is deleted.
	if got := move("/projects/demo/lib/main.go", "/projects/other/README.md", map[string]string{"Overwrite": "T"}); got != http.StatusForbidden {
		t.Errorf("MOVE across projects with Overwrite: T = %d; want 403", got)
	}
	if got := wdRead(t, filepath.Join(e.projects, "other", "README.md")); got != wdOtherRd {
		t.Errorf("refused MOVE changed the destination")
	}
	// Within a project, Overwrite: T replaces the destination.
	if got := move("/projects/demo/lib/main.go", "/projects/demo/lib/README.md", map[string]string{"Overwrite": "T"}); got != http.StatusNoContent {
		t.Errorf("MOVE Overwrite: T within a project = %d; want 204", got)
	}
	if got := wdRead(t, filepath.Join(demo, "lib", "README.md")); !strings.Contains(got, "edited") {
		t.Errorf("MOVE Overwrite: T left %q", got)
	}
	if err := os.WriteFile(filepath.Join(demo, "lib", "main.go"), []byte("package main // edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(demo, "lib", "main.go"),
		filepath.Join(e.codex, "AGENTS.md"),
		filepath.Join(e.codex, "skills", "s1", "SKILL.md"),
		filepath.Join(demo, "link.txt"),
	} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("refused MOVE lost %s", p)
		}
	}
	for _, p := range []string{filepath.Join(e.projects, "other", "main.go"), filepath.Join(e.projects, "demo2")} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("refused MOVE created %s", p)
		}
	}
	wdCanariesIntact(t, e)
}

// TestWebDAVFileSystemContract calls the webdav.FileSystem directly: the
// error classes x/net/webdav relies on, FileInfo interfaces, Readdir counts.
func TestWebDAVFileSystemContract(t *testing.T) {
	e := wdSetup(t)
	ctx := context.Background()

	fi, err := e.dav.Stat(ctx, "/projects/demo/README.md")
	if err != nil {
		t.Fatal(err)
	}
	et, ok := fi.(webdav.ETager)
	if !ok {
		t.Fatalf("FileInfo %T is not a webdav.ETager", fi)
	}
	if tag, _ := et.ETag(ctx); tag != `"`+wdRev(t, e, wdProject("demo"), "README.md")+`"` {
		t.Errorf("ETag = %s", tag)
	}
	if ct, ok := fi.(webdav.ContentTyper); !ok {
		t.Errorf("FileInfo %T is not a webdav.ContentTyper", fi)
	} else if got, _ := ct.ContentType(ctx); !strings.HasPrefix(got, "text/") {
		t.Errorf("ContentType(README.md) = %q", got)
	}
	if fi.Name() != "README.md" || fi.IsDir() || fi.Size() != int64(len(wdReadme)) {
		t.Errorf("FileInfo = %s dir=%v size=%d", fi.Name(), fi.IsDir(), fi.Size())
	}

	// Read handle: Stat is the same FileInfo (ETag == revision); Seek, ReadAt.
	f, err := e.dav.OpenFile(ctx, "/projects/demo/README.md", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := f.Stat(); st.(webdav.ETager) == nil {
		t.Errorf("read handle Stat lacks ETag")
	}
	if _, err := f.Seek(2, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(f, b); err != nil || string(b) != wdReadme[2:6] {
		t.Errorf("Seek+Read = %q, %v", b, err)
	}
	if ra, ok := f.(io.ReaderAt); !ok {
		t.Errorf("read handle is not an io.ReaderAt")
	} else if _, err := ra.ReadAt(b, 9); err != nil || string(b) != wdReadme[9:13] {
		t.Errorf("ReadAt = %q, %v", b, err)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Errorf("Write on a read handle succeeded")
	}
	f.Close()

	// Readdir follows os.File.Readdir: count>0 pages then io.EOF.
	d, err := e.dav.OpenFile(ctx, "/projects/demo", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for {
		fis, err := d.Readdir(1)
		for _, fi := range fis {
			names = append(names, fi.Name())
		}
		if err == io.EOF {
			break
		}
		if err != nil || len(fis) != 1 {
			t.Fatalf("Readdir(1) = %d, %v", len(fis), err)
		}
	}
	if got := strings.Join(names, ","); got != "src,README.md" {
		t.Errorf("Readdir names = %s; want src,README.md (directories first)", got)
	}
	if fis, err := d.Readdir(-1); err != nil || len(fis) != 0 {
		t.Errorf("Readdir(-1) at the end = %d, %v; want 0, nil", len(fis), err)
	}
	if _, err := d.Write([]byte("x")); err == nil {
		t.Errorf("Write on a directory succeeded")
	}
	d.Close()

	// Error classes, checked the way x/net/webdav checks them.
	errCases := []struct {
		name string
		err  error
		is   func(error) bool
	}{
		{"Stat missing", wdErr(e.dav.Stat(ctx, "/projects/demo/missing")), os.IsNotExist},
		{"Stat missing project", wdErr(e.dav.Stat(ctx, "/projects/nope/x")), os.IsNotExist},
		{"Stat outside the namespaces", wdErr(e.dav.Stat(ctx, "/etc")), os.IsNotExist},
		{"Stat symlink", wdErr(e.dav.Stat(ctx, "/projects/demo/link.txt")), wdRefused},
		{"Stat CODEX_HOME secret", wdErr(e.dav.Stat(ctx, "/global/auth.json")), wdRefused},
		{"Mkdir project", e.dav.Mkdir(ctx, "/projects/newproj", 0o755), os.IsPermission},
		{"Mkdir at /", e.dav.Mkdir(ctx, "/newtop", 0o755), os.IsPermission},
		{"Mkdir existing", e.dav.Mkdir(ctx, "/projects/demo/src", 0o755), os.IsExist},
		{"Mkdir missing parent", e.dav.Mkdir(ctx, "/projects/demo/a/b", 0o755), os.IsNotExist},
		{"RemoveAll project", e.dav.RemoveAll(ctx, "/projects/demo"), os.IsPermission},
		{"RemoveAll /projects", e.dav.RemoveAll(ctx, "/projects"), os.IsPermission},
		{"Rename project", e.dav.Rename(ctx, "/projects/demo", "/projects/demo2"), os.IsPermission},
		{"Rename across projects", e.dav.Rename(ctx, "/projects/demo/README.md", "/projects/other/README2.md"), os.IsPermission},
		{"Rename across projects, existing name", e.dav.Rename(ctx, "/projects/demo/README.md", "/projects/other/README.md"), os.IsPermission},
		{"Rename Global to project", e.dav.Rename(ctx, "/global/AGENTS.md", "/projects/demo/AGENTS.md"), os.IsPermission},
		{"Rename a project again", e.dav.Rename(ctx, "/projects/demo", "/projects/demo2"), os.IsPermission},
		{"Open O_APPEND", wdErr(e.dav.OpenFile(ctx, "/projects/demo/README.md", os.O_WRONLY|os.O_APPEND, 0)), os.IsPermission},
		{"Open O_WRONLY no O_TRUNC", wdErr(e.dav.OpenFile(ctx, "/projects/demo/README.md", os.O_WRONLY, 0)), os.IsPermission},
		{"Open O_CREATE|O_EXCL existing", wdErr(e.dav.OpenFile(ctx, "/projects/demo/README.md", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)), os.IsExist},
		{"Open create, missing parent", wdErr(e.dav.OpenFile(ctx, "/projects/demo/no/x", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)), os.IsNotExist},
		{"Open create in /projects", wdErr(e.dav.OpenFile(ctx, "/projects/file", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)), os.IsPermission},
		{"dot-dot", wdErr(e.dav.Stat(ctx, "/projects/demo/../other")), func(err error) bool { return errors.Is(err, fs.ErrInvalid) }},
	}
	for _, c := range errCases {
		var pe *fs.PathError
		if !errors.As(c.err, &pe) {
			t.Errorf("%s: %T %v is not an *fs.PathError", c.name, c.err, c.err)
			continue
		}
		if !c.is(c.err) {
			t.Errorf("%s: unexpected error class: %v", c.name, c.err)
		}
		if strings.Contains(c.err.Error(), e.base) {
			t.Errorf("%s: message leaks a host path: %v", c.name, c.err)
		}
		if _, ok := dav.ErrorFromWebDAV(c.err); !ok {
			t.Errorf("%s: ErrorFromWebDAV found no *davfs.Error in %v", c.name, c.err)
		}
	}
	if got := wdRead(t, filepath.Join(e.projects, "demo", "README.md")); got != wdReadme {
		t.Errorf("refused opens changed README.md")
	}

	// O_RDWR without O_TRUNC (x/net/webdav's PROPPATCH) opens read-only.
	f, err = e.dav.OpenFile(ctx, "/projects/demo/README.md", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("O_RDWR open: %v", err)
	}
	if _, err := f.Write([]byte("x")); !os.IsPermission(err) {
		t.Errorf("Write on an O_RDWR handle = %v; want permission error", err)
	}
	f.Close()
}

func wdErr[T any](_ T, err error) error { return err }

// wdRefused accepts "does not exist" or "permission denied": a symlink or a
// CODEX_HOME secret must be neither readable nor distinguishable by content.
func wdRefused(err error) bool { return os.IsNotExist(err) || os.IsPermission(err) }

// TestWebDAVWriteStreamsThroughClose checks the write handle directly: bytes
// land only at Close, Stat finishes the upload and reports the new revision.
func TestWebDAVWriteStreamsThroughClose(t *testing.T) {
	e := wdSetup(t)
	ctx := context.Background()
	f, err := e.dav.OpenFile(ctx, "/projects/demo/README.md", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, bufio.NewReader(strings.NewReader("new readme\n"))); err != nil {
		t.Fatal(err)
	}
	if got := wdRead(t, filepath.Join(e.projects, "demo", "README.md")); got != wdReadme {
		t.Errorf("bytes visible before Close: %q", got)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := wdRead(t, filepath.Join(e.projects, "demo", "README.md")); got != "new readme\n" {
		t.Errorf("after Close: %q", got)
	}
	tag, _ := fi.(webdav.ETager).ETag(ctx)
	if want := `"` + wdRev(t, e, wdProject("demo"), "README.md") + `"`; tag != want {
		t.Errorf("write handle Stat ETag = %s; want %s", tag, want)
	}

	// A precondition of the request with another Target does not apply here.
	other := dav.NewFileSystem(e.fs, nil, wdPreFor("/projects/demo/elsewhere", davfs.Precondition{IfMatch: "stale"}))
	f, err = other.OpenFile(ctx, "/projects/demo/README.md", os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("v3\n"))
	if err := f.Close(); err != nil {
		t.Errorf("Close with a precondition for another name: %v", err)
	}
	// One aimed at it is checked.
	mine := dav.NewFileSystem(e.fs, nil, wdPre(davfs.Precondition{IfMatch: "stale"}))
	if _, err := mine.OpenFile(ctx, "/projects/demo/README.md", os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		t.Errorf("stale If-Match accepted")
	} else if de, ok := dav.ErrorFromWebDAV(err); !ok || de.Reason != davfs.ReasonRevisionMismatch {
		t.Errorf("stale If-Match: %v; want REVISION_MISMATCH", err)
	}
}

func TestWebDAVContentType(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"README.md", "text/markdown; charset=utf-8"},
		{"notes.TXT", "text/plain; charset=utf-8"},
		{"main.go", "text/plain; charset=utf-8"},
		{"data.json", "application/json"},
		{"image.png", "image/png"},
		{"noext", "application/octet-stream"},
		{"archive.unknownext", "application/octet-stream"},
	} {
		if got := dav.ContentType(c.name); got != c.want {
			t.Errorf("ContentType(%q) = %q; want %q", c.name, got, c.want)
		}
	}
}

// TestWebDAVConcurrentIfMatch opens N uploads that all pass the If-Match
// check at open time, then commits them at once: the revision is checked
// again at commit, so exactly one wins and the file holds its bytes.
func TestWebDAVConcurrentIfMatch(t *testing.T) {
	e := wdSetup(t)
	rev := wdRev(t, e, wdProject("demo"), "README.md")
	ctx, d := context.Background(), dav.NewFileSystem(e.fs, nil, wdPre(davfs.Precondition{IfMatch: rev}))
	const n = 8
	files := make([]webdav.File, n)
	for i := range files {
		f, err := d.OpenFile(ctx, "/projects/demo/README.md", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if _, err := fmt.Fprintf(f, "writer %d\n", i); err != nil {
			t.Fatal(err)
		}
		files[i] = f
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() { errs[i] = f.Close() })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Errorf("writers %d and %d both committed", winner, i)
			}
			winner = i
			continue
		}
		if de, ok := dav.ErrorFromWebDAV(err); !ok || de.Reason != davfs.ReasonRevisionMismatch {
			t.Errorf("writer %d: %v; want REVISION_MISMATCH", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no writer committed")
	}
	if got, want := wdRead(t, filepath.Join(e.projects, "demo", "README.md")), fmt.Sprintf("writer %d\n", winner); got != want {
		t.Errorf("file holds %q; want the winner's %q", got, want)
	}
	wdNoTemp(t, filepath.Join(e.projects, "demo"), ".git", "README.md", "link.txt", "linkdir", "node_modules", "src")
}

// TestWebDAVUploadEndsWithRequest: an upload whose context ends before
// Close commits nothing and leaves no temp file (a handler that never
// reaches Close must not pin a goroutine or a partial file).
func TestWebDAVUploadEndsWithRequest(t *testing.T) {
	e := wdSetup(t)
	ctx, cancel := context.WithCancel(context.Background())
	f, err := e.dav.OpenFile(ctx, "/projects/demo/README.md", os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("never committed\n")); err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := f.Write([]byte("x")); err != nil {
			break // aborted
		}
		if time.Now().After(deadline) {
			t.Fatalf("upload still open after its context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.Close(); err == nil {
		t.Errorf("Close after the context ended = nil")
	}
	if got := wdRead(t, filepath.Join(e.projects, "demo", "README.md")); got != wdReadme {
		t.Errorf("cancelled upload committed %.40q", got)
	}
	wdNoTemp(t, filepath.Join(e.projects, "demo"), ".git", "README.md", "link.txt", "linkdir", "node_modules", "src")
}

// TestWebDAVLitmus runs litmus's "basic" and "copymove" suites (PUT/GET,
// MKCOL, DELETE, COPY, MOVE semantics) against the FileSystem under
// x/net/webdav. The "props" and "locks" suites are not run: their failures
// are x/net/webdav's (no dead properties, no shared locks, If: entity tags
// ignored), which the sidecar's own handler addresses.
func TestWebDAVLitmus(t *testing.T) {
	bin, err := exec.LookPath("litmus")
	if err != nil {
		t.Fatalf("litmus is not installed (%v): run `make setup`", err)
	}
	e := wdSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, e.url+"/projects/demo/")
	cmd.Dir = t.TempDir() // litmus writes debug.log here
	cmd.Env = append(os.Environ(), "TESTS=basic copymove")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("litmus: %v\n%s", err, out)
	}
	for _, suite := range []string{"basic", "copymove"} {
		if !bytes.Contains(out, []byte("summary for `"+suite+"'")) {
			t.Errorf("litmus did not run %s:\n%s", suite, out)
		}
	}
	if !bytes.Contains(out, []byte(" 0 failed")) || bytes.Contains(out, []byte("FAIL")) {
		t.Errorf("litmus failures:\n%s", out)
	}
	wdCanariesIntact(t, e)
}

// BenchmarkWebDAVPropfind measures a Depth: 1 PROPFIND (allprop) of a
// 1,000-file directory through x/net/webdav on loopback, warm cache.
func BenchmarkWebDAVPropfind(b *testing.B) {
	base := b.TempDir()
	dir := filepath.Join(base, "projects", "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "codex"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.txt", i)), []byte("some text\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	fsys, err := davfs.Open(davfs.Config{ProjectsRoot: filepath.Join(base, "projects"), CodexHome: filepath.Join(base, "codex")})
	if err != nil {
		b.Fatal(err)
	}
	defer fsys.Close()
	srv := httptest.NewServer(&webdav.Handler{FileSystem: dav.NewFileSystem(fsys, nil, dav.RequestState{}), LockSystem: webdav.NewMemLS()})
	defer srv.Close()
	propfind := func() {
		req, _ := http.NewRequest("PROPFIND", srv.URL+"/projects/bench/", nil)
		req.Header.Set("Depth", "1")
		resp, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMultiStatus || n == 0 {
			b.Fatalf("PROPFIND = %d", resp.StatusCode)
		}
	}
	propfind() // warm the revision cache
	b.ResetTimer()
	for b.Loop() {
		propfind()
	}
}

// BenchmarkWebDAVGet measures a 16 MiB GET through x/net/webdav on loopback.
// B/op (server and client in one process) stays far below the file size:
// the body is streamed from the *os.File, never buffered whole.
func BenchmarkWebDAVGet(b *testing.B) {
	base := b.TempDir()
	dir := filepath.Join(base, "projects", "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "codex"), 0o755); err != nil {
		b.Fatal(err)
	}
	const size = 16 << 20
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), bytes.Repeat([]byte{7}, size), 0o644); err != nil {
		b.Fatal(err)
	}
	fsys, err := davfs.Open(davfs.Config{ProjectsRoot: filepath.Join(base, "projects"), CodexHome: filepath.Join(base, "codex")})
	if err != nil {
		b.Fatal(err)
	}
	defer fsys.Close()
	srv := httptest.NewServer(&webdav.Handler{FileSystem: dav.NewFileSystem(fsys, nil, dav.RequestState{}), LockSystem: webdav.NewMemLS()})
	defer srv.Close()
	buf := make([]byte, 64<<10)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := srv.Client().Get(srv.URL + "/projects/bench/big.bin")
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n != size {
			b.Fatalf("GET = %d, %d bytes", resp.StatusCode, n)
		}
	}
}

// The per-name preconditions, the ErrorLog, the multi-link rules and the
// PROPPATCH answers of the FileSystem, called directly (issue #13).
func TestWebDAVPreconditionsErrorLogLinks(t *testing.T) {
	e := wdSetup(t)
	log := &dav.ErrorLog{}
	base := context.Background()
	d := dav.NewFileSystem(e.fs, nil, dav.RequestState{Errors: log})
	required := dav.NewFileSystem(e.fs, nil, dav.RequestState{Errors: log, Preconditions: func(string) davfs.Precondition { return davfs.Precondition{Required: true} }})

	// Required: replacing or removing needs IfMatch; creating does not.
	if _, err := required.OpenFile(base, "/projects/demo/README.md", os.O_WRONLY|os.O_TRUNC, 0o644); err == nil {
		t.Fatal("Required: an unconditional replace was opened")
	} else if de, ok := log.Lookup(err); !ok || de.Reason != "PRECONDITION_REQUIRED" {
		t.Fatalf("Required replace: %v (%v)", err, de)
	}
	if err := required.RemoveAll(base, "/projects/demo/README.md"); err == nil {
		t.Fatal("Required: an unconditional delete went through")
	}
	f, err := required.OpenFile(base, "/projects/demo/created.txt", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatalf("Required create: %v", err)
	}
	// Something appears meanwhile: the create must not replace it.
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "created.txt"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("mine"))
	if err := f.Close(); err == nil {
		t.Fatal("a Required create replaced a file that appeared meanwhile")
	}
	if b, _ := os.ReadFile(filepath.Join(e.projects, "demo", "created.txt")); string(b) != "theirs" {
		t.Fatalf("created.txt = %q", b)
	}

	// The ErrorLog keeps the specific reason behind an fs.ErrPermission.
	_, err = d.Stat(base, "/projects/demo/node_modules/x.js")
	if !os.IsPermission(err) {
		t.Fatalf("denylisted Stat: %v", err)
	}
	if de, ok := log.Lookup(err); !ok || de.Reason != davfs.ReasonDenylisted {
		t.Fatalf("Lookup(denylisted) = %v, %v", de, ok)
	}
	if de, ok := dav.ErrorFromWebDAV(err); !ok || de.Reason != davfs.ReasonReadOnly {
		t.Fatalf("without the log only the generic reason: %v", de)
	}

	// A file with two hard links: listed with its reason (the sidecar
	// filters it), never read, never replaced.
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "canary.txt"), []byte("canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(e.projects, "demo", "canary.txt"), filepath.Join(e.projects, "demo", "src", "twin.txt")); err != nil {
		t.Fatal(err)
	}
	dir, err := d.OpenFile(base, "/projects/demo", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := dir.Readdir(-1)
	dir.Close()
	listed := false
	for _, fi := range list {
		if en, ok := fi.Sys().(davfs.Entry); ok && fi.Name() == "canary.txt" {
			listed = en.Reason == davfs.NotEditableMultipleLinks
		}
	}
	if !listed {
		t.Error("the multi-link file is not listed with its reason")
	}
	fi, err := d.Stat(base, "/projects/demo/canary.txt")
	if err != nil {
		t.Fatal(err)
	}
	if en, ok := fi.Sys().(davfs.Entry); !ok || en.Reason != davfs.NotEditableMultipleLinks {
		t.Fatalf("Sys() = %#v", fi.Sys())
	}
	rf, err := d.OpenFile(base, "/projects/demo/canary.txt", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rf.Read(make([]byte, 8)); err == nil {
		t.Error("a multi-link file was read")
	} else if de, ok := log.Lookup(err); !ok || de.Reason != davfs.ReasonMultipleLinks {
		t.Errorf("read of a multi-link file: %v", err)
	}
	rf.Close()
	// Content reads (GET, HEAD) open at once: the multi-link file still
	// cannot be read, a directory is still a directory, and a regular
	// file has the same ETag as its Stat and exactly its bytes.
	content := dav.NewFileSystem(e.fs, nil, dav.RequestState{Errors: log, ContentReads: true})
	if rf, err := content.OpenFile(base, "/projects/demo/canary.txt", os.O_RDONLY, 0); err != nil {
		t.Fatal(err)
	} else {
		if _, err := rf.Read(make([]byte, 8)); err == nil {
			t.Error("a multi-link file was read by a content open")
		} else if de, ok := log.Lookup(err); !ok || de.Reason != davfs.ReasonMultipleLinks {
			t.Errorf("content read of a multi-link file: %v", err)
		}
		rf.Close()
	}
	if df, err := content.OpenFile(base, "/projects/demo/src", os.O_RDONLY, 0); err != nil {
		t.Fatal(err)
	} else if fi, _ := df.Stat(); !fi.IsDir() {
		t.Error("a content open of a directory is not a directory")
	} else {
		df.Close()
	}
	want, err := d.Stat(base, "/projects/demo/README.md")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := content.OpenFile(base, "/projects/demo/README.md", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfi, _ := cf.Stat()
	tagOf := func(fi os.FileInfo) string {
		tag, err := fi.(webdav.ETager).ETag(base)
		if err != nil {
			t.Fatal(err)
		}
		return tag
	}
	if tagOf(cfi) != tagOf(want) || cfi.Size() != want.Size() {
		t.Errorf("content open: ETag %s size %d, Stat says %s %d", tagOf(cfi), cfi.Size(), tagOf(want), want.Size())
	}
	if b, err := io.ReadAll(cf); err != nil || string(b) != wdReadme {
		t.Errorf("content open read %q, %v", b, err)
	}
	if n, err := cf.Seek(0, io.SeekStart); err != nil || n != 0 {
		t.Errorf("Seek(0) = %d, %v", n, err)
	}
	cf.Close()
	replacing := dav.NewFileSystem(e.fs, nil, dav.RequestState{Errors: log, Preconditions: func(string) davfs.Precondition { return davfs.Precondition{Replacing: true} }})
	if err := replacing.RemoveAll(base, "/projects/demo/canary.txt"); err == nil {
		t.Error("an Overwrite removed a multi-link file")
	} else if de, ok := log.Lookup(err); !ok || de.Reason != davfs.ReasonMultipleLinks {
		t.Errorf("Replacing removal: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.projects, "demo", "canary.txt")); string(b) != "canary" {
		t.Fatalf("canary = %q", b)
	}

	// PROPPATCH: the Win32 properties are accepted and dropped, others 403.
	pf, err := d.OpenFile(base, "/projects/demo/README.md", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	dph := pf.(webdav.DeadPropsHolder)
	win := xml.Name{Space: "urn:schemas-microsoft-com:", Local: "Win32LastModifiedTime"}
	st, _ := dph.Patch([]webdav.Proppatch{{Props: []webdav.Property{{XMLName: win}}}})
	if len(st) != 1 || st[0].Status != 200 {
		t.Errorf("Win32 patch: %+v", st)
	}
	st, _ = dph.Patch([]webdav.Proppatch{{Props: []webdav.Property{{XMLName: win}, {XMLName: xml.Name{Space: "x:", Local: "y"}}}}})
	if len(st) != 2 || st[0].Status != 403 || st[1].Status != 424 {
		t.Errorf("mixed patch: %+v", st)
	}
	if m, _ := dph.DeadProps(); len(m) != 0 {
		t.Errorf("dead properties stored: %v", m)
	}
}
