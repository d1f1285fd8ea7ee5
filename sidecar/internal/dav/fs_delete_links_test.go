package dav_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar/internal/dav"
)

// wdTick outlasts the kernel's ctime granularity (seen.go in davfs).
const wdTick = 25 * time.Millisecond

// TestWebDAVDeleteKeepsNewerWork: a recursive DELETE through x/net/webdav
// over the FileSystem, with If-Match handed to davfs as the sidecar's
// wrapper does (RequestState.Preconditions) and the DELETE marked
// ForMutation, never removes work done inside the directory after its
// revision was read. The revision is read by a PROPFIND.
func TestWebDAVDeleteKeepsNewerWork(t *testing.T) {
	e := wdSetup(t)
	for rel, body := range map[string]string{"d/a.txt": "a", "d/sub/b.txt": "b", "d/sub/deep/c.txt": "c"} {
		wdWrite(t, filepath.Join(e.projects, "demo", rel), body)
	}
	ls := webdav.NewMemLS()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var st dav.RequestState
		if im := r.Header.Get("If-Match"); im != "" {
			st = wdPre(davfs.Precondition{IfMatch: strings.Trim(im, `"`)})
			r.Header.Del("If-Match")
		}
		// x/net/webdav Stats the target before RemoveAll: not a read by
		// the client.
		st.ForMutation = r.Method == "DELETE"
		(&webdav.Handler{FileSystem: dav.NewFileSystem(e.fs, nil, st), LockSystem: ls}).ServeHTTP(w, r)
	}))
	defer srv.Close()
	e.url, e.client = srv.URL, srv.Client()
	// propfind lists demo as a client does and returns d's revision. x/net
	// does not report a collection's getetag, so the revision is taken
	// from a Stat that does not count as a read (ForMutation): the read is
	// the PROPFIND's.
	propfind := func() string {
		resp, body := wdDo(t, e, "PROPFIND", "/projects/demo/", nil, map[string]string{"Depth": "1"})
		if resp.StatusCode != http.StatusMultiStatus || !strings.Contains(string(body), "/projects/demo/d/") {
			t.Fatalf("PROPFIND: %d %s", resp.StatusCode, body)
		}
		st, err := e.fs.Stat(t.Context(), wdProject("demo"), "d", davfs.ForMutation)
		if err != nil {
			t.Fatal(err)
		}
		return st.Revision
	}
	del := func(rev string) int {
		resp, _ := wdDo(t, e, "DELETE", "/projects/demo/d", nil, map[string]string{"If-Match": `"` + rev + `"`})
		return resp.StatusCode
	}
	time.Sleep(wdTick)
	rev := propfind()
	time.Sleep(wdTick)
	wdWrite(t, filepath.Join(e.projects, "demo/d/sub/deep/c.txt"), "new work")
	dir := filepath.Join(e.projects, "demo/d")
	before := testtree.Snap(t, dir)
	if code := del(rev); code < 300 {
		t.Fatalf("DELETE with a revision older than the work inside: %d", code)
	}
	if !maps.Equal(before, testtree.Snap(t, dir)) {
		t.Fatal("a refused DELETE changed the tree")
	}
	if code := del(propfind()); code >= 300 {
		t.Fatalf("DELETE after reading again: %d", code)
	}
	wdCanariesIntact(t, e)
}

// TestWebDAVMultipleLinks drives x/net/webdav over the FileSystem: GET
// and COPY of a multi-link file are refused and copy nothing; PUT onto it
// is refused and replaces nothing.
func TestWebDAVMultipleLinks(t *testing.T) {
	e := wdSetup(t)
	for _, l := range [][2]string{{"codex/auth.json", "codex/skills/x"}, {"outside/secret.txt", "projects/demo/h"}} {
		if err := os.Link(filepath.Join(e.base, l[0]), filepath.Join(e.base, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		gone         string // must not exist afterwards
	}{
		{"GET", "/global/skills/x", nil, ""},
		{"COPY", "/global/skills/x", map[string]string{"Destination": e.url + "/global/skills/copy"}, "codex/skills/copy"},
		{"COPY", "/projects/demo/h", map[string]string{"Destination": e.url + "/projects/demo/copy"}, "projects/demo/copy"},
		{"PUT", "/projects/demo/h", nil, ""},
	} {
		resp, _ := wdDo(t, e, c.method, c.path, []byte("OVERWRITTEN"), c.hdr)
		if resp.StatusCode < 300 {
			t.Errorf("%s %s: %d", c.method, c.path, resp.StatusCode)
		}
		if _, err := os.Lstat(filepath.Join(e.base, c.gone)); c.gone != "" && err == nil {
			t.Errorf("%s %s made %s", c.method, c.path, c.gone)
		}
	}
	if wdRead(t, filepath.Join(e.base, "projects/demo/h")) != wdSecret || wdRead(t, filepath.Join(e.base, "codex/skills/x")) != wdAuth {
		t.Fatal("a linked name was replaced")
	}
	wdCanariesIntact(t, e)
}

func wdWrite(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
