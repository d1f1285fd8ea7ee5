package restwalk

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func (w *Walk) sameProject(t *testing.T) {
	for _, a := range []string{AgentA, AgentB} {
		r := Must(t, 200, w.do(t, "POST", API+"/"+a+"/projects", map[string]any{"name": "demo"}), "create demo in "+a)
		if r.JSON["name"] != "demo" || r.JSON["git_initialized"] != true {
			t.Fatalf("%s: created project = %s", a, r.Body)
		}
	}
	for _, p := range []string{w.ProjectsA, w.ProjectsB} {
		if !isDir(filepath.Join(p, "demo", ".git")) {
			t.Fatalf("%s/demo/.git is not a real directory", p)
		}
	}
	if w.ProjectsA == w.ProjectsB {
		t.Fatal("the agents share a volume")
	}
	Must(t, 409, w.do(t, "POST", API+"/"+AgentA+"/projects", map[string]any{"name": "demo"}), "create demo twice")
}

func (w *Walk) gitHidden(t *testing.T) {
	for _, a := range []string{AgentA, AgentB} {
		r := Must(t, 200, w.do(t, "GET", Q(a, "entries", "PROJECT", "demo", ""), nil), "list demo")
		if slices.Contains(r.Names(), ".git") {
			t.Fatalf("%s lists .git: %v", a, r.Names())
		}
		g := w.do(t, "GET", Q(a, "files", "PROJECT", "demo", ".git/config"), nil)
		if g.Status != 403 || g.Reason() != "DENYLISTED" {
			t.Fatalf("%s: GET .git/config = %d %s, want 403 DENYLISTED", a, g.Status, g.Body)
		}
		if d := w.dav(t, "GET", "/dav/"+a+"/projects/demo/.git/HEAD"); d.Status != 403 && d.Status != 404 {
			t.Fatalf("%s: WebDAV GET .git/HEAD = %d", a, d.Status)
		}
	}
}

func (w *Walk) editIsolated(t *testing.T) {
	r := Must(t, 200, w.do(t, "POST", API+"/codex-a/projects/entries", map[string]any{
		"workspace": WS("PROJECT", "demo"), "parent_path": "", "name": "notes.md", "type": "ENTRY_TYPE_FILE"}), "create notes.md")
	w.staleRev, _ = r.JSON["revision"].(string)
	if w.staleRev == "" {
		t.Fatalf("created notes.md without a revision: %s", r.Body)
	}
	u := Must(t, 200, w.do(t, "PUT", API+"/codex-a/projects/files", map[string]any{
		"workspace": WS("PROJECT", "demo"), "path": "notes.md", "content": w.Body, "expected_revision": w.staleRev}), "save notes.md")
	if u.JSON["revision"] == w.staleRev {
		t.Fatal("revision did not change on save")
	}
	g := Must(t, 200, w.do(t, "GET", Q(AgentA, "files", "PROJECT", "demo", "notes.md"), nil), "read back")
	if g.JSON["content"] != w.Body {
		t.Fatalf("read back %q", g.JSON["content"])
	}
	if got, _ := os.ReadFile(filepath.Join(w.ProjectsA, "demo", "notes.md")); string(got) != w.Body {
		t.Fatalf("on the volume: %q", got)
	}
	if slices.Contains(Must(t, 200, w.do(t, "GET", Q(AgentB, "entries", "PROJECT", "demo", ""), nil), "list codex-b demo").Names(), "notes.md") {
		t.Fatal("codex-b shows codex-a's file")
	}
	Must(t, 404, w.do(t, "GET", Q(AgentB, "files", "PROJECT", "demo", "notes.md"), nil), "codex-b read")
	if d := w.dav(t, "GET", "/dav/codex-b/projects/demo/notes.md"); d.Status != 404 {
		t.Fatalf("codex-b WebDAV GET notes.md = %d", d.Status)
	}
	if d := w.dav(t, "GET", "/dav/codex-a/projects/demo/notes.md"); d.Status != 200 || string(d.Body) != w.Body {
		t.Fatalf("codex-a WebDAV GET notes.md = %d", d.Status)
	}
	if d := w.dav(t, "PROPFIND", "/dav/codex-a/projects/demo/", "Depth", "1"); d.Status != 207 || !bytes.Contains(d.Body, []byte("notes.md")) || bytes.Contains(d.Body, []byte(".git")) {
		t.Fatalf("codex-a WebDAV PROPFIND demo = %d %s", d.Status, d.Body)
	}
}

func (w *Walk) staleRefused(t *testing.T) {
	r := w.do(t, "PUT", API+"/codex-a/projects/files", map[string]any{
		"workspace": WS("PROJECT", "demo"), "path": "notes.md", "content": "overwrite\n", "expected_revision": w.staleRev})
	if r.Status != 409 || r.Reason() != "REVISION_MISMATCH" {
		t.Fatalf("stale save = %d %s, want 409 REVISION_MISMATCH", r.Status, r.Body)
	}
	if got, _ := os.ReadFile(filepath.Join(w.ProjectsA, "demo", "notes.md")); string(got) != w.Body {
		t.Fatalf("content changed by a stale save: %q", got)
	}
}

func (w *Walk) denylisted(t *testing.T) {
	r := w.do(t, "POST", API+"/codex-a/projects/entries", map[string]any{
		"workspace": WS("PROJECT", "demo"), "parent_path": "", "name": "node_modules", "type": "ENTRY_TYPE_DIRECTORY"})
	if r.Status != 403 || r.Reason() != "DENYLISTED" {
		t.Fatalf("create node_modules = %d %s", r.Status, r.Body)
	}
	// The agent makes one itself, as npm would.
	nm := filepath.Join(w.ProjectsA, "demo", "node_modules")
	w.writeAsAgent(t, filepath.Join(nm, "left-pad", "index.js"), "module.exports = 1\n")
	w.AsAgent(t, nm)
	if slices.Contains(Must(t, 200, w.do(t, "GET", Q(AgentA, "entries", "PROJECT", "demo", ""), nil), "list").Names(), "node_modules") {
		t.Fatal("node_modules is listed")
	}
	g := w.do(t, "GET", Q(AgentA, "files", "PROJECT", "demo", "node_modules/left-pad/index.js"), nil)
	if g.Status != 403 || g.Reason() != "DENYLISTED" {
		t.Fatalf("read inside node_modules = %d %s", g.Status, g.Body)
	}
	if d := w.dav(t, "GET", "/dav/codex-a/projects/demo/node_modules/left-pad/index.js"); d.Status != 403 && d.Status != 404 {
		t.Fatalf("WebDAV read inside node_modules = %d", d.Status)
	}
}

func (w *Walk) global(t *testing.T) {
	g := WS("GLOBAL", "")
	entries, files := API+"/codex-a/projects/entries", API+"/codex-a/projects/files"
	r := Must(t, 200, w.do(t, "POST", entries, map[string]any{"workspace": g, "parent_path": "", "name": "AGENTS.md", "type": "ENTRY_TYPE_FILE"}), "create AGENTS.md")
	Must(t, 200, w.do(t, "PUT", files, map[string]any{"workspace": g, "path": "AGENTS.md", "content": "Be kind.\n", "expected_revision": r.JSON["revision"]}), "edit AGENTS.md")
	Must(t, 200, w.do(t, "POST", entries, map[string]any{"workspace": g, "parent_path": "skills", "name": "example", "type": "ENTRY_TYPE_DIRECTORY"}), "mkdir skills/example")
	s := Must(t, 200, w.do(t, "POST", entries, map[string]any{"workspace": g, "parent_path": "skills/example", "name": "SKILL.md", "type": "ENTRY_TYPE_FILE"}), "create SKILL.md")
	Must(t, 200, w.do(t, "PUT", files, map[string]any{"workspace": g, "path": "skills/example/SKILL.md", "content": "---\nname: example\n---\n", "expected_revision": s.JSON["revision"]}), "edit SKILL.md")
	for p, want := range map[string]string{"AGENTS.md": "Be kind.\n", "skills/example/SKILL.md": "---\nname: example\n---\n"} {
		if got, _ := os.ReadFile(filepath.Join(w.HomeA, p)); string(got) != want {
			t.Fatalf("%s on the volume = %q", p, got)
		}
	}
	root := Must(t, 200, w.do(t, "GET", Q(AgentA, "entries", "GLOBAL", "", ""), nil), "list Global").Names()
	slices.Sort(root)
	if !slices.Equal(root, []string{"AGENTS.md", "skills"}) {
		t.Fatalf("Global root lists %v, want exactly [AGENTS.md skills]", root)
	}
	Must(t, 403, w.do(t, "POST", entries, map[string]any{"workspace": g, "parent_path": "", "name": "notes.md", "type": "ENTRY_TYPE_FILE"}), "a third Global root entry")
}

func (w *Walk) secretsRefused(t *testing.T) {
	for _, p := range []string{"auth.json", "config.toml", "skills/../auth.json", "Auth.json"} {
		r := w.do(t, "GET", Q(AgentA, "files", "GLOBAL", "", p), nil)
		if (r.Status != 403 && r.Status != 400) || bytes.Contains(r.Body, []byte(w.Secret)) {
			t.Fatalf("GET Global %s = %d %s", p, r.Status, r.Body)
		}
	}
	for _, p := range []string{"/dav/codex-a/global/auth.json", "/dav/codex-a/global/config.toml"} {
		if d := w.dav(t, "GET", p); (d.Status != 403 && d.Status != 404) || bytes.Contains(d.Body, []byte(w.Secret)) {
			t.Fatalf("WebDAV %s = %d", p, d.Status)
		}
	}
	// Symlinks an agent left behind: to the secret, and to outside the volume.
	w.symlink(t, filepath.Join(w.HomeA, "auth.json"), filepath.Join(w.ProjectsA, "demo", "secret-link"))
	w.symlink(t, w.Outside, filepath.Join(w.ProjectsA, "demo", "outside"))
	w.symlink(t, filepath.Join(w.HomeA, "auth.json"), filepath.Join(w.HomeA, "skills", "auth-link"))
	for _, tc := range []struct{ scope, project, path string }{
		{"PROJECT", "demo", "secret-link"}, {"PROJECT", "demo", "outside/canary.txt"}, {"GLOBAL", "", "skills/auth-link"},
	} {
		r := w.do(t, "GET", Q(AgentA, "files", tc.scope, tc.project, tc.path), nil)
		if r.Status != 403 || r.Reason() != "SYMLINK" || bytes.Contains(r.Body, []byte(w.Secret)) {
			t.Fatalf("GET %s %s = %d %s, want 403 SYMLINK", tc.scope, tc.path, r.Status, r.Body)
		}
	}
	if l := Must(t, 200, w.do(t, "GET", Q(AgentA, "entries", "PROJECT", "demo", ""), nil), "list").Names(); slices.Contains(l, "secret-link") || slices.Contains(l, "outside") {
		t.Fatalf("symlinks listed: %v", l)
	}
	w.canaryIntact(t, "canary outside the volume changed")
}

func (w *Walk) canaryIntact(t *testing.T, what string) {
	t.Helper()
	if got, _ := os.ReadFile(w.canary()); string(got) != "canary "+w.Secret {
		t.Fatal(what)
	}
}
