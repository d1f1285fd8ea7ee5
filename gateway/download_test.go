package gateway_test

// Downloads (issue #25) through the real gateway and agent-sidecar binaries
// on 127.0.0.1 with t.TempDir() volumes: a folder as a .zip read back with
// archive/zip byte for byte (denied folders, a symlink and a hard link to
// canaries outside the volume absent), a file with Range, ETag and an
// RFC 6266 Content-Disposition, GLOBAL's allowlist, bad paths refused with
// clear errors, each download audited, and nothing anywhere changed.

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

type dlStack struct {
	g                    *gatewaytest.Gateway
	projects, codex, out string
	blob                 []byte
	before               testtree.Snapshot
}

func startDownload(t *testing.T) *dlStack {
	t.Helper()
	base := t.TempDir()
	d := &dlStack{projects: filepath.Join(base, "projects"), codex: filepath.Join(base, "codex"), out: filepath.Join(base, "outside")}
	d.blob = make([]byte, 3<<20+17)
	_, _ = rand.Read(d.blob)
	files := map[string][]byte{
		"demo/src/main.go":            []byte("package main\n"),
		"demo/src/deep/er/x.txt":      []byte("deep\n"),
		"demo/bin/blob.bin":           d.blob,
		"demo/empty.txt":              nil,
		"demo/ünï cødé \"q\".txt":     []byte("names\n"),
		"demo/.git/config":            []byte("[core]\n"),
		"demo/node_modules/m/i.js":    []byte("denied\n"),
		"demo/src/vendor/v.go":        []byte("denied too\n"),
		"other/untouched.txt":         []byte("another project\n"),
		"../codex/AGENTS.md":          []byte("# agents\n"),
		"../codex/skills/s1/SKILL.md": []byte("skill\n"),
		"../codex/auth.json":          []byte(`{"secret":"never"}`),
		"../outside/canary.txt":       []byte("outside the volume\n"),
	}
	for rel, b := range files {
		p := filepath.Join(d.projects, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Symlink(filepath.Join(d.out, "canary.txt"), filepath.Join(d.projects, "demo/src/link.txt")))
	must(t, os.Symlink(d.out, filepath.Join(d.projects, "demo/dirlink")))
	must(t, os.Link(filepath.Join(d.out, "canary.txt"), filepath.Join(d.projects, "demo/hard.txt")))
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: d.projects, CodexHome: d.codex})
	d.g = gatewaytest.Start(t, gatewaytest.Options{
		Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}},
	})
	d.before = d.snap(t)
	t.Cleanup(func() { testtree.Same(t, "the volumes and beside them after downloads", d.before, d.snap(t)) })
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (d *dlStack) snap(t *testing.T) testtree.Snapshot {
	return testtree.Snap(t, filepath.Dir(d.projects), testtree.Modes(), testtree.MTimes())
}

func (d *dlStack) get(t *testing.T, query string, hdr ...string) response {
	t.Helper()
	req := d.g.NewRequest(t, http.MethodGet, api+"/agents/codex-a/download?"+query, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return do(t, req)
}

// unzip reads an archive back: entry name → content ("" and a trailing
// "/" for a directory).
func unzip(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		c, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v (a bad CRC or size)", f.Name, err)
		}
		if _, dup := out[f.Name]; dup {
			t.Fatalf("%s twice in the archive", f.Name)
		}
		out[f.Name] = c
	}
	return out
}

func names(m map[string][]byte) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestDownloadFolderZip(t *testing.T) {
	d := startDownload(t)
	r := d.get(t, demoQuery+"&path=")
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/zip" {
		t.Fatalf("project root: %d %q: %.300s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if cd := r.Header.Get("Content-Disposition"); cd != `attachment; filename="demo.zip"; filename*=UTF-8''demo.zip` {
		t.Errorf("Content-Disposition %q", cd)
	}
	got := unzip(t, r.Body)
	want := map[string][]byte{
		"demo/": nil, "demo/src/": nil, "demo/src/deep/": nil, "demo/src/deep/er/": nil, "demo/bin/": nil,
		"demo/src/main.go": []byte("package main\n"), "demo/src/deep/er/x.txt": []byte("deep\n"),
		"demo/bin/blob.bin": d.blob, "demo/empty.txt": nil, "demo/ünï cødé \"q\".txt": []byte("names\n"),
	}
	if strings.Join(names(got), "\n") != strings.Join(names(want), "\n") {
		t.Fatalf("entries:\n%s\nwant (no .git, node_modules, vendor, link, dirlink, hard link):\n%s",
			strings.Join(names(got), "\n"), strings.Join(names(want), "\n"))
	}
	for n, w := range want {
		if !bytes.Equal(got[n], w) {
			t.Errorf("%s: %d bytes, want %d, not the same bytes", n, len(got[n]), len(w))
		}
	}
	if bytes.Contains(r.Body, []byte("outside the volume")) {
		t.Error("a canary's content is in the archive")
	}

	sub := d.get(t, demoQuery+"&path=src")
	if sub.Status != 200 {
		t.Fatalf("subfolder: %d %s", sub.Status, sub.Body)
	}
	if n := strings.Join(names(unzip(t, sub.Body)), ","); n != "src/,src/deep/,src/deep/er/,src/deep/er/x.txt,src/main.go" {
		t.Errorf("subfolder entries %s", n)
	}

	// The record is written once the answer is out: the client may read
	// the archive's end first.
	var downloads int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		downloads = 0
		for _, rec := range d.g.AuditRecords(t) {
			if rec["action"] == "download" && rec["result"] != "error" && rec["source_path"] != nil {
				downloads++
			}
		}
		if downloads >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if downloads != 2 {
		t.Errorf("%d download audit records, want 2", downloads)
	}
}

func TestDownloadGlobalAllowlist(t *testing.T) {
	d := startDownload(t)
	r := d.get(t, "workspace.scope=GLOBAL&path=")
	if r.Status != 200 {
		t.Fatalf("GLOBAL root: %d %s", r.Status, r.Body)
	}
	got := unzip(t, r.Body)
	if n := strings.Join(names(got), ","); n != "global/,global/AGENTS.md,global/skills/,global/skills/s1/,global/skills/s1/SKILL.md" {
		t.Errorf("GLOBAL entries %s (auth.json must never be in it)", n)
	}
	if bytes.Contains(r.Body, []byte("secret")) {
		t.Error("a CODEX_HOME secret is in the archive")
	}
	if r := d.get(t, "workspace.scope=GLOBAL&path=auth.json"); r.Status != 403 || r.reason(t) != "OUTSIDE_GLOBAL" {
		t.Errorf("auth.json: %d %s", r.Status, r.Body)
	}
}

func TestDownloadFile(t *testing.T) {
	d := startDownload(t)
	r := d.get(t, demoQuery+"&path=bin/blob.bin")
	if r.Status != 200 || !bytes.Equal(r.Body, d.blob) {
		t.Fatalf("blob: %d, %d bytes (want %d, byte for byte)", r.Status, len(r.Body), len(d.blob))
	}
	if cd := r.Header.Get("Content-Disposition"); cd != `attachment; filename="blob.bin"; filename*=UTF-8''blob.bin` {
		t.Errorf("Content-Disposition %q", cd)
	}
	etag := r.Header.Get("ETag")
	if etag == "" || r.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("ETag %q, Accept-Ranges %q", etag, r.Header.Get("Accept-Ranges"))
	}
	rg := d.get(t, demoQuery+"&path=bin/blob.bin", "Range", "bytes=1000-1999")
	if rg.Status != 206 || !bytes.Equal(rg.Body, d.blob[1000:2000]) {
		t.Errorf("Range: %d, %d bytes", rg.Status, len(rg.Body))
	}
	if nm := d.get(t, demoQuery+"&path=bin/blob.bin", "If-None-Match", etag); nm.Status != 304 {
		t.Errorf("If-None-Match: %d", nm.Status)
	}
	u := d.get(t, demoQuery+"&path="+url.QueryEscape("ünï cødé \"q\".txt"))
	want := `attachment; filename="_n_ c_d_ _q_.txt"; filename*=UTF-8''%C3%BCn%C3%AF%20c%C3%B8d%C3%A9%20%22q%22.txt`
	if u.Status != 200 || string(u.Body) != "names\n" {
		t.Errorf("unicode name: %d %q", u.Status, u.Body)
	}
	if cd := u.Header.Get("Content-Disposition"); cd != want {
		t.Errorf("Content-Disposition %q\nwant %q", cd, want)
	}
}

func TestDownloadRefusals(t *testing.T) {
	d := startDownload(t)
	for _, c := range []struct {
		query, reason string
		status        int
	}{
		{demoQuery + "&path=../other", "INVALID_PATH", 400},
		{demoQuery + "&path=src/../bin", "INVALID_PATH", 400},
		{demoQuery + "&path=src//main.go", "INVALID_PATH", 400},
		{demoQuery + "&path=/src", "INVALID_PATH", 400},
		{demoQuery + "&path=src/", "INVALID_PATH", 400},
		{demoQuery + "&path=.git", "DENYLISTED", 403},
		{demoQuery + "&path=node_modules/m/i.js", "DENYLISTED", 403},
		{demoQuery + "&path=src/link.txt", "SYMLINK", 403},
		{demoQuery + "&path=dirlink", "SYMLINK", 403},
		{demoQuery + "&path=dirlink/canary.txt", "SYMLINK", 403},
		{demoQuery + "&path=hard.txt", "MULTIPLE_LINKS", 403},
		{demoQuery + "&path=missing", "NOT_FOUND", 404},
		{"workspace.scope=PROJECT&workspace.project_name=nope&path=", "PROJECT_NOT_FOUND", 404},
		{"workspace.scope=NOPE&path=", "INVALID_PATH", 400},
		{"workspace.scope=PROJECT&workspace.project_name=..&path=", "INVALID_PATH", 400},
	} {
		r := d.get(t, c.query)
		if r.Status != c.status || r.reason(t) != c.reason {
			t.Errorf("%s: %d %s, want %d %s", c.query, r.Status, r.Body, c.status, c.reason)
		}
		if msg, _ := r.JSON(t)["message"].(string); msg == "" || strings.Contains(msg, d.projects) {
			t.Errorf("%s: message %q (clear, no host path)", c.query, msg)
		}
	}
}

// TestUploadBinaryAndLimit: uploads are WebDAV PUTs through the gateway
// (any bytes); the sidecar's maxUploadSize is published on OPTIONS (what
// the portal reads before sending) and a larger body is refused up front
// with the number, changing nothing.
func TestUploadBinaryAndLimit(t *testing.T) {
	projects := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(projects, "demo"), 0o755))
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, Configure: func(c *sidecar.Config) {
		c.Services.Project.MaxUploadSize = 1000
	}})
	g := gatewaytest.Start(t, gatewaytest.Options{
		Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}, Writable: true,
	})
	before := testtree.Snap(t, projects, testtree.Modes())
	opt := do(t, g.NewRequest(t, http.MethodOptions, "/dav/codex-a/projects/demo/", nil))
	if opt.Header.Get("X-Max-Upload-Size") != "1000" {
		t.Fatalf("OPTIONS: %d, X-Max-Upload-Size %q", opt.Status, opt.Header.Get("X-Max-Upload-Size"))
	}
	big := g.NewRequest(t, http.MethodPut, "/dav/codex-a/projects/demo/big.bin", bytes.NewReader(make([]byte, 1001)))
	big.Header.Set("If-None-Match", "*")
	if r := do(t, big); r.Status != 413 || !strings.Contains(string(r.Body), "1000 bytes") {
		t.Errorf("too large: %d %s", r.Status, r.Body)
	}
	testtree.Same(t, "after a refused upload", before, testtree.Snap(t, projects, testtree.Modes()))
	blob := make([]byte, 1000)
	_, _ = rand.Read(blob)
	put := g.NewRequest(t, http.MethodPut, "/dav/codex-a/projects/demo/"+url.PathEscape("ünï (1).bin"), bytes.NewReader(blob))
	put.Header.Set("If-None-Match", "*")
	if r := do(t, put); r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	got, err := os.ReadFile(filepath.Join(projects, "demo", "ünï (1).bin"))
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("uploaded bytes differ: %v", err)
	}
	after := testtree.Snap(t, projects, testtree.Modes())
	if d := testtree.Diff(before, after); len(d) != 1 {
		t.Errorf("changes beside the upload: %v", d)
	}
}

// TestRESTUpload: the REST upload writes any bytes through the sidecar's
// PUT on a gateway whose WebDAV view is read-only (which still refuses a
// client's PUT): the limit its OPTIONS publishes, create only, a stale
// revision refused, replace by revision, replace keeping a version
// (checkpoints on), the limit.
func TestRESTUpload(t *testing.T) {
	projects := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(projects, "demo", "bin"), 0o755)) // before the start chowns it
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, Configure: func(c *sidecar.Config) {
		c.Services.Project.MaxUploadSize = 4096
		c.Services.Checkpoints.Enabled = true
	}})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	up := func(query string, body []byte) response {
		return do(t, g.NewRequest(t, http.MethodPut, api+"/agents/codex-a/upload?"+demoQuery+"&"+query, bytes.NewReader(body)))
	}
	onDisk := func() []byte {
		b, err := os.ReadFile(filepath.Join(projects, "demo", "bin", "x.bin"))
		must(t, err)
		return b
	}
	v1, v2, v3 := make([]byte, 3000), make([]byte, 2000), make([]byte, 1000)
	for _, b := range [][]byte{v1, v2, v3} {
		_, _ = rand.Read(b)
	}
	for _, q := range []string{demoQuery, "workspace.scope=GLOBAL"} {
		opt := do(t, g.NewRequest(t, http.MethodOptions, api+"/agents/codex-a/upload?"+q, nil))
		if opt.Status != 204 || opt.Header.Get("X-Max-Upload-Size") != "4096" || opt.Header.Get("Allow") != "OPTIONS, PUT" || opt.Header.Get("DAV") != "" {
			t.Errorf("OPTIONS %s: %d, X-Max-Upload-Size %q, Allow %q, DAV %q", q, opt.Status, opt.Header.Get("X-Max-Upload-Size"), opt.Header.Get("Allow"), opt.Header.Get("DAV"))
		}
	}
	if r := do(t, g.NewRequest(t, http.MethodOptions, api+"/agents/codex-a/upload?workspace.scope=PROJECT", nil)); r.Status != 400 || r.reason(t) != "INVALID_PATH" {
		t.Errorf("OPTIONS without a project: %d %s", r.Status, r.Body)
	}
	if r := up("path=bin/x.bin", v1); r.Status != 201 || !bytes.Equal(onDisk(), v1) {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if r := up("path=bin/x.bin&if_exists=fail", v2); r.Status != 409 || r.reason(t) != "REVISION_MISMATCH" || !bytes.Equal(onDisk(), v1) {
		t.Errorf("create over an existing name: %d %s", r.Status, r.Body)
	}
	if r := up("path=bin/x.bin&if_exists=replace&expected_revision=stale", v2); r.Status != 412 && r.Status != 409 || !bytes.Equal(onDisk(), v1) {
		t.Errorf("a stale revision: %d %s", r.Status, r.Body)
	}
	etag := do(t, g.NewRequest(t, http.MethodGet, api+"/agents/codex-a/download?"+demoQuery+"&path=bin/x.bin", nil)).Header.Get("ETag")
	rev := strings.Trim(etag, `"`)
	if r := up("path=bin/x.bin&if_exists=replace&expected_revision="+url.QueryEscape(rev), v2); r.Status >= 300 || !bytes.Equal(onDisk(), v2) {
		t.Fatalf("replace by revision %q: %d %s", rev, r.Status, r.Body)
	}
	if r := up("path=bin/x.bin&if_exists=replace", v3); r.Status >= 300 || !bytes.Equal(onDisk(), v3) {
		t.Fatalf("replace keeping a version: %d %s", r.Status, r.Body)
	}
	var kept bool
	for deadline := time.Now().Add(5 * time.Second); !kept && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, rec := range g.AuditRecords(t) {
			if id, _ := rec["checkpoint_id"].(string); rec["action"] == "webdav.PUT" && id != "" {
				kept = true
			}
		}
	}
	if !kept {
		t.Error("no audited PUT names the version it kept")
	}
	if r := up("path=bin/big.bin", make([]byte, 5000)); r.Status != 413 || !strings.Contains(string(r.Body), "4096 bytes") {
		t.Errorf("too large: %d %s", r.Status, r.Body)
	}
	if r := up("path=../x", v1); r.Status != 400 || r.reason(t) != "INVALID_PATH" {
		t.Errorf("bad path: %d %s", r.Status, r.Body)
	}
	dav := g.NewRequest(t, http.MethodPut, "/dav/codex-a/projects/demo/bin/y.bin", bytes.NewReader(v1))
	if r := do(t, dav); r.Status != 405 {
		t.Errorf("a WebDAV client's PUT on the read-only view: %d", r.Status)
	}
	if _, err := os.Stat(filepath.Join(projects, "demo", "bin", "big.bin")); err == nil {
		t.Error("the refused upload left a file")
	}
}
