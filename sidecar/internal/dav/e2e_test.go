package dav_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// send issues one request with a path taken exactly as written (never
// cleaned by the client) and returns status, reason header and body.
func send(t *testing.T, method, base, rawPath string, hdr map[string]string, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = rawPath // sent verbatim as the request-target
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawPath, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(errtable.ReasonHeader), string(b)
}

func fixture(t *testing.T, files map[string]string) string {
	t.Helper()
	root := filepath.Join(proctest.TempDir(t, "dav-e2e-"), "projects")
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Unsafe request paths, Destinations and If: resource tags are refused
// before anything acts on them (issue #13: a GET, PUT or DELETE of
// /projects/demo/src/../../other/x acted on project other), through the
// real agent-sidecar binary in its production (strict) configuration.
func TestUnsafePathsRefused(t *testing.T) {
	root := fixture(t, map[string]string{"demo/src/a.txt": "a", "other/x": "canary", "other/a%2Fb": "odd name"})
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: root})
	before := testtree.Snap(t, root)
	unsafe := []string{
		"/projects/demo/src/../../other/x",
		"/projects/demo/src/..%2F..%2Fother/x",
		"/projects/demo/./src/a.txt",
		"/projects/demo//src/a.txt",
		"/projects/demo/src%2Fa.txt",
		"/projects/demo/src%5Ca.txt",
		"/projects/demo/a%00b",
		"/projects/demo/%FF.txt",
		"/projects/demo/%2e%2e/other/x",
	}
	for _, p := range unsafe {
		for _, m := range []string{"GET", "HEAD", "PUT", "DELETE", "PROPFIND", "MKCOL", "LOCK", "PROPPATCH"} {
			hdr := map[string]string{"Depth": "0", "If-Match": `"any"`}
			st, reason, _ := send(t, m, sc.PlainDavURL(), p, hdr, "")
			if st != 400 || (m != "HEAD" && reason != "INVALID_PATH") {
				t.Errorf("%s %s: %d %q, want 400 INVALID_PATH", m, p, st, reason)
			}
		}
		for _, m := range []string{"COPY", "MOVE"} {
			st, reason, _ := send(t, m, sc.PlainDavURL(), "/projects/demo/src/a.txt", map[string]string{"Destination": sc.PlainDavURL() + p, "Overwrite": "T", "If-Match": `"any"`}, "")
			if st != 400 || reason != "INVALID_PATH" {
				t.Errorf("%s to %s: %d %q, want 400 INVALID_PATH", m, p, st, reason)
			}
		}
		st, reason, _ := send(t, "PUT", sc.PlainDavURL(), "/projects/demo/src/a.txt", map[string]string{"If": "<" + sc.PlainDavURL() + p + "> ([\"x\"])"}, "x")
		if st != 400 || reason != "INVALID_PATH" {
			t.Errorf("If: tag %s: %d %q, want 400 INVALID_PATH", p, st, reason)
		}
	}
	// A request-target starting with "//" (net/http would read a host
	// there), sent on a raw connection as a client may write it.
	for _, m := range []string{"GET", "DELETE"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(sc.PlainDavURL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, m+" //projects/other/x HTTP/1.1\r\nHost: x\r\nIf-Match: \"any\"\r\nConnection: close\r\n\r\n")
		line := make([]byte, 12)
		io.ReadFull(conn, line)
		conn.Close()
		if string(line) != "HTTP/1.1 400" {
			t.Errorf("%s //projects/other/x: %q, want 400", m, line)
		}
	}
	// Invalid UTF-8 in the Destination and If headers themselves.
	for _, hdr := range []map[string]string{
		{"Destination": "/projects/demo/\xff"},
		{"Destination": "/projects/demo/b.txt", "If": "(<opaquelocktoken:\xff>)"},
	} {
		st, reason, _ := send(t, "MOVE", sc.PlainDavURL(), "/projects/demo/src/a.txt", hdr, "")
		if st != 400 || reason == "" {
			t.Errorf("MOVE with %q: %d %q, want 400 with a reason", hdr, st, reason)
		}
	}
	testtree.Same(t, "volume after unsafe requests", before, testtree.Snap(t, root))
	// The safe spelling of a name that looks odd still works.
	if st, _, body := send(t, "GET", sc.PlainDavURL(), "/projects/other/a%252Fb", nil, ""); st != 200 || body != "odd name" {
		t.Errorf("GET of a name holding %%2F: %d %q", st, body)
	}
}

// A file with more than one hard link is never read, copied or replaced
// over WebDAV, and listings do not offer it, so rclone copy of the
// directory succeeds (issue #13). The fixture is a hard link between two
// canary files inside the test's temp dir.
func TestHardLinks(t *testing.T) {
	root := fixture(t, map[string]string{"demo/a.txt": "canary", "demo/plain.txt": "plain", "demo/sub/s.txt": "s"})
	if err := os.Link(filepath.Join(root, "demo", "a.txt"), filepath.Join(root, "demo", "sub", "b.txt")); err != nil {
		t.Fatal(err)
	}
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: root})
	before := testtree.Snap(t, root)
	req, _ := http.NewRequest("PROPFIND", sc.PlainDavURL()+"/projects/demo/", nil)
	req.Header.Set("Depth", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 207 || strings.Contains(string(b), "a.txt") || !strings.Contains(string(b), "plain.txt") {
		t.Fatalf("listing offers the multi-link file or lost the rest: %d\n%s", resp.StatusCode, b)
	}
	// What the plain file's current ETag is (for writes that would be
	// allowed but for the links).
	hresp, err := http.Head(sc.PlainDavURL() + "/projects/demo/plain.txt")
	if err != nil {
		t.Fatal(err)
	}
	hresp.Body.Close()
	plainTag := hresp.Header.Get("ETag")
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
	}{
		{"GET", "/projects/demo/a.txt", nil},
		{"PUT", "/projects/demo/a.txt", map[string]string{"If-Match": `"any"`}},
		{"COPY", "/projects/demo/a.txt", map[string]string{"Destination": "/projects/demo/c.txt"}},
		{"COPY", "/projects/demo/plain.txt", map[string]string{"Destination": "/projects/demo/a.txt", "Overwrite": "T"}},
		{"MOVE", "/projects/demo/plain.txt", map[string]string{"Destination": "/projects/demo/sub/b.txt", "Overwrite": "T", "If-Match": plainTag}},
	} {
		st, reason, _ := send(t, c.method, sc.PlainDavURL(), c.path, c.hdr, "replacement")
		if st != 403 || reason != "MULTIPLE_LINKS" {
			t.Errorf("%s %s %v: %d %q, want 403 MULTIPLE_LINKS", c.method, c.path, c.hdr, st, reason)
		}
	}
	testtree.Same(t, "volume after multi-link requests", before, testtree.Snap(t, root))
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root, "demo", "a.txt"), &st); err != nil || st.Nlink != 2 {
		t.Fatalf("the hard link was broken: nlink %d %v", st.Nlink, err)
	}

	rclone := lookTool(t, "rclone")
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rclone, "--config", filepath.Join(work, "none.conf"), "--retries", "1", "--low-level-retries", "1",
		"copy", "dav:projects/demo", filepath.Join(work, "down"))
	cmd.Env = append(os.Environ(), "RCLONE_CONFIG_DAV_TYPE=webdav", "RCLONE_CONFIG_DAV_URL="+sc.PlainDavURL(), "RCLONE_CONFIG_DAV_VENDOR=other", "HOME="+work)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rclone copy of a directory holding a multi-link file: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(filepath.Join(work, "down", "plain.txt")); string(got) != "plain" {
		t.Errorf("rclone copy: plain.txt %q", got)
	}
	for _, n := range []string{"a.txt", "sub/b.txt"} {
		if _, err := os.Stat(filepath.Join(work, "down", n)); err == nil {
			t.Errorf("rclone copied the multi-link file %s", n)
		}
	}
}

// The gateway's wire contract, through the real binary: the path arrives
// with the prefix, hrefs come back under it, an invalid prefix is 400 and
// a path outside it 404; writes need a precondition (428 with its reason).
func TestWireContract(t *testing.T) {
	root := fixture(t, map[string]string{"demo/f.txt": "f"})
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: root})
	pre := map[string]string{"X-Forwarded-Prefix": "/dav/codex-a", "Depth": "1"}
	st, _, body := send(t, "PROPFIND", sc.PlainDavURL(), "/dav/codex-a/projects/demo/", pre, "")
	if st != 207 || !strings.Contains(body, "<D:href>/dav/codex-a/projects/demo/f.txt</D:href>") {
		t.Fatalf("prefixed PROPFIND: %d\n%s", st, body)
	}
	if st, reason, _ := send(t, "PROPFIND", sc.PlainDavURL(), "/projects/demo/", pre, ""); st != 404 || reason != "NOT_FOUND" {
		t.Errorf("path outside the prefix: %d %q", st, reason)
	}
	if st, _, _ := send(t, "PROPFIND", sc.PlainDavURL(), "/dav/codex-a/projects/demo/", map[string]string{"X-Forwarded-Prefix": "/dav/a b", "Depth": "0"}, ""); st != 400 {
		t.Errorf("invalid prefix: %d", st)
	}
	before := testtree.Snap(t, root)
	if st, reason, _ := send(t, "PUT", sc.PlainDavURL(), "/dav/codex-a/projects/demo/f.txt", pre, "x"); st != 428 || reason != "PRECONDITION_REQUIRED" {
		t.Errorf("unconditional PUT: %d %q", st, reason)
	}
	if st, reason, _ := send(t, "DELETE", sc.PlainDavURL(), "/dav/codex-a/projects/demo/f.txt", pre, ""); st != 428 || reason != "PRECONDITION_REQUIRED" {
		t.Errorf("unconditional DELETE: %d %q", st, reason)
	}
	testtree.Same(t, "volume after unconditional writes", before, testtree.Snap(t, root))
	ro := map[string]string{"X-Forwarded-Prefix": "/dav/codex-a", "X-Workspace-Read-Only": "true", "If-Match": `"x"`}
	if st, reason, _ := send(t, "DELETE", sc.PlainDavURL(), "/dav/codex-a/projects/demo/f.txt", ro, ""); st != 405 || reason != "READ_ONLY" {
		t.Errorf("read-only DELETE: %d %q", st, reason)
	}
	testtree.Same(t, "volume after read-only writes", before, testtree.Snap(t, root))
}
