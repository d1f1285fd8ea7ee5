package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

const api = "/api/v1/agent-gateway/agents"

// client talks to the gateway as one admin, through its public surfaces only.
type client struct {
	t     *testing.T
	gw    *gatewaytest.Gateway
	token string
}

type reply struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (c *client) do(method, path string, body any, hdr ...string) reply {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.gw.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	_ = json.Unmarshal(b, &r.json)
	return r
}

// must fails unless the reply has the wanted status.
func (c *client) must(want int, r reply, what string) reply {
	c.t.Helper()
	if r.status != want {
		c.t.Fatalf("%s: status %d, want %d: %s", what, r.status, want, r.body)
	}
	return r
}

// reason returns the ErrorInfo reason of an error reply.
func reason(r reply) string {
	details, _ := r.json["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok {
			if s, ok := m["reason"].(string); ok {
				return s
			}
		}
	}
	return ""
}

func q(agent, scope, project, path string) string {
	v := url.Values{"workspace.scope": {scope}}
	if project != "" {
		v.Set("workspace.project_name", project)
	}
	if path != "" {
		v.Set("path", path)
	}
	return api + "/" + agent + "/projects/%s?" + v.Encode()
}

func entryNames(r reply) []string {
	var names []string
	list, _ := r.json["entries"].([]any)
	for _, e := range list {
		names = append(names, e.(map[string]any)["name"].(string))
	}
	return names
}

func ws(scope, project string) map[string]any {
	m := map[string]any{"scope": scope}
	if project != "" {
		m["project_name"] = project
	}
	return m
}

func isRealDir(t *testing.T, p string) bool {
	t.Helper()
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// TestAcceptance runs PRD §15.5 steps 1-10 in order; each step is a subtest
// and later steps depend on earlier ones, so the first failure stops the run.
func TestAcceptance(t *testing.T) {
	a := sidecartest.Start(t, sidecartest.Options{})
	b := sidecartest.Start(t, sidecartest.Options{AgentID: "codex-b"})
	gw := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{
		{ID: "codex-a", RPCAddr: a.RPCAddr, DavURL: a.DavURL},
		{ID: "codex-b", RPCAddr: b.RPCAddr, DavURL: b.DavURL},
	}})
	c := &client{t: t, gw: gw, token: gw.AdminToken}
	secretText := "sk-acceptance-" + time.Now().Format("150405.000000")
	bodyText := "# demo\n\nacceptance body text 7f3a\n"
	// Canaries the product must never reveal or touch.
	for _, sc := range []*sidecartest.Sidecar{a, b} {
		for name, content := range map[string]string{"auth.json": `{"key":"` + secretText + `"}`, "config.toml": "token = \"" + secretText + "\"\n"} {
			p := filepath.Join(sc.CodexHome, name)
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			sidecartest.Chown(t, p)
		}
	}
	outside := t.TempDir()
	canary := filepath.Join(outside, "canary.txt")
	if err := os.WriteFile(canary, []byte("canary "+secretText), 0o644); err != nil {
		t.Fatal(err)
	}

	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("1 same project in both agents with its own .git", func(t *testing.T) {
		for _, agent := range []string{"codex-a", "codex-b"} {
			r := c.must(200, c.do("POST", api+"/"+agent+"/projects", map[string]any{"name": "demo"}), "create demo in "+agent)
			if r.json["name"] != "demo" || r.json["git_initialized"] != true {
				t.Fatalf("%s: created project = %s", agent, r.body)
			}
		}
		for _, sc := range []*sidecartest.Sidecar{a, b} {
			if !isRealDir(t, filepath.Join(sc.ProjectsDir, "demo", ".git")) {
				t.Fatalf("%s/demo/.git is not a real directory", sc.ProjectsDir)
			}
		}
		if a.ProjectsDir == b.ProjectsDir {
			t.Fatal("the agents share a volume")
		}
		c.must(409, c.do("POST", api+"/codex-a/projects", map[string]any{"name": "demo"}), "create demo twice")
	})

	step("2 .git is never listed", func(t *testing.T) {
		for _, agent := range []string{"codex-a", "codex-b"} {
			r := c.must(200, c.do("GET", strings.Replace(q(agent, "PROJECT", "demo", ""), "%s", "entries", 1), nil), "list demo")
			if slices.Contains(entryNames(r), ".git") {
				t.Fatalf("%s lists .git: %v", agent, entryNames(r))
			}
			g := c.do("GET", strings.Replace(q(agent, "PROJECT", "demo", ".git/config"), "%s", "files", 1), nil)
			if g.status != 403 || reason(g) != "DENYLISTED" {
				t.Fatalf("%s: GET .git/config = %d %s, want 403 DENYLISTED", agent, g.status, g.body)
			}
			d := c.davGet("/dav/" + agent + "/projects/demo/.git/HEAD")
			if d.status != 403 && d.status != 404 {
				t.Fatalf("%s: WebDAV GET .git/HEAD = %d", agent, d.status)
			}
		}
	})

	var staleRev string
	step("3 edit in codex-a, invisible in codex-b", func(t *testing.T) {
		r := c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{
			"workspace": ws("PROJECT", "demo"), "parent_path": "", "name": "notes.md", "type": "ENTRY_TYPE_FILE"}), "create notes.md")
		staleRev = r.json["revision"].(string)
		u := c.must(200, c.do("PUT", api+"/codex-a/projects/files", map[string]any{
			"workspace": ws("PROJECT", "demo"), "path": "notes.md", "content": bodyText, "expected_revision": staleRev}), "save notes.md")
		if u.json["revision"] == staleRev {
			t.Fatal("revision did not change on save")
		}
		g := c.must(200, c.do("GET", strings.Replace(q("codex-a", "PROJECT", "demo", "notes.md"), "%s", "files", 1), nil), "read back")
		if g.json["content"] != bodyText {
			t.Fatalf("read back %q", g.json["content"])
		}
		if got, _ := os.ReadFile(filepath.Join(a.ProjectsDir, "demo", "notes.md")); string(got) != bodyText {
			t.Fatalf("on disk: %q", got)
		}
		lb := c.must(200, c.do("GET", strings.Replace(q("codex-b", "PROJECT", "demo", ""), "%s", "entries", 1), nil), "list codex-b demo")
		if slices.Contains(entryNames(lb), "notes.md") {
			t.Fatal("codex-b shows codex-a's file")
		}
		c.must(404, c.do("GET", strings.Replace(q("codex-b", "PROJECT", "demo", "notes.md"), "%s", "files", 1), nil), "codex-b read")
		if d := c.davGet("/dav/codex-b/projects/demo/notes.md"); d.status != 404 {
			t.Fatalf("codex-b WebDAV GET notes.md = %d", d.status)
		}
		if d := c.davGet("/dav/codex-a/projects/demo/notes.md"); d.status != 200 || string(d.body) != bodyText {
			t.Fatalf("codex-a WebDAV GET notes.md = %d", d.status)
		}
	})

	step("4 a stale revision is refused and the content survives", func(t *testing.T) {
		r := c.do("PUT", api+"/codex-a/projects/files", map[string]any{
			"workspace": ws("PROJECT", "demo"), "path": "notes.md", "content": "overwrite\n", "expected_revision": staleRev})
		if r.status != 409 || reason(r) != "REVISION_MISMATCH" {
			t.Fatalf("stale save = %d %s, want 409 REVISION_MISMATCH", r.status, r.body)
		}
		if got, _ := os.ReadFile(filepath.Join(a.ProjectsDir, "demo", "notes.md")); string(got) != bodyText {
			t.Fatalf("content changed by a stale save: %q", got)
		}
	})

	step("5 a denylisted directory is hidden and refused", func(t *testing.T) {
		r := c.do("POST", api+"/codex-a/projects/entries", map[string]any{
			"workspace": ws("PROJECT", "demo"), "parent_path": "", "name": "node_modules", "type": "ENTRY_TYPE_DIRECTORY"})
		if r.status != 403 || reason(r) != "DENYLISTED" {
			t.Fatalf("create node_modules = %d %s", r.status, r.body)
		}
		// The agent makes one itself, as npm would.
		nm := filepath.Join(a.ProjectsDir, "demo", "node_modules", "left-pad")
		if err := os.MkdirAll(nm, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(nm, "index.js"), []byte("module.exports = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sidecartest.Chown(t, filepath.Join(a.ProjectsDir, "demo", "node_modules"))
		l := c.must(200, c.do("GET", strings.Replace(q("codex-a", "PROJECT", "demo", ""), "%s", "entries", 1), nil), "list")
		if slices.Contains(entryNames(l), "node_modules") {
			t.Fatal("node_modules is listed")
		}
		g := c.do("GET", strings.Replace(q("codex-a", "PROJECT", "demo", "node_modules/left-pad/index.js"), "%s", "files", 1), nil)
		if g.status != 403 || reason(g) != "DENYLISTED" {
			t.Fatalf("read inside node_modules = %d %s", g.status, g.body)
		}
		if d := c.davGet("/dav/codex-a/projects/demo/node_modules/left-pad/index.js"); d.status != 403 && d.status != 404 {
			t.Fatalf("WebDAV read inside node_modules = %d", d.status)
		}
	})

	step("6 Global AGENTS.md and skills/example/SKILL.md", func(t *testing.T) {
		g := ws("GLOBAL", "")
		r := c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": g, "parent_path": "", "name": "AGENTS.md", "type": "ENTRY_TYPE_FILE"}), "create AGENTS.md")
		c.must(200, c.do("PUT", api+"/codex-a/projects/files", map[string]any{"workspace": g, "path": "AGENTS.md", "content": "Be kind.\n", "expected_revision": r.json["revision"]}), "edit AGENTS.md")
		c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": g, "parent_path": "skills", "name": "example", "type": "ENTRY_TYPE_DIRECTORY"}), "mkdir skills/example")
		s := c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": g, "parent_path": "skills/example", "name": "SKILL.md", "type": "ENTRY_TYPE_FILE"}), "create SKILL.md")
		c.must(200, c.do("PUT", api+"/codex-a/projects/files", map[string]any{"workspace": g, "path": "skills/example/SKILL.md", "content": "---\nname: example\n---\n", "expected_revision": s.json["revision"]}), "edit SKILL.md")
		for p, want := range map[string]string{"AGENTS.md": "Be kind.\n", "skills/example/SKILL.md": "---\nname: example\n---\n"} {
			if got, _ := os.ReadFile(filepath.Join(a.CodexHome, p)); string(got) != want {
				t.Fatalf("%s on disk = %q", p, got)
			}
		}
		root := c.must(200, c.do("GET", strings.Replace(q("codex-a", "GLOBAL", "", ""), "%s", "entries", 1), nil), "list Global")
		names := entryNames(root)
		slices.Sort(names)
		if !slices.Equal(names, []string{"AGENTS.md", "skills"}) {
			t.Fatalf("Global root lists %v, want exactly [AGENTS.md skills]", names)
		}
		c.must(403, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": g, "parent_path": "", "name": "notes.md", "type": "ENTRY_TYPE_FILE"}), "a third Global root entry")
	})

	step("7 auth.json, config.toml and symlink targets are refused", func(t *testing.T) {
		for _, p := range []string{"auth.json", "config.toml", "skills/../auth.json", "Auth.json"} {
			r := c.do("GET", strings.Replace(q("codex-a", "GLOBAL", "", p), "%s", "files", 1), nil)
			if r.status != 403 && r.status != 400 {
				t.Fatalf("GET Global %s = %d %s", p, r.status, r.body)
			}
			if bytes.Contains(r.body, []byte(secretText)) {
				t.Fatalf("secret leaked through %s", p)
			}
		}
		for _, p := range []string{"/dav/codex-a/global/auth.json", "/dav/codex-a/global/config.toml"} {
			if d := c.davGet(p); (d.status != 403 && d.status != 404) || bytes.Contains(d.body, []byte(secretText)) {
				t.Fatalf("WebDAV %s = %d", p, d.status)
			}
		}
		// Symlinks an agent left behind: to the secret, and to outside the volume.
		links := map[string]string{
			filepath.Join(a.ProjectsDir, "demo", "secret-link"): filepath.Join(a.CodexHome, "auth.json"),
			filepath.Join(a.ProjectsDir, "demo", "outside"):     outside,
			filepath.Join(a.CodexHome, "skills", "auth-link"):   filepath.Join(a.CodexHome, "auth.json"),
		}
		for l, target := range links {
			if err := os.Symlink(target, l); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct{ scope, project, path string }{
			{"PROJECT", "demo", "secret-link"}, {"PROJECT", "demo", "outside/canary.txt"}, {"GLOBAL", "", "skills/auth-link"},
		} {
			r := c.do("GET", strings.Replace(q("codex-a", tc.scope, tc.project, tc.path), "%s", "files", 1), nil)
			if r.status != 403 || reason(r) != "SYMLINK" || bytes.Contains(r.body, []byte(secretText)) {
				t.Fatalf("GET %s %s = %d %s, want 403 SYMLINK", tc.scope, tc.path, r.status, r.body)
			}
		}
		l := c.must(200, c.do("GET", strings.Replace(q("codex-a", "PROJECT", "demo", ""), "%s", "entries", 1), nil), "list")
		if n := entryNames(l); slices.Contains(n, "secret-link") || slices.Contains(n, "outside") {
			t.Fatalf("symlinks listed: %v", n)
		}
		if got, _ := os.ReadFile(canary); string(got) != "canary "+secretText {
			t.Fatal("canary outside the volume changed")
		}
	})

	step("8 deletions need confirmation and are audited", func(t *testing.T) {
		// A file, a directory (recursive), AGENTS.md, the project.
		c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": ws("PROJECT", "demo"), "parent_path": "", "name": "docs", "type": "ENTRY_TYPE_DIRECTORY"}), "mkdir docs")
		c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": ws("PROJECT", "demo"), "parent_path": "docs", "name": "a.md", "type": "ENTRY_TYPE_FILE"}), "docs/a.md")
		entryRev := func(scope, project, dir, name string) string {
			l := c.must(200, c.do("GET", strings.Replace(q("codex-a", scope, project, dir), "%s", "entries", 1), nil), "list "+dir)
			for _, e := range l.json["entries"].([]any) {
				m := e.(map[string]any)
				if m["name"] == name {
					return m["revision"].(string)
				}
			}
			t.Fatalf("%s not in %s", name, dir)
			return ""
		}
		rm := func(scope, project, path, rev string, recursive bool) reply {
			v := url.Values{"workspace.scope": {scope}, "path": {path}, "expected_revision": {rev}}
			if project != "" {
				v.Set("workspace.project_name", project)
			}
			if recursive {
				v.Set("recursive", "true")
			}
			return c.do("DELETE", api+"/codex-a/projects/entries?"+v.Encode(), nil)
		}
		c.must(200, rm("PROJECT", "demo", "notes.md", entryRev("PROJECT", "demo", "", "notes.md"), false), "delete notes.md")
		docsRev := entryRev("PROJECT", "demo", "", "docs")
		if r := rm("PROJECT", "demo", "docs", docsRev, false); r.status == 200 {
			t.Fatal("a non-empty directory was deleted without recursive")
		}
		c.must(200, rm("PROJECT", "demo", "docs", docsRev, true), "delete docs recursively")
		c.must(200, rm("GLOBAL", "", "AGENTS.md", entryRev("GLOBAL", "", "", "AGENTS.md"), false), "delete AGENTS.md")
		if r := rm("GLOBAL", "", "skills", entryRev("GLOBAL", "", "", "skills"), true); r.status != 403 {
			t.Fatalf("deleting the skills root = %d %s", r.status, r.body)
		}
		for _, p := range []string{filepath.Join(a.ProjectsDir, "demo", "notes.md"), filepath.Join(a.ProjectsDir, "demo", "docs"), filepath.Join(a.CodexHome, "AGENTS.md")} {
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				t.Fatalf("%s still exists", p)
			}
		}
		if r := c.do("DELETE", api+"/codex-a/projects/demo?confirm_name=dem", nil); r.status != 400 {
			t.Fatalf("delete with a wrong confirmation = %d %s", r.status, r.body)
		}
		if !isRealDir(t, filepath.Join(a.ProjectsDir, "demo")) {
			t.Fatal("project deleted despite the wrong confirmation")
		}
		c.must(200, c.do("DELETE", api+"/codex-a/projects/demo?confirm_name=demo", nil), "delete project")
		if _, err := os.Lstat(filepath.Join(a.ProjectsDir, "demo")); !os.IsNotExist(err) {
			t.Fatal("project still on disk")
		}
		if !isRealDir(t, filepath.Join(b.ProjectsDir, "demo", ".git")) {
			t.Fatal("codex-b's demo was touched")
		}
		if got, _ := os.ReadFile(canary); string(got) != "canary "+secretText {
			t.Fatal("canary outside the volume changed (symlink followed on delete)")
		}
		want := map[string]bool{"delete_entry notes.md": false, "delete_entry docs": false, "delete_entry AGENTS.md": false, "delete_project ": false}
		for _, rec := range gw.AuditRecords(t) {
			if rec["agent_id"] != "codex-a" || rec["result"] != "ok" {
				continue
			}
			key := rec["action"].(string) + " " + rec["source_path"].(string)
			if _, ok := want[key]; ok {
				want[key] = true
			}
			if rec["action"] == "delete_project" && rec["project_name"] == "demo" {
				want["delete_project "] = true
			}
		}
		for k, seen := range want {
			if !seen {
				t.Errorf("no successful audit record for %q", k)
			}
		}
	})

	step("9 a stopped sidecar is Unavailable for its agent only", func(t *testing.T) {
		if err := b.Stop(); err != nil {
			t.Fatalf("stop codex-b: %v", err)
		}
		l := c.must(200, c.do("GET", api, nil), "list agents")
		agents, _ := l.json["agents"].([]any)
		if len(agents) != 2 {
			t.Fatalf("agent list changed: %s", l.body)
		}
		r := c.do("GET", api+"/codex-b/projects", nil)
		if r.status != 503 || reason(r) != "SIDECAR_UNAVAILABLE" {
			t.Fatalf("codex-b list = %d %s, want 503", r.status, r.body)
		}
		if bytes.Contains(r.body, []byte("127.0.0.1")) || strings.Contains(string(r.body), b.RPCAddr) {
			t.Fatalf("error names the sidecar endpoint: %s", r.body)
		}
		c.must(200, c.do("GET", api+"/codex-a/projects", nil), "codex-a still works")
		c.must(200, c.do("POST", api+"/codex-a/projects", map[string]any{"name": "after"}), "codex-a still creates")
		if !isRealDir(t, filepath.Join(b.ProjectsDir, "demo", ".git")) {
			t.Fatal("codex-b's volume changed while its sidecar was down")
		}
	})

	step("10 audit records are complete and carry no content or secrets", func(t *testing.T) {
		recs := gw.AuditRecords(t)
		if len(recs) < 12 {
			t.Fatalf("only %d audit records", len(recs))
		}
		raw, err := os.ReadFile(gw.AuditFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, leak := range []string{bodyText, "acceptance body text", "Be kind.", secretText, gw.AdminToken, a.RPCAddr, b.RPCAddr, a.ProjectsDir, a.CodexHome, "module.exports"} {
			if bytes.Contains(raw, []byte(leak)) {
				t.Errorf("audit file contains %q", leak)
			}
		}
		for _, rec := range recs {
			for _, f := range []string{"request_id", "operator", "agent_id", "workspace_scope", "action", "result", "grpc_code", "duration_ms"} {
				if v, ok := rec[f]; !ok || v == "" {
					t.Errorf("audit record %v lacks %s", rec, f)
				}
			}
			if rec["operator"] != gatewaytest.AdminOperator {
				t.Errorf("operator = %v", rec["operator"])
			}
		}
		// The gateway's own log is held to the same rule.
		logs := gw.Logs()
		for _, leak := range []string{bodyText, secretText, gw.AdminToken} {
			if strings.Contains(logs, leak) {
				t.Errorf("gateway log contains %q", leak)
			}
		}
		for _, sc := range []*sidecartest.Sidecar{a, b} {
			if strings.Contains(sc.Logs(), secretText) || strings.Contains(sc.Logs(), bodyText) {
				t.Errorf("a sidecar log contains content or a secret")
			}
		}
	})
}

// davGet reads through the gateway's WebDAV view with Basic auth, as a
// WebDAV client would.
func (c *client) davGet(path string) reply {
	c.t.Helper()
	req, err := http.NewRequest("GET", c.gw.URL+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.SetBasicAuth("admin", c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}
