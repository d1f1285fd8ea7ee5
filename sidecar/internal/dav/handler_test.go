package dav

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
)

func TestOptionsAnyPath(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []string{"/", "/projects/", "/projects/demo/", "/projects/demo/missing/x", "/global/", "/nowhere"} {
		resp, _ := e.want("OPTIONS", p, nil, "", 200)
		if got := resp.Header.Get("DAV"); got != "1, 2" {
			t.Errorf("OPTIONS %s: DAV %q", p, got)
		}
		if resp.Header.Get("MS-Author-Via") != "DAV" || !strings.Contains(resp.Header.Get("Allow"), "OPTIONS") {
			t.Errorf("OPTIONS %s: headers %v", p, resp.Header)
		}
	}
}

func TestETagIsRevisionOnGetHeadPropfind(t *testing.T) {
	e := newEnv(t, nil)
	etag := e.put("/projects/demo/a.txt", "hello world")
	ent, err := e.fs.Stat(t.Context(), davfs.Workspace{Scope: davfs.ScopeProject, Project: "demo"}, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := `"` + ent.Revision + `"`
	if etag != want {
		t.Fatalf("PUT ETag %q, revision %q", etag, want)
	}
	resp, body := e.want("GET", "/projects/demo/a.txt", nil, "", 200)
	if resp.Header.Get("ETag") != want || body != "hello world" {
		t.Fatalf("GET: ETag %q body %q", resp.Header.Get("ETag"), body)
	}
	resp, _ = e.want("HEAD", "/projects/demo/a.txt", nil, "", 200)
	if resp.Header.Get("ETag") != want || resp.ContentLength != 11 {
		t.Fatalf("HEAD: ETag %q len %d", resp.Header.Get("ETag"), resp.ContentLength)
	}
	resp, body = e.want("GET", "/projects/demo/a.txt", map[string]string{"Range": "bytes=6-"}, "", 206)
	if body != "world" {
		t.Fatalf("Range GET body %q", body)
	}
	// Several ranges: a multipart body (net/http writes it from its own
	// goroutine), both parts there.
	resp, body = e.want("GET", "/projects/demo/a.txt", map[string]string{"Range": "bytes=0-1,6-7"}, "", 206)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/byteranges") ||
		!strings.Contains(body, "\r\n\r\nhe\r\n") || !strings.Contains(body, "\r\n\r\nwo\r\n") {
		t.Fatalf("multi-range GET: %s %q", resp.Header.Get("Content-Type"), body)
	}
	e.want("GET", "/projects/demo/a.txt", map[string]string{"If-None-Match": want}, "", 304)
	_, body = e.want("PROPFIND", "/projects/demo/a.txt", map[string]string{"Depth": "0"}, "", 207)
	ms := parseMS(t, body)
	if len(ms.Responses) != 1 || ms.Responses[0].Propstats[0].Prop.ETag != want {
		t.Fatalf("PROPFIND getetag: %s", body)
	}
	_, body = e.want("PROPFIND", "/projects/demo/", map[string]string{"Depth": "1"}, "", 207)
	found := false
	for _, r := range parseMS(t, body).Responses {
		if strings.HasSuffix(r.Href, "/a.txt") {
			found = r.Propstats[0].Prop.ETag == want
		}
	}
	if !found {
		t.Fatalf("Depth 1 PROPFIND lacks the ETag: %s", body)
	}
}

// Plain x/net/webdav ignores If-Match / If-None-Match on every method.
func TestConditionalWrites(t *testing.T) {
	e := newEnv(t, nil)
	etag := e.put("/projects/demo/f.txt", "v1")
	stale := `"0000stale"`
	e.want("PUT", "/projects/demo/f.txt", map[string]string{"If-Match": stale}, "v2", 412)
	if got, _ := e.hostFile("f.txt"); got != "v1" {
		t.Fatalf("stale PUT wrote %q", got)
	}
	e.want("PUT", "/projects/demo/f.txt", map[string]string{"If-None-Match": "*"}, "v2", 412)
	e.want("PUT", "/projects/demo/new.txt", map[string]string{"If-Match": etag}, "x", 412)
	e.want("PUT", "/projects/demo/new.txt", map[string]string{"If-None-Match": "*"}, "x", 201)
	resp, _ := e.want("PUT", "/projects/demo/f.txt", map[string]string{"If-Match": etag}, "v2", 201) // x/net answers 201 for every PUT
	etag2 := resp.Header.Get("ETag")
	if etag2 == etag || etag2 == "" {
		t.Fatalf("ETag did not change: %q", etag2)
	}
	e.want("DELETE", "/projects/demo/f.txt", map[string]string{"If-Match": etag}, "", 412)
	e.want("MOVE", "/projects/demo/f.txt", map[string]string{"If-Match": etag, "Destination": "/projects/demo/g.txt"}, "", 412)
	e.want("COPY", "/projects/demo/f.txt", map[string]string{"If-Match": etag, "Destination": "/projects/demo/g.txt"}, "", 412)
	if _, ok := e.hostFile("g.txt"); ok {
		t.Fatal("stale MOVE/COPY created the destination")
	}
	e.want("COPY", "/projects/demo/f.txt", map[string]string{"If-Match": etag2, "Destination": "/projects/demo/g.txt"}, "", 201)
	resp, _ = e.want("HEAD", "/projects/demo/g.txt", nil, "", 200)
	e.want("MOVE", "/projects/demo/g.txt", map[string]string{"If-Match": etag2, "Destination": "/projects/demo/h.txt"}, "", 412)
	e.want("MOVE", "/projects/demo/g.txt", map[string]string{"If-Match": resp.Header.Get("ETag"), "Destination": "/projects/demo/h.txt"}, "", 201)
	e.want("DELETE", "/projects/demo/f.txt", map[string]string{"If-Match": etag2}, "", 204)
	if _, ok := e.hostFile("f.txt"); ok {
		t.Fatal("DELETE left the file")
	}
}

func TestPutSizeLimit(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxUploadSize = 1024 })
	e.want("PUT", "/projects/demo/exact.bin", nil, strings.Repeat("x", 1024), 201)
	// Content-Length above the limit: refused up front.
	e.want("PUT", "/projects/demo/big.bin", nil, strings.Repeat("x", 1025), 413)
	// No Content-Length (chunked): cut off while streaming.
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 4; i++ {
			if _, err := pw.Write([]byte(strings.Repeat("y", 512))); err != nil {
				return
			}
		}
		pw.Close()
	}()
	resp, _ := e.do("PUT", "/projects/demo/big2.bin", nil, pr)
	if resp.StatusCode != 413 {
		t.Fatalf("chunked oversize PUT: %d", resp.StatusCode)
	}
	for _, n := range []string{"big.bin", "big2.bin"} {
		if _, ok := e.hostFile(n); ok {
			t.Errorf("%s was written", n)
		}
	}
	e.assertNoTempFiles()
}

func TestPutChunkedWithoutContentLength(t *testing.T) {
	e := newEnv(t, nil)
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 100; i++ {
			fmt.Fprintf(pw, "line %d\n", i)
		}
		pw.Close()
	}()
	resp, _ := e.do("PUT", "/projects/demo/finder.txt", nil, pr)
	if resp.StatusCode != 201 {
		t.Fatalf("chunked PUT: %d", resp.StatusCode)
	}
	got, _ := e.hostFile("finder.txt")
	if !strings.HasPrefix(got, "line 0\n") || !strings.HasSuffix(got, "line 99\n") {
		t.Fatalf("content %q", got)
	}
}

func TestPutContentRangeRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/r.txt", "0123456789")
	e.want("PUT", "/projects/demo/r.txt", map[string]string{"Content-Range": "bytes 0-3/10"}, "abcd", 400)
	if got, _ := e.hostFile("r.txt"); got != "0123456789" {
		t.Fatalf("partial PUT wrote %q", got)
	}
}

// An upload cut short by the client never commits.
func TestAbortedUploadNeverCommits(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/keep.txt", "original")
	for _, p := range []string{"keep.txt", "fresh.txt"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "PUT /projects/demo/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", p)
		conn.Write([]byte(strings.Repeat("z", 5000)))
		time.Sleep(50 * time.Millisecond)
		conn.Close()
	}
	// The handler sees the read error and answers; wait for it.
	e.logs.WaitFor(`"path":"/projects/demo/fresh.txt"`, 5*time.Second)
	if got, _ := e.hostFile("keep.txt"); got != "original" {
		t.Fatalf("aborted upload replaced the file: %q", got)
	}
	if _, ok := e.hostFile("fresh.txt"); ok {
		t.Fatal("aborted upload created the file")
	}
	e.assertNoTempFiles()
}

func (e *env) assertNoTempFiles() {
	e.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var extra []string
		filepath.Walk(filepath.Join(e.projects, "demo"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				n := fi.Name()
				if strings.HasPrefix(n, ".") || strings.Contains(n, "tmp") {
					extra = append(extra, n)
				}
			}
			return nil
		})
		if len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("temp files left behind: %v", extra)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Status codes for our errors, not x/net/webdav's 404/405 defaults.
func TestStatusCodes(t *testing.T) {
	e := newEnv(t, nil)
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "canary.txt"), []byte("canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("canary.txt", filepath.Join(e.projects, "demo", "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(e.projects, "demo", "linkdir")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(e.projects, "demo", "sub"), 0o755)
	cases := []struct {
		method, path string
		hdr          map[string]string
		body         string
		want         int
	}{
		{"GET", "/projects/demo/missing.txt", nil, "", 404},
		{"GET", "/projects/nosuch/a.txt", nil, "", 404},
		{"GET", "/elsewhere", nil, "", 404},
		{"PUT", "/projects/demo/node_modules/x.js", nil, "x", 403},
		{"PUT", "/projects/demo/.git/config", nil, "x", 403},
		{"GET", "/projects/demo/link.txt", nil, "", 403},
		{"PUT", "/projects/demo/link.txt", nil, "x", 403},
		{"PUT", "/projects/demo/linkdir/x.txt", nil, "x", 403},
		{"PUT", "/global/other.txt", nil, "x", 403},
		{"MKCOL", "/global/newdir", nil, "", 403},
		{"MKCOL", "/projects/newproject", nil, "", 403},
		{"MKCOL", "/projects/demo", nil, "", 405},
		{"DELETE", "/projects/demo", nil, "", 403},
		{"PUT", "/projects/demo", nil, "x", 403},
		{"PUT", "/projects/newfile", nil, "x", 403},
		{"PUT", "/projects/demo/nodir/x.txt", nil, "x", 409},
		{"MKCOL", "/projects/demo/nodir/sub", nil, "", 409},
		{"MKCOL", "/projects/demo/sub", nil, "", 405},
		{"MKCOL", "/projects/demo/withbody", nil, "<x/>", 415},
		{"DELETE", "/projects/demo/missing", nil, "", 404},
		{"MOVE", "/projects/demo/canary.txt", map[string]string{"Destination": "/projects/other/c.txt"}, "", 403},
		{"COPY", "/projects/demo/canary.txt", map[string]string{"Destination": "/global/skills/c.txt"}, "", 403},
		{"MOVE", "/projects/demo", map[string]string{"Destination": "/projects/renamed"}, "", 403},
		{"COPY", "/projects/demo/canary.txt", map[string]string{"Destination": "/projects/demo/nodir/c.txt"}, "", 409},
		{"MOVE", "/projects/demo/missing.txt", map[string]string{"Destination": "/projects/demo/c.txt"}, "", 404},
		{"PUT", "/global/skills/ok.md", nil, "skill", 201},
		{"PROPFIND", "/projects/demo/", map[string]string{"Depth": "infinity"}, "", 403},
		{"PROPFIND", "/projects/demo/", nil, "", 403},
		{"PROPFIND", "/projects/demo/missing", map[string]string{"Depth": "0"}, "", 404},
		// DELETE, COPY, MOVE and PROPPATCH share the "must exist" check:
		// 404 when missing, the davfs error's status when Stat fails.
		{"COPY", "/projects/demo/missing.txt", map[string]string{"Destination": "/projects/demo/c.txt"}, "", 404},
		{"PROPPATCH", "/projects/demo/missing.txt", nil, "", 404},
		{"DELETE", "/projects/demo/linkdir/x", nil, "", 403},
		{"COPY", "/projects/demo/linkdir/x", map[string]string{"Destination": "/projects/demo/c.txt"}, "", 403},
		{"MOVE", "/projects/demo/linkdir/x", map[string]string{"Destination": "/projects/demo/c.txt"}, "", 403},
		{"PROPPATCH", "/projects/demo/linkdir/x", nil, "", 403},
		{"BREW", "/projects/demo/", nil, "", 405},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			e.t = t
			e.want(c.method, c.path, c.hdr, c.body, c.want)
		})
	}
	if got, _ := os.ReadFile(filepath.Join(e.projects, "demo", "canary.txt")); string(got) != "canary" {
		t.Fatalf("canary changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.projects, "newproject")); err == nil {
		t.Fatal("MKCOL created a project")
	}
}

func TestPropfind(t *testing.T) {
	e := newEnv(t, nil)
	e.want("MKCOL", "/projects/demo/dir", nil, "", 201)
	for i := 0; i < 50; i++ {
		e.put(fmt.Sprintf("/projects/demo/dir/f%02d.txt", i), "content")
	}
	e.put("/projects/demo/dir/we<ird & \"name\".md", "x")
	_, body := e.want("PROPFIND", "/projects/demo/dir/", map[string]string{"Depth": "1"}, "", 207)
	ms := parseMS(t, body)
	if len(ms.Responses) != 52 {
		t.Fatalf("%d responses, want 52", len(ms.Responses))
	}
	self := ms.Responses[0].Propstats[0].Prop
	// x/net/webdav gives collections no getetag and no lockdiscovery.
	if self.ResourceType.Collection == nil || self.SupportedLock == nil {
		t.Fatalf("collection props missing: %+v", self)
	}
	// Members come in directory order (RFC 4918 sets none): find f00.txt.
	fi := -1
	for i, r := range ms.Responses {
		if strings.HasSuffix(r.Href, "/f00.txt") {
			fi = i
		}
	}
	if fi < 1 {
		t.Fatal("f00.txt not listed after the directory itself")
	}
	f := ms.Responses[fi].Propstats[0].Prop
	if f.Length != "7" || f.ContentType != "text/plain; charset=utf-8" || f.LastModified == "" || f.ETag == "" || f.DisplayName != "f00.txt" {
		t.Fatalf("file props: %+v", f)
	}
	if _, err := http.ParseTime(f.LastModified); err != nil {
		t.Fatalf("getlastmodified %q: %v", f.LastModified, err)
	}
	// Named properties: found under 200, unknown under 404.
	_, body = e.want("PROPFIND", "/projects/demo/dir/f01.txt", map[string]string{"Depth": "0"},
		`<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:Z="urn:z"><D:prop><D:getetag/><Z:nope/></D:prop></D:propfind>`, 207)
	ms = parseMS(t, body)
	if ps := ms.Responses[0].Propstats; len(ps) != 2 || !strings.Contains(ps[0].Status, "200") || !strings.Contains(ps[1].Status, "404") {
		t.Fatalf("named props: %s", body)
	}
	e.want("PROPFIND", "/projects/demo/dir/", map[string]string{"Depth": "1"}, `<not xml`, 400)
	// Projects level and root.
	_, body = e.want("PROPFIND", "/projects/", map[string]string{"Depth": "1"}, "", 207)
	if ms := parseMS(t, body); len(ms.Responses) != 3 { // projects/, demo/, other/
		t.Fatalf("projects level: %s", body)
	}
	_, body = e.want("PROPFIND", "/", map[string]string{"Depth": "1"}, "", 207)
	if ms := parseMS(t, body); len(ms.Responses) != 3 {
		t.Fatalf("root: %s", body)
	}
	_, body = e.want("PROPFIND", "/global/", map[string]string{"Depth": "1"}, "", 207)
	parseMS(t, body)
}

// A directory with children davfs cannot read or will not show still
// answers with well-formed XML.
func TestPropfindUnreadableChild(t *testing.T) {
	e := newEnv(t, nil)
	dir := filepath.Join(e.projects, "demo", "odd")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("ok"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("no"), 0o000)
	os.Mkdir(filepath.Join(dir, "closed"), 0o000)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("ok.txt", filepath.Join(dir, "link"))
	_, body := e.want("PROPFIND", "/projects/demo/odd/", map[string]string{"Depth": "1"}, "", 207)
	ms := parseMS(t, body)
	for _, r := range ms.Responses {
		if strings.HasSuffix(r.Href, "/link") {
			t.Errorf("symlink listed: %s", r.Href)
		}
	}
}

func TestMoveCopySemantics(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/a.txt", "A")
	e.put("/projects/demo/b.txt", "B")
	// No Overwrite header means T (RFC 4918 §10.6): replaced, 204.
	e.want("COPY", "/projects/demo/a.txt", map[string]string{"Destination": e.url + "/projects/demo/b.txt"}, "", 204)
	if got, _ := e.hostFile("b.txt"); got != "A" {
		t.Fatalf("COPY overwrite: %q", got)
	}
	e.put("/projects/demo/b.txt", "B")
	e.want("MOVE", "/projects/demo/a.txt", map[string]string{"Destination": "/projects/demo/b.txt", "Overwrite": "F"}, "", 412)
	e.want("MOVE", "/projects/demo/a.txt", map[string]string{"Destination": "/projects/demo/b.txt"}, "", 204)
	if got, _ := e.hostFile("b.txt"); got != "A" {
		t.Fatalf("MOVE overwrite: %q", got)
	}
	if _, ok := e.hostFile("a.txt"); ok {
		t.Fatal("MOVE left the source")
	}
	// Collections: recursive COPY, Depth 0 COPY, MOVE.
	e.want("MKCOL", "/projects/demo/c", nil, "", 201)
	e.want("MKCOL", "/projects/demo/c/sub", nil, "", 201)
	e.put("/projects/demo/c/sub/x.txt", "X")
	e.want("COPY", "/projects/demo/c/", map[string]string{"Destination": "/projects/demo/c2/"}, "", 201)
	if got, _ := e.hostFile("c2/sub/x.txt"); got != "X" {
		t.Fatalf("recursive COPY: %q", got)
	}
	e.want("COPY", "/projects/demo/c/", map[string]string{"Destination": "/projects/demo/c3/", "Depth": "0"}, "", 201)
	if ents, _ := os.ReadDir(filepath.Join(e.projects, "demo", "c3")); len(ents) != 0 {
		t.Fatalf("Depth 0 COPY copied members: %v", ents)
	}
	e.want("MOVE", "/projects/demo/c/", map[string]string{"Destination": "/projects/demo/c3/"}, "", 204)
	if got, _ := e.hostFile("c3/sub/x.txt"); got != "X" {
		t.Fatalf("MOVE collection: %q", got)
	}
	e.want("MOVE", "/projects/demo/c3/", map[string]string{"Destination": "/projects/demo/c3/sub/in"}, "", 403)
	e.want("COPY", "/projects/demo/c3/", map[string]string{"Destination": "/projects/demo/c3"}, "", 403)
	e.want("MOVE", "/projects/demo/b.txt", nil, "", 400)
	e.want("COPY", "/projects/demo/b.txt", map[string]string{"Destination": "http://elsewhere.example/projects/demo/z.txt"}, "", 502)
}

func TestLocks(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxLockTimeout = 10 * time.Minute })
	etag := e.put("/projects/demo/l.txt", "v1")
	lockBody := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>tester</D:owner></D:lockinfo>`
	resp, body := e.want("LOCK", "/projects/demo/l.txt", map[string]string{"Timeout": "Second-99999", "Depth": "0"}, lockBody, 200)
	tok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	if !strings.HasPrefix(tok, "opaquelocktoken:") || !strings.Contains(body, "Second-600") {
		t.Fatalf("LOCK: token %q body %s", tok, body)
	}
	e.want("PUT", "/projects/demo/l.txt", nil, "x", 423)
	e.want("DELETE", "/projects/demo/l.txt", nil, "", 423)
	e.want("LOCK", "/projects/demo/l.txt", nil, lockBody, 423)
	e.want("PUT", "/projects/demo/l.txt", map[string]string{"If": "(<" + tok + "> [\"bogus\"])"}, "x", 412)
	e.want("PUT", "/projects/demo/l.txt", map[string]string{"If": "(<DAV:no-lock> [" + etag + "])"}, "x", 412)
	e.want("PUT", "/projects/demo/l.txt", map[string]string{"If": "(<" + tok + "x>) (Not <DAV:no-lock>)"}, "x", 423)
	e.want("PUT", "/projects/demo/l.txt", map[string]string{"If": "(<" + tok + "> [" + etag + "])"}, "v2", 201)
	e.want("PUT", "/projects/demo/l.txt", map[string]string{"If": "<" + e.url + "/projects/demo/l.txt> (<" + tok + ">)"}, "v3", 201)
	e.want("UNLOCK", "/projects/demo/l.txt", map[string]string{"Lock-Token": "<opaquelocktoken:bogus>"}, "", 409)
	e.want("UNLOCK", "/projects/demo/l.txt", map[string]string{"Lock-Token": "<" + tok + ">"}, "", 204)
	e.want("PUT", "/projects/demo/l.txt", nil, "v4", 201)

	// Locks expire.
	e.want("LOCK", "/projects/demo/l.txt", map[string]string{"Timeout": "Second-1"}, lockBody, 200)
	e.want("PUT", "/projects/demo/l.txt", nil, "x", 423)
	time.Sleep(1100 * time.Millisecond) // x/net/webdav's lock clock is time.Now
	e.want("PUT", "/projects/demo/l.txt", nil, "v5", 201)

	// LOCK on an unmapped URL creates an empty file where PUT could...
	e.want("LOCK", "/projects/demo/unmapped.txt", nil, lockBody, 201)
	if got, ok := e.hostFile("unmapped.txt"); !ok || got != "" {
		t.Fatalf("unmapped LOCK: %q %v", got, ok)
	}
	// ...and nowhere else, without leaving a lock behind.
	e.want("LOCK", "/projects/newproject", nil, lockBody, 403)
	e.want("LOCK", "/global/notallowed.txt", nil, lockBody, 403)
	e.want("LOCK", "/projects/demo/nodir/x.txt", nil, lockBody, 409)
	if _, err := os.Stat(filepath.Join(e.projects, "newproject")); err == nil {
		t.Fatal("LOCK created a project")
	}
	if _, err := os.Stat(filepath.Join(e.codex, "notallowed.txt")); err == nil {
		t.Fatal("LOCK created a file outside global")
	}
	e.want("PUT", "/projects/demo/nodir-later.txt", nil, "ok", 201)

	// Depth infinity collection lock protects members; no shared locks.
	e.want("MKCOL", "/projects/demo/coll", nil, "", 201)
	resp, _ = e.want("LOCK", "/projects/demo/coll/", nil, lockBody, 200)
	ctok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	e.want("PUT", "/projects/demo/coll/m.txt", nil, "x", 423)
	e.want("PUT", "/projects/demo/coll/m.txt", map[string]string{"If": "(<" + ctok + ">)"}, "x", 201)
	e.want("UNLOCK", "/projects/demo/coll/m.txt", map[string]string{"Lock-Token": "<" + ctok + ">"}, "", 204)
	shared := strings.Replace(lockBody, "<D:exclusive/>", "<D:shared/>", 1)
	e.want("LOCK", "/projects/demo/coll/m.txt", nil, shared, 501)
}

func TestRequestIDLogsAndMetrics(t *testing.T) {
	e := newEnv(t, nil)
	resp, _ := e.want("PUT", "/projects/demo/m.txt", map[string]string{"X-Request-ID": "rid-123", "X-Operator": "alice"}, "x", 201)
	if resp.Header.Get("X-Request-ID") != "rid-123" {
		t.Fatalf("X-Request-ID not echoed: %v", resp.Header)
	}
	resp, _ = e.want("GET", "/projects/demo/m.txt", nil, "", 200)
	if resp.Header.Get("X-Request-ID") == "" {
		t.Fatal("no generated X-Request-ID")
	}
	e.want("PUT", "/projects/demo/m.txt", map[string]string{"If-Match": `"stale"`}, "x", 412)
	logs := e.logs.String()
	if !strings.Contains(logs, `"request_id":"rid-123"`) || !strings.Contains(logs, `"operator":"alice"`) {
		t.Fatalf("logs lack request id / operator: %s", logs)
	}
	if strings.Contains(logs, e.projects) {
		t.Fatalf("logs leak a host path: %s", logs)
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
	}
	for _, n := range []string{"sidecar_webdav_requests_total", "sidecar_webdav_request_duration_seconds", "sidecar_webdav_precondition_failures_total"} {
		if !seen[n] {
			t.Errorf("metric %s missing (have %v)", n, seen)
		}
	}
}

// rawStatus sends a raw request line (for paths net/http would clean).
func rawStatus(t *testing.T, base, req string) int {
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte(req))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestTraversalIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	os.WriteFile(filepath.Join(e.codex, "auth.json"), []byte("secret"), 0o600)
	for _, p := range []string{"/global/../../codex/auth.json", "/global/auth.json", "/projects/demo/../../codex/auth.json", "/global/skills/../auth.json"} {
		code := rawStatus(t, e.url, "GET "+p+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if code == 200 {
			t.Errorf("GET %s: 200", p)
		}
	}
}

// A listing big enough for many streamed chunks lists every member exactly
// once (in directory order, which RFC 4918 leaves open) and stays
// well-formed.
func TestPropfindLargeDirectory(t *testing.T) {
	e := newEnv(t, nil)
	dir := filepath.Join(e.projects, "demo", "big")
	os.Mkdir(dir, 0o755)
	const n = 2600
	for i := 0; i < n; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f-%05d & <x>.txt", i)), []byte("x"), 0o644)
	}
	_, body := e.want("PROPFIND", "/projects/demo/big/", map[string]string{"Depth": "1"}, "", 207)
	ms := parseMS(t, body)
	if len(ms.Responses) != n+1 {
		t.Fatalf("%d responses, want %d\n%.600s", len(ms.Responses), n+1, body)
	}
	if ms.Responses[0].Href != "/projects/demo/big/" {
		t.Fatalf("first response is %q, want the directory itself", ms.Responses[0].Href)
	}
	seen := map[string]bool{}
	for i, r := range ms.Responses[1:] {
		if seen[r.Href] || r.Propstats[0].Prop.ETag == "" {
			t.Fatalf("response %d: href %q repeated or without ETag", i, r.Href)
		}
		seen[r.Href] = true
	}
	for i := 0; i < n; i++ {
		if want := fmt.Sprintf("/projects/demo/big/f-%05d%%20&%%20%%3Cx%%3E.txt", i); !seen[want] {
			t.Fatalf("%s missing", want)
		}
	}
}

// Behind the gateway the tree sits under /dav/{agent_id}; with
// X-Forwarded-Prefix the hrefs carry it and Destination may use it.
func TestForwardedPrefix(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/p.txt", "p")
	pre := map[string]string{"Depth": "1", "X-Forwarded-Prefix": "/dav/codex-a"}
	_, body := e.want("PROPFIND", "/dav/codex-a/projects/demo/", pre, "", 207)
	for _, r := range parseMS(t, body).Responses {
		if !strings.HasPrefix(r.Href, "/dav/codex-a/projects/demo/") {
			t.Fatalf("href %q lacks the prefix", r.Href)
		}
	}
	e.want("MOVE", "/dav/codex-a/projects/demo/p.txt", map[string]string{"X-Forwarded-Prefix": "/dav/codex-a", "Destination": "/dav/codex-a/projects/demo/q.txt"}, "", 201)
	if got, _ := e.hostFile("q.txt"); got != "p" {
		t.Fatalf("MOVE with prefixed Destination: %q", got)
	}
	// A malformed prefix is refused (the gateway always sends a valid one).
	e.want("PROPFIND", "/projects/demo/", map[string]string{"Depth": "0", "X-Forwarded-Prefix": "relative<x>"}, "", 400)
	// A path outside the prefix is not found.
	e.want("PROPFIND", "/projects/demo/", pre, "", 404)
}

// Members of a directory whose own name needs XML escaping (the parent
// href is escaped once per listing) get well-formed, correct hrefs, and
// so does a content type written from the per-extension cache.
func TestPropfindEscapedParent(t *testing.T) {
	e := newEnv(t, nil)
	e.want("MKCOL", "/projects/demo/a%20&%20'b'", nil, "", 201)
	e.put("/projects/demo/a%20&%20'b'/c<1>.txt", "x")
	e.put("/projects/demo/a%20&%20'b'/d.txt", "y")
	_, body := e.want("PROPFIND", "/projects/demo/a%20&%20'b'/", map[string]string{"Depth": "1"}, "", 207)
	ms := parseMS(t, body)
	got := map[string]string{}
	for _, r := range ms.Responses {
		got[r.Href] = r.Propstats[0].Prop.ContentType
	}
	for _, want := range []string{"/projects/demo/a%20&%20%27b%27/c%3C1%3E.txt", "/projects/demo/a%20&%20%27b%27/d.txt"} {
		if ct, ok := got[want]; !ok || ct != "text/plain; charset=utf-8" {
			t.Fatalf("%s: listed %v with content type %q; hrefs %v", want, ok, ct, got)
		}
	}
}
