package davproxy_test

// Statuses through the real gateway binary after "Expect: 100-continue",
// sent by curl (the client that sends it for large or chunked bodies), for
// every write method; and a hung sidecar, a long download and the
// gateway's log through failing sidecars.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// curlResult is one curl exchange: the final status and how many 100
// Continue the client saw before it.
type curlResult struct {
	status    int
	continues int
	verbose   string
}

var curlStatusLine = regexp.MustCompile(`(?m)^< HTTP/1\.1 (\d{3})`)

// curl sends method to the gateway with a body from file and
// "Expect: 100-continue", as the admin over Basic auth.
func (st *stack) curl(t *testing.T, method, path, file string, hdr ...string) curlResult {
	t.Helper()
	bin, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is not installed: run `make setup`")
	}
	args := []string{"-sS", "-v", "-o", "/dev/null", "--max-time", "30", "--http1.1",
		"-u", "curl:" + st.gw.AdminToken, "-X", method, "-H", "Expect: 100-continue", "--expect100-timeout", "10"}
	if file != "" {
		args = append(args, "-T", file)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		args = append(args, "-H", hdr[i]+": "+hdr[i+1])
	}
	args = append(args, st.gw.URL+path)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("curl %s %s: %v\n%s", method, path, err, stderr.String())
	}
	v := strings.ReplaceAll(stderr.String(), st.gw.AdminToken, "[token]")
	var res curlResult
	res.verbose = v
	for _, m := range curlStatusLine.FindAllStringSubmatch(v, -1) {
		if m[1] == "100" {
			res.continues++
			continue
		}
		fmt.Sscan(m[1], &res.status)
	}
	return res
}

func TestGatewayWebDAVExpectContinue(t *testing.T) {
	forBackends(t, func(t *testing.T, be string) {
		const maxBody = 1 << 20
		st := startStack(t, stackOptions{writable: true, backend: be, maxBody: maxBody}, "codex-a")
		dir := t.TempDir()
		file := func(name string, size int) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, bytes.Repeat([]byte("b"), size), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		small, big := file("small", 64<<10), file("big", 2*maxBody)
		lockinfo := filepath.Join(dir, "lockinfo.xml")
		if err := os.WriteFile(lockinfo, []byte(`<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>curl</D:owner></D:lockinfo>`), 0o644); err != nil {
			t.Fatal(err)
		}
		proppatch := filepath.Join(dir, "proppatch.xml")
		if err := os.WriteFile(proppatch, []byte(`<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:x"><D:set><D:prop><Z:color>blue</Z:color></D:prop></D:set></D:propertyupdate>`), 0o644); err != nil {
			t.Fatal(err)
		}
		projects := st.agents["codex-a"].ProjectsDir
		readme := filepath.Join(projects, "demo/README.md")
		const original = "# demo of codex-a\n"
		base := "/dav/codex-a/projects/demo/"
		etag := func(name string) string {
			return st.do(t, "basic", "HEAD", base+name, nil).header.Get("ETag")
		}
		check := func(name string, got curlResult, want int, rid string, code, reason string) {
			t.Helper()
			if got.status != want {
				t.Errorf("%s: status %d, want %d (100 Continue seen %d times)\n%s", name, got.status, want, got.continues, got.verbose)
			}
			if got.continues > 1 {
				t.Errorf("%s: %d interim 100 responses", name, got.continues)
			}
			if rid == "" {
				return
			}
			rec := waitAudit(t, st.gw, func(r map[string]any) bool { return r["request_id"] == rid }, 1)[0]
			if got, _ := rec["reason"].(string); fmt.Sprint(rec["http_status"]) != fmt.Sprint(want) || rec["grpc_code"] != code || got != reason {
				t.Errorf("%s: audit %v, want %d %s %q", name, rec, want, code, reason)
			}
		}
		unchanged := func(name string) {
			t.Helper()
			if b, _ := os.ReadFile(readme); string(b) != original {
				t.Errorf("%s: README changed to %d bytes", name, len(b))
			}
		}

		// A lost update: 412 after the body went up.
		r := st.curl(t, "PUT", base+"README.md", small, "If-Match", `"stale"`, "X-Request-ID", "rid-e412")
		check("PUT stale If-Match", r, 412, "rid-e412", "Aborted", "REVISION_MISMATCH")
		if be == contractBackend && r.continues != 1 {
			t.Errorf("PUT: the sidecar's 100 Continue did not reach the client:\n%s", r.verbose)
		}
		unchanged("412")
		// Too large.
		r = st.curl(t, "PUT", base+"README.md", big, "If-Match", etag("README.md"), "X-Request-ID", "rid-e413")
		check("PUT over the limit", r, 413, "rid-e413", "ResourceExhausted", "TOO_LARGE")
		unchanged("413")
		// An overwrite without a precondition.
		r = st.curl(t, "PUT", base+"README.md", small, "X-Request-ID", "rid-e428")
		check("PUT without precondition", r, 428, "rid-e428", "FailedPrecondition", "PRECONDITION_REQUIRED")
		for _, m := range []string{"DELETE", "MOVE"} {
			r = st.curl(t, m, base+"README.md", small, "Destination", base+"moved.md", "X-Request-ID", "rid-e428-"+m)
			check(m+" without precondition", r, 428, "rid-e428-"+m, "FailedPrecondition", "PRECONDITION_REQUIRED")
		}
		unchanged("428")
		// Locked: LOCK, then a write without the token is 423.
		r = st.curl(t, "LOCK", base+"README.md", lockinfo, "Timeout", "Second-60", "X-Request-ID", "rid-elock")
		check("LOCK", r, 200, "rid-elock", "OK", "")
		token := ""
		for _, l := range strings.Split(r.verbose, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "< Lock-Token: "); ok {
				token = strings.TrimSpace(v)
			}
		}
		if token == "" {
			t.Fatalf("LOCK: no Lock-Token\n%s", r.verbose)
		}
		r = st.curl(t, "PUT", base+"README.md", small, "If-Match", etag("README.md"), "X-Request-ID", "rid-e423")
		check("PUT on a locked file", r, 423, "rid-e423", "Aborted", "LOCKED")
		unchanged("423")
		r = st.curl(t, "PROPPATCH", base+"README.md", proppatch, "X-Request-ID", "rid-eproppatch")
		if r.status != 207 && r.status != 403 && r.status != 423 {
			t.Errorf("PROPPATCH: %d", r.status)
		}
		r = st.curl(t, "UNLOCK", base+"README.md", small, "Lock-Token", token, "X-Request-ID", "rid-eunlock")
		check("UNLOCK", r, 204, "rid-eunlock", "OK", "")
		// Successes after 100 Continue.
		r = st.curl(t, "PUT", base+"README.md", small, "If-Match", etag("README.md"), "X-Request-ID", "rid-eput")
		if r.status != 204 && r.status != 201 {
			t.Errorf("PUT with the current ETag: %d\n%s", r.status, r.verbose)
		}
		if b, _ := os.ReadFile(readme); len(b) != 64<<10 {
			t.Errorf("README has %d bytes after the PUT", len(b))
		}
		r = st.curl(t, "MKCOL", base+"newdir", small, "X-Request-ID", "rid-emkcol")
		check("MKCOL with a body", r, 415, "", "", "")
		r = st.curl(t, "COPY", base+"README.md", small, "Destination", base+"copy.md", "X-Request-ID", "rid-ecopy")
		check("COPY", r, 201, "rid-ecopy", "OK", "")
		r = st.curl(t, "MOVE", base+"copy.md", small, "Destination", base+"moved.md", "If-Match", etag("copy.md"), "X-Request-ID", "rid-emove")
		check("MOVE", r, 201, "rid-emove", "OK", "")
		r = st.curl(t, "DELETE", base+"moved.md", small, "If-Match", etag("moved.md"), "X-Request-ID", "rid-edelete")
		check("DELETE", r, 204, "rid-edelete", "OK", "")
		for _, p := range []string{"copy.md", "moved.md", "newdir"} {
			if _, err := os.Stat(filepath.Join(projects, "demo", p)); err == nil {
				t.Errorf("%s exists", p)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(projects, "demo/src/main.go")); string(b) != "package main\n" {
			t.Errorf("main.go changed: %q", b)
		}
		st.assertLogsClean(t)
	})
}

// A hung sidecar: 504 within sidecar.timeout, for a read and a write with
// Expect; a download that takes several times the timeout completes; the
// gateway's log names no sidecar address.
func TestGatewayWebDAVHungSidecar(t *testing.T) {
	const timeout = time.Second
	st := startStack(t, stackOptions{writable: true, backend: contractBackend, timeout: timeout}, "codex-a")
	small := filepath.Join(t.TempDir(), "small")
	if err := os.WriteFile(small, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"GET", "PROPFIND", "PUT"} {
		start := time.Now()
		var status int
		if m == "PUT" {
			status = st.curl(t, m, "/dav/codex-a/projects/demo/stall", small, "If-None-Match", "*").status
		} else {
			status = st.do(t, "basic", m, "/dav/codex-a/projects/demo/stall", nil, "Depth", "0").status
		}
		if took := time.Since(start); status != http.StatusGatewayTimeout || took > timeout+3*time.Second {
			t.Errorf("%s of a hung sidecar: %d after %v (timeout %v)", m, status, took, timeout)
		}
	}
	f := st.agents["codex-a"].fake
	f.DripSize, f.DripTime = 8<<20, 3*timeout
	req, _ := http.NewRequest("GET", st.gw.URL+"/dav/codex-a/projects/demo/drip", nil)
	req.SetBasicAuth("x", st.gw.AdminToken)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || n != f.DripSize || time.Since(start) < 2*timeout {
		t.Errorf("long GET: %d, %d of %d bytes in %v, %v", resp.StatusCode, n, f.DripSize, time.Since(start), err)
	}
	if err := st.gw.Stop(); err != nil {
		t.Log(err)
	}
	if !strings.Contains(st.gw.Logs(), "sidecar WebDAV request failed") {
		t.Errorf("the timeouts are not logged:\n%s", st.gw.Logs())
	}
	st.assertLogsClean(t)
}
