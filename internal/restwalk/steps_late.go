package restwalk

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func (w *Walk) deletions(t *testing.T) {
	entries := API + "/codex-a/projects/entries"
	Must(t, 200, w.do(t, "POST", entries, map[string]any{"workspace": WS("PROJECT", "demo"), "parent_path": "", "name": "docs", "type": "ENTRY_TYPE_DIRECTORY"}), "mkdir docs")
	Must(t, 200, w.do(t, "POST", entries, map[string]any{"workspace": WS("PROJECT", "demo"), "parent_path": "docs", "name": "a.md", "type": "ENTRY_TYPE_FILE"}), "docs/a.md")
	Must(t, 200, w.rm(t, "PROJECT", "demo", "notes.md", w.entryRev(t, "PROJECT", "demo", "", "notes.md"), false), "delete notes.md")
	docsRev := w.entryRev(t, "PROJECT", "demo", "", "docs")
	if r := w.rm(t, "PROJECT", "demo", "docs", docsRev, false); r.Status == 200 {
		t.Fatal("a non-empty directory was deleted without recursive")
	}
	Must(t, 200, w.rm(t, "PROJECT", "demo", "docs", docsRev, true), "delete docs recursively")
	Must(t, 200, w.rm(t, "GLOBAL", "", "AGENTS.md", w.entryRev(t, "GLOBAL", "", "", "AGENTS.md"), false), "delete AGENTS.md")
	if r := w.rm(t, "GLOBAL", "", "skills", w.entryRev(t, "GLOBAL", "", "", "skills"), true); r.Status != 403 {
		t.Fatalf("deleting the skills root = %d %s", r.Status, r.Body)
	}
	for _, p := range []string{filepath.Join(w.ProjectsA, "demo", "notes.md"), filepath.Join(w.ProjectsA, "demo", "docs"), filepath.Join(w.HomeA, "AGENTS.md")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still exists", p)
		}
	}
	if r := w.do(t, "DELETE", API+"/codex-a/projects/demo?confirm_name=dem", nil); r.Status != 400 {
		t.Fatalf("delete with a wrong confirmation = %d %s", r.Status, r.Body)
	}
	if !isDir(filepath.Join(w.ProjectsA, "demo")) {
		t.Fatal("project deleted despite the wrong confirmation")
	}
	Must(t, 200, w.do(t, "DELETE", API+"/codex-a/projects/demo?confirm_name=demo", nil), "delete project")
	if _, err := os.Lstat(filepath.Join(w.ProjectsA, "demo")); !os.IsNotExist(err) {
		t.Fatal("project still on the volume")
	}
	if !isDir(filepath.Join(w.ProjectsB, "demo", ".git")) {
		t.Fatal("codex-b's demo was touched")
	}
	w.canaryIntact(t, "canary outside the volume changed (symlink followed on delete)")
	w.deletesAudited(t)
}

// entryRev is the revision of name in dir, from a listing.
func (w *Walk) entryRev(t *testing.T, scope, project, dir, name string) string {
	t.Helper()
	l := Must(t, 200, w.do(t, "GET", Q(AgentA, "entries", scope, project, dir), nil), "list "+dir)
	list, _ := l.JSON["entries"].([]any)
	for _, e := range list {
		if m, _ := e.(map[string]any); m["name"] == name {
			rev, _ := m["revision"].(string)
			return rev
		}
	}
	t.Fatalf("%s not in %s", name, dir)
	return ""
}

func (w *Walk) rm(t *testing.T, scope, project, path, rev string, recursive bool) Reply {
	t.Helper()
	v := url.Values{"workspace.scope": {scope}, "path": {path}, "expected_revision": {rev}}
	if project != "" {
		v.Set("workspace.project_name", project)
	}
	if recursive {
		v.Set("recursive", "true")
	}
	return w.do(t, "DELETE", API+"/codex-a/projects/entries?"+v.Encode(), nil)
}

// deletesAudited finds a successful audit record of each of step 8's deletes.
func (w *Walk) deletesAudited(t *testing.T) {
	t.Helper()
	want := map[string]bool{"delete_entry notes.md": false, "delete_entry docs": false, "delete_entry AGENTS.md": false, "delete_project": false}
	for _, rec := range w.AuditRecords(t) {
		if rec["agent_id"] != AgentA || rec["result"] != "ok" {
			continue
		}
		key := fmt.Sprint(rec["action"]) + " " + fmt.Sprint(rec["source_path"])
		if _, ok := want[key]; ok {
			want[key] = true
		}
		if rec["action"] == "delete_project" && rec["project_name"] == "demo" {
			want["delete_project"] = true
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no successful audit record for %q", k)
		}
	}
}

func (w *Walk) sidecarDown(t *testing.T) {
	w.StopB(t)
	l := Must(t, 200, w.do(t, "GET", API, nil), "list agents")
	if agents, _ := l.JSON["agents"].([]any); len(agents) != 2 {
		t.Fatalf("agent list changed: %s", l.Body)
	}
	var r Reply
	w.eventually(t, "codex-b Unavailable", func() error {
		if r = w.do(t, "GET", API+"/codex-b/projects", nil); r.Status != 503 || r.Reason() != "SIDECAR_UNAVAILABLE" {
			return fmt.Errorf("codex-b list = %d %s, want 503 SIDECAR_UNAVAILABLE", r.Status, r.Body)
		}
		return nil
	})
	for _, e := range w.Endpoints(t) {
		if e != "" && bytes.Contains(r.Body, []byte(e)) {
			t.Fatalf("the error names the sidecar endpoint (%s): %s", e, r.Body)
		}
	}
	Must(t, 200, w.do(t, "GET", API+"/codex-a/projects", nil), "codex-a still works")
	Must(t, 200, w.do(t, "POST", API+"/codex-a/projects", map[string]any{"name": "after"}), "codex-a still creates")
	if !isDir(filepath.Join(w.ProjectsB, "demo", ".git")) {
		t.Fatal("codex-b's volume changed while its sidecar was down")
	}
}

func (w *Walk) auditClean(t *testing.T) {
	recs := w.AuditRecords(t)
	if len(recs) < 12 {
		t.Fatalf("only %d audit records", len(recs))
	}
	for _, rec := range recs {
		for _, f := range []string{"request_id", "operator", "agent_id", "workspace_scope", "action", "result", "grpc_code", "duration_ms"} {
			if v, ok := rec[f]; !ok || v == "" {
				t.Errorf("audit record %v lacks %s", rec, f)
			}
		}
		if rec["operator"] != w.Operator {
			t.Errorf("operator = %v, want %s", rec["operator"], w.Operator)
		}
	}
	for _, l := range w.Logs(t, w) {
		for _, leak := range l.Never {
			if leak != "" && strings.Contains(l.Text, leak) {
				t.Errorf("the %s contains %q", l.Name, leak)
			}
		}
	}
}
