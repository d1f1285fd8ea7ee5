package dav

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/internal/davwire"
	"github.com/agentworkspace/files/internal/testtree"
)

// wantReason checks the status and the errtable reason header.
func (e *env) wantReason(method, path string, hdr map[string]string, body string, code int, reason string) *http.Response {
	e.t.Helper()
	resp, b := e.want(method, path, hdr, body, code)
	if got := resp.Header.Get(errtable.ReasonHeader); got != reason {
		e.t.Fatalf("%s %s: reason %q, want %s (body %q)", method, path, got, reason, b)
	}
	return resp
}

func strict(o *Options) { o.AllowUnconditionalWrites = false }

func TestPreconditionRequired(t *testing.T) {
	e := newEnv(t, strict)
	// Creating needs no precondition (and is checked as If-None-Match: *).
	resp, _ := e.want("PUT", "/projects/demo/f.txt", nil, "v1", 201)
	etag := resp.Header.Get("ETag")
	before := testtree.Snap(t, e.projects)
	for _, c := range []struct {
		method string
		hdr    map[string]string
	}{
		{"PUT", nil},
		{"DELETE", nil},
		{"MOVE", map[string]string{"Destination": "/projects/demo/g.txt"}},
		{"COPY", map[string]string{"Destination": "/projects/demo/f.txt.copy"}},
	} {
		if c.method == "COPY" {
			e.put("/projects/demo/f.txt.copy", "old copy") // an existing destination
			before = testtree.Snap(t, e.projects)
		}
		e.wantReason(c.method, "/projects/demo/f.txt", c.hdr, "v2", 428, "PRECONDITION_REQUIRED")
		testtree.Same(t, c.method+" without precondition", before, testtree.Snap(t, e.projects))
	}
	// Stale entity tags are 412, in If-Match and in If:.
	e.wantReason("PUT", "/projects/demo/f.txt", map[string]string{"If-Match": `"stale"`}, "v2", 412, "REVISION_MISMATCH")
	e.wantReason("PUT", "/projects/demo/f.txt", map[string]string{"If": `(["stale"])`}, "v2", 412, "REVISION_MISMATCH")
	testtree.Same(t, "stale writes", before, testtree.Snap(t, e.projects))
	// The current one lets the write through, in either header.
	resp, _ = e.want("PUT", "/projects/demo/f.txt", map[string]string{"If": "([" + etag + "])"}, "v2", 201)
	etag2 := resp.Header.Get("ETag")
	if got, _ := e.hostFile("f.txt"); got != "v2" || etag2 == etag {
		t.Fatalf("If: entity-tag PUT: %q, ETag %s", got, etag2)
	}
	e.want("MOVE", "/projects/demo/f.txt", map[string]string{"If-Match": etag2, "Destination": "/projects/demo/g.txt"}, "", 201)
	resp, _ = e.want("HEAD", "/projects/demo/g.txt", nil, "", 200)
	e.want("DELETE", "/projects/demo/g.txt", map[string]string{"If-Match": resp.Header.Get("ETag")}, "", 204)
	// A missing target: DELETE says 404, not 428.
	e.wantReason("DELETE", "/projects/demo/g.txt", nil, "", 404, "NOT_FOUND")
}

// lockBody is a LOCK request body.
func lockBody(owner string) string {
	return `<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>` + owner + `</D:owner></D:lockinfo>`
}

func (e *env) lock(path string, hdr map[string]string, code int) string {
	e.t.Helper()
	resp, _ := e.want("LOCK", path, hdr, lockBody("test"), code)
	tok := resp.Header.Get("Lock-Token")
	if tok == "" {
		e.t.Fatalf("LOCK %s: no Lock-Token", path)
	}
	return tok
}

// A client that locks before writing (Finder, Windows, davfs2) needs no
// If-Match, but a change made meanwhile by another surface is never
// overwritten: the lock pinned the revision.
func TestLockThenWrite(t *testing.T) {
	e := newEnv(t, strict)
	e.want("PUT", "/projects/demo/f.txt", nil, "v1", 201)
	tok := e.lock("/projects/demo/f.txt", map[string]string{"Depth": "0"}, 200)
	held := map[string]string{"If": "(" + tok + ")"}
	e.want("PUT", "/projects/demo/f.txt", held, "v2", 201)
	// The pin moved with that write: the lock holder writes again.
	e.want("PUT", "/projects/demo/f.txt", held, "v3", 201)
	// Without the token the resource is locked.
	e.wantReason("PUT", "/projects/demo/f.txt", map[string]string{"If-Match": `"x"`}, "v4", 423, "LOCKED")
	// Someone else (the agent, gRPC, REST) changes the file behind the lock.
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "f.txt"), []byte("agent's work"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.wantReason("PUT", "/projects/demo/f.txt", held, "lock holder's stale copy", 412, "REVISION_MISMATCH")
	if got, _ := e.hostFile("f.txt"); got != "agent's work" {
		t.Fatalf("write under a stale lock replaced the file: %q", got)
	}
	e.want("UNLOCK", "/projects/demo/f.txt", map[string]string{"Lock-Token": tok}, "", 204)

	// LOCK of a missing name creates it (empty); the holder then writes it.
	tok = e.lock("/projects/demo/new.txt", map[string]string{"Depth": "0"}, 201)
	e.want("PUT", "/projects/demo/new.txt", map[string]string{"If": "(" + tok + ")"}, "fresh", 201)
	if got, _ := e.hostFile("new.txt"); got != "fresh" {
		t.Fatalf("PUT under the LOCK that created it: %q", got)
	}

	// A depth-infinity lock on a collection: members unchanged since the
	// lock was taken are written; one changed after it is refused.
	e.want("MKCOL", "/projects/demo/dir", nil, "", 201)
	e.want("PUT", "/projects/demo/dir/a.txt", nil, "a", 201)
	e.want("PUT", "/projects/demo/dir/b.txt", nil, "b", 201)
	ctok := e.lock("/projects/demo/dir", nil, 200)
	ch := map[string]string{"If": "(" + ctok + ")"}
	e.want("PUT", "/projects/demo/dir/a.txt", ch, "a2", 201)
	e.want("PUT", "/projects/demo/dir/c.txt", ch, "c", 201)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(e.projects, "demo", "dir", "b.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	e.wantReason("PUT", "/projects/demo/dir/b.txt", ch, "b2", 412, "REVISION_MISMATCH")
	if got, _ := e.hostFile("dir/b.txt"); got != "b" {
		t.Fatalf("member changed after the lock was replaced: %q", got)
	}
}

func TestLockBounds(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxLocks = 2 })
	for _, p := range []string{"/a.txt", "/b.txt", "/c.txt"} {
		e.put("/projects/demo"+p, "x")
	}
	before := testtree.Snap(t, e.projects)
	for _, p := range []string{"/", "/projects/", "/global/"} {
		e.wantReason("LOCK", p, nil, lockBody("o"), 403, "READ_ONLY")
	}
	e.wantReason("LOCK", "/projects/demo/a.txt", nil, lockBody(strings.Repeat("o", 5000)), 413, "TOO_LARGE")
	resp, body := e.want("LOCK", "/projects/demo/a.txt", map[string]string{"Timeout": "Infinite"}, lockBody("o"), 200)
	if !strings.Contains(body, "Second-600") {
		t.Errorf("an Infinite LOCK was not capped at the maximum timeout:\n%s", body)
	}
	_ = resp
	e.lock("/projects/demo/b.txt", nil, 200)
	e.wantReason("LOCK", "/projects/demo/c.txt", nil, lockBody("o"), 507, "LOCK_LIMIT")
	testtree.Same(t, "LOCK bounds", before, testtree.Snap(t, e.projects))
	// Shared locks are not offered.
	shared := strings.Replace(lockBody("o"), "<D:exclusive/>", "<D:shared/>", 1)
	e.wantReason("LOCK", "/projects/demo/c.txt", nil, shared, 501, "NOT_SUPPORTED")
}

func TestProppatch(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/w.txt", "x")
	win32 := `<?xml version="1.0" encoding="utf-8" ?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:"><D:set><D:prop>` +
		`<Z:Win32CreationTime>Tue, 01 Dec 2026 10:00:00 GMT</Z:Win32CreationTime><Z:Win32LastAccessTime>Tue, 01 Dec 2026 10:00:00 GMT</Z:Win32LastAccessTime>` +
		`<Z:Win32LastModifiedTime>Tue, 01 Dec 2026 10:00:00 GMT</Z:Win32LastModifiedTime><Z:Win32FileAttributes>00000020</Z:Win32FileAttributes>` +
		`</D:prop></D:set></D:propertyupdate>`
	_, body := e.want("PROPPATCH", "/projects/demo/w.txt", nil, win32, 207)
	if !strings.Contains(body, "200 OK") || strings.Contains(body, "403") {
		t.Fatalf("Win32 PROPPATCH not answered 200:\n%s", body)
	}
	other := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:" xmlns:X="http://example.com/"><D:set><D:prop><X:color>red</X:color><Z:Win32FileAttributes>00000020</Z:Win32FileAttributes></D:prop></D:set></D:propertyupdate>`
	_, body = e.want("PROPPATCH", "/projects/demo/w.txt", nil, other, 207)
	if !strings.Contains(body, "403 Forbidden") || !strings.Contains(body, "424 Failed Dependency") {
		t.Fatalf("a dead property was not refused (403, the rest 424):\n%s", body)
	}
	// Nothing was stored: PROPFIND shows neither.
	_, body = e.want("PROPFIND", "/projects/demo/w.txt", map[string]string{"Depth": "0"}, "", 207)
	if strings.Contains(body, "Win32") || strings.Contains(body, "color") {
		t.Fatalf("a PROPPATCHed property was stored:\n%s", body)
	}
	for _, p := range []string{"/", "/projects/", "/global/", "/projects/demo/"} {
		e.wantReason("PROPPATCH", p, nil, win32, 403, "READ_ONLY")
	}
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("<X:p%d>v</X:p%d>", i, i)
	}
	many := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:X="x:"><D:set><D:prop>` + strings.Join(names, "") + `</D:prop></D:set></D:propertyupdate>`
	e.wantReason("PROPPATCH", "/projects/demo/w.txt", nil, many, 413, "TOO_LARGE")
}

// propfindNames is a PROPFIND body naming n properties.
func propfindNames(n int) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:X="x:"><D:prop>`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "<X:p%d/>", i)
	}
	b.WriteString(`</D:prop></D:propfind>`)
	return b.String()
}

func TestPropfindBounds(t *testing.T) {
	e := newEnv(t, nil)
	for _, d := range []string{"infinity", ""} {
		hdr := map[string]string{}
		if d != "" {
			hdr["Depth"] = d
		}
		_, body := e.want("PROPFIND", "/projects/demo/", hdr, "", 403)
		if !strings.Contains(body, "propfind-finite-depth") {
			t.Errorf("Depth %q: body %q", d, body)
		}
		e.wantReason("PROPFIND", "/projects/demo/", hdr, "", 403, "NOT_SUPPORTED")
	}
	e.wantReason("PROPFIND", "/projects/demo/", map[string]string{"Depth": "1"}, propfindNames(257), 413, "TOO_LARGE")
	e.want("PROPFIND", "/projects/demo/", map[string]string{"Depth": "1"}, propfindNames(256), 207)
	e.wantReason("PROPFIND", "/projects/demo/", map[string]string{"Depth": "1"}, strings.Repeat(" ", 1<<20+1), 413, "TOO_LARGE")
}

// One PROPFIND under 1 MiB naming 90,000 properties once drove the sidecar
// to 2.9 GB. Now it is refused before the library parses it, and the
// largest allowed request over a directory of 500 files stays small.
func TestPropfindMemoryBounded(t *testing.T) {
	e := newEnv(t, nil)
	dir := filepath.Join(e.projects, "demo", "many")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	huge := propfindNames(90000)
	if len(huge) > 1<<20 {
		huge = propfindNames(60000)
	}
	measure := func(body string, code int) uint64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		e.want("PROPFIND", "/projects/demo/many/", map[string]string{"Depth": "1"}, body, code)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	if got := measure(huge, 413); got > 16<<20 {
		t.Errorf("a refused PROPFIND of many names allocated %d MiB", got>>20)
	}
	if got := measure(propfindNames(256), 207); got > 512<<20 {
		t.Errorf("PROPFIND of 256 names over 500 files allocated %d MiB", got>>20)
	}
}

func TestReadOnlyView(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/r.txt", "r")
	ro := map[string]string{"X-Workspace-Read-Only": "true"}
	resp, _ := e.want("OPTIONS", "/projects/demo/", ro, "", 200)
	if resp.Header.Get("DAV") != "1" || strings.Contains(resp.Header.Get("Allow"), "PUT") {
		t.Errorf("read-only OPTIONS: DAV %q Allow %q", resp.Header.Get("DAV"), resp.Header.Get("Allow"))
	}
	for _, body := range []string{"", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`} {
		_, got := e.want("PROPFIND", "/projects/demo/", map[string]string{"X-Workspace-Read-Only": "true", "Depth": "1"}, body, 207)
		if strings.Contains(got, "supportedlock") || !strings.Contains(got, "r.txt") {
			t.Errorf("read-only PROPFIND offers locks or lost the listing:\n%s", got)
		}
		parseMS(t, got)
	}
	before := testtree.Snap(t, e.projects)
	for _, m := range []string{"PUT", "DELETE", "MKCOL", "COPY", "MOVE", "PROPPATCH", "LOCK", "UNLOCK"} {
		hdr := map[string]string{"X-Workspace-Read-Only": "true", "Destination": "/projects/demo/z.txt", "If-Match": `"x"`}
		resp := e.wantReason(m, "/projects/demo/r.txt", hdr, "", 405, "READ_ONLY")
		if resp.Header.Get("Allow") != davwire.AllowRead {
			t.Errorf("%s: Allow %q", m, resp.Header.Get("Allow"))
		}
	}
	testtree.Same(t, "read-only writes", before, testtree.Snap(t, e.projects))
	resp, body := e.want("GET", "/projects/demo/r.txt", ro, "", 200)
	if body != "r" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("read-only GET: %q %v", body, resp.Header)
	}
}

func TestContentHeaders(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/page.md", "<html><script>alert(1)</script></html>")
	e.put("/projects/demo/noext", "<html></html>")
	for _, m := range []string{"GET", "HEAD"} {
		for p, ct := range map[string]string{"/projects/demo/page.md": "text/markdown; charset=utf-8", "/projects/demo/noext": "application/octet-stream"} {
			resp, _ := e.want(m, p, nil, "", 200)
			if resp.Header.Get("Content-Type") != ct || resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s %s: %v", m, p, resp.Header)
			}
		}
	}
	resp, _ := e.want("PROPFIND", "/projects/demo/", map[string]string{"Depth": "1"}, "", 207)
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("PROPFIND Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	// Ranges still work through http.ServeContent.
	resp, body := e.want("GET", "/projects/demo/noext", map[string]string{"Range": "bytes=1-4"}, "", 206)
	if body != "html" {
		t.Errorf("range: %q", body)
	}
	e.wantReason("GET", "/projects/demo/noext", map[string]string{"Range": "bytes=100-"}, "", 416, "INVALID_ARGUMENT")
	_ = resp
}

// Errors carry the errtable reason; the library's generic 404/405/500 are
// refined into it.
func TestErrorReasons(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxUploadSize = 10 })
	if err := os.MkdirAll(filepath.Join(e.projects, "demo", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.projects, "demo", "target.txt"), []byte("t"), 0o644)
	if err := os.Symlink("target.txt", filepath.Join(e.projects, "demo", "link")); err != nil {
		t.Fatal(err)
	}
	deep := "/projects/demo" + strings.Repeat("/d", 70)
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		body         string
		code         int
		reason       string
	}{
		{"GET", "/projects/demo/missing", nil, "", 404, "NOT_FOUND"},
		{"GET", "/projects/nope/x", nil, "", 404, "PROJECT_NOT_FOUND"},
		{"GET", "/projects/demo/.git/config", nil, "", 403, "DENYLISTED"},
		{"PUT", "/projects/demo/.git/x", nil, "x", 403, "DENYLISTED"},
		{"GET", "/projects/demo/link", nil, "", 403, "SYMLINK"},
		{"GET", deep, nil, "", 400, "PATH_TOO_DEEP"},
		{"PUT", deep, nil, "x", 400, "PATH_TOO_DEEP"},
		{"PROPFIND", deep, map[string]string{"Depth": "0"}, "", 400, "PATH_TOO_DEEP"},
		{"PUT", "/projects/demo/big", nil, "01234567890", 413, "TOO_LARGE"},
		{"PUT", "/projects/demo/no/parent", nil, "x", 409, "NOT_FOUND"},
		{"MKCOL", "/projects/demo", nil, "", 405, "ALREADY_EXISTS"},
		{"MKCOL", "/projects/new", nil, "", 403, "READ_ONLY"},
		{"GET", "/projects/demo/", nil, "", 405, "NOT_A_FILE"},
		{"GET", "/global/auth.json", nil, "", 403, "OUTSIDE_GLOBAL"},
		{"COPY", "/projects/demo/target.txt", map[string]string{"Destination": "/global/skills/t.txt"}, "", 403, "READ_ONLY"},
		{"COPY", "/projects/demo/target.txt", map[string]string{"Destination": "/projects/demo/target.txt"}, "", 403, "MOVE_INTO_SELF"},
		{"MOVE", "/projects/demo/target.txt", map[string]string{"Destination": "http://elsewhere/projects/demo/x"}, "", 502, "INVALID_ARGUMENT"},
		{"BREW", "/projects/demo/", nil, "", 405, "NOT_SUPPORTED"},
		{"PROPFIND", "/projects/demo/", map[string]string{"Depth": "1", "X-Forwarded-Prefix": "/not/valid/"}, "", 400, "INVALID_ARGUMENT"},
	} {
		resp := e.wantReason(c.method, c.path, c.hdr, c.body, c.code, c.reason)
		if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" && c.code != 405 {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, resp.Header.Get("Content-Type"))
		}
	}
	if _, err := os.Stat(filepath.Join(e.projects, "demo", "big")); err == nil {
		t.Error("an upload over the limit was written")
	}
}

// Collections carry no ETag over WebDAV, so a client removes one under a
// lock: the lock pinned its revision.
func TestDeleteCollectionUnderLock(t *testing.T) {
	e := newEnv(t, strict)
	e.want("MKCOL", "/projects/demo/d", nil, "", 201)
	e.want("PUT", "/projects/demo/d/x.txt", nil, "x", 201)
	e.wantReason("DELETE", "/projects/demo/d", nil, "", 428, "PRECONDITION_REQUIRED")
	tok := e.lock("/projects/demo/d", nil, 200)
	e.want("DELETE", "/projects/demo/d", map[string]string{"If": "(" + tok + ")"}, "", 204)
	if _, err := os.Stat(filepath.Join(e.projects, "demo", "d")); err == nil {
		t.Fatal("DELETE under the lock left the directory")
	}
}
