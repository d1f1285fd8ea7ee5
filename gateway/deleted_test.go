package gateway_test

// Recently deleted over REST (issue 25): the real gateway in front of a real
// agent-sidecar. Deleted projects are listed without their names and come
// back in one step; an existing name is refused with 409, nothing changed.

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

type deletedREST struct {
	Projects []struct {
		ProjectName  string `json:"project_name"`
		DeletedAt    string `json:"deleted_at"`
		DeletedBy    string `json:"deleted_by"`
		Size         string `json:"size"`
		FileCount    int    `json:"file_count"`
		CheckpointID string `json:"checkpoint_id"`
	} `json:"projects"`
}

func TestDeletedProjectsREST(t *testing.T) {
	projects := t.TempDir()
	ckFile(t, projects, "alpha/notes.txt", "alpha notes\n")
	ckFile(t, projects, "alpha/src/a.go", "package a\n")
	ckFile(t, projects, "beta/b.txt", "beta\n")
	ckFile(t, projects, "gamma/keep.txt", "kept\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	base := api + "/agents/codex-a/deleted-projects"

	var list deletedREST
	ckJSON(t, admin(t, g, http.MethodGet, base, ""), 200, &list)
	if len(list.Projects) != 0 {
		t.Fatalf("nothing deleted yet, listed %+v", list)
	}
	for _, p := range []string{"alpha", "beta"} {
		if r := admin(t, g, http.MethodDelete, api+"/agents/codex-a/projects/"+p+"?confirm_name="+p, ""); r.Status != 200 {
			t.Fatalf("delete %s: %d %s", p, r.Status, r.Body)
		}
	}
	// Listed without a name, newest deletion first, with who and how much.
	ckJSON(t, admin(t, g, http.MethodGet, base, ""), 200, &list)
	if len(list.Projects) != 2 || list.Projects[0].ProjectName != "beta" || list.Projects[1].ProjectName != "alpha" {
		t.Fatalf("listed %+v", list)
	}
	a := list.Projects[1]
	if a.DeletedBy != gatewaytest.AdminOperator || a.Size != "22" || a.FileCount != 2 || a.DeletedAt == "" || a.CheckpointID == "" {
		t.Fatalf("alpha listed as %+v", a)
	}

	// Restore to its name in one step (no plan token).
	ckJSON(t, admin(t, g, http.MethodPost, base+"/alpha:restore", `{}`), 200, nil)
	if b, _ := os.ReadFile(filepath.Join(projects, "alpha/src/a.go")); string(b) != "package a\n" {
		t.Fatalf("alpha not back: %q", b)
	}
	ckJSON(t, admin(t, g, http.MethodGet, base, ""), 200, &list)
	if len(list.Projects) != 1 || list.Projects[0].ProjectName != "beta" {
		t.Fatalf("after the restore: %+v", list)
	}

	// A project of that name exists now: 409, nothing changed; under
	// another name it comes back.
	ckFile(t, projects, "beta/new.txt", "someone else's beta\n")
	before := testtree.Snap(t, projects)
	r := admin(t, g, http.MethodPost, base+"/beta:restore", `{}`)
	if r.Status != 409 || !strings.Contains(string(r.Body), "restore under another name") {
		t.Fatalf("restore onto an existing name: %d %s", r.Status, r.Body)
	}
	r = admin(t, g, http.MethodPost, base+"/beta:restore", `{"restore_as":"gamma"}`)
	if r.Status != 409 {
		t.Fatalf("restore_as an existing name: %d %s", r.Status, r.Body)
	}
	if d := testtree.Diff(before, testtree.Snap(t, projects)); len(d) != 0 {
		t.Fatalf("a refused restore changed the tree: %v", d)
	}
	ckJSON(t, admin(t, g, http.MethodPost, base+"/beta:restore", `{"restore_as":"beta-2"}`), 200, nil)
	if b, _ := os.ReadFile(filepath.Join(projects, "beta-2/b.txt")); string(b) != "beta\n" {
		t.Fatalf("beta-2: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(projects, "beta/new.txt")); string(b) != "someone else's beta\n" {
		t.Fatalf("the existing beta changed: %q", b)
	}

	// Bad input: a bad name, an unknown project, a checkpoint of another kind.
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{base + "/beta:restore", `{"restore_as":"../x"}`, 400},
		{base + "/beta:restore", `{"restore_as":".git"}`, 403},
		{base + "/never-existed:restore", `{}`, 404},
		{base + "/alpha:restore", `{"checkpoint_id":"zz"}`, 404},
	} {
		if r := admin(t, g, http.MethodPost, c.path, c.body); r.Status != c.status {
			t.Errorf("POST %s %s: %d, want %d: %s", c.path, c.body, r.Status, c.status, r.Body)
		}
	}
	if _, err := os.Stat(filepath.Join(projects, "x")); !os.IsNotExist(err) {
		t.Errorf("a refused restore_as created something: %v", err)
	}
	// Only admins.
	req := g.NewRequest(t, http.MethodGet, base, nil)
	req.Header.Set("Authorization", "Bearer "+g.UserToken)
	if r := do(t, req); r.Status != 403 {
		t.Fatalf("non-admin list: %d", r.Status)
	}
	acts := map[string]int{}
	for _, rec := range g.AuditRecords(t) {
		if a, _ := rec["action"].(string); a == "restore_deleted_project" {
			acts[rec["result"].(string)]++
		}
	}
	if acts["ok"] != 2 || acts["error"] < 4 {
		t.Errorf("audit of restore_deleted_project: %v", acts)
	}
}

// A file deleted over REST keeps an automatic checkpoint of the file, which
// brings it back (the portal's Undo): compare, then restore with its plan.
func TestFileDeleteKeepsCheckpointREST(t *testing.T) {
	projects := t.TempDir()
	ckFile(t, projects, "demo/gone.txt", "bring me back\n")
	ckFile(t, projects, "demo/stays.txt", "stays\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	rev := entryRevision(t, g, "demo", "", "gone.txt")
	var del struct {
		AutoCheckpointID string `json:"auto_checkpoint_id"`
	}
	ckJSON(t, admin(t, g, http.MethodDelete, strings.Replace(deleteEntryURL("demo", "gone.txt", rev, ""), "&recursive=true", "", 1), ""), 200, &del)
	if del.AutoCheckpointID == "" {
		t.Fatal("a file delete took no automatic checkpoint")
	}
	if _, err := os.Stat(filepath.Join(projects, "demo/gone.txt")); !os.IsNotExist(err) {
		t.Fatalf("not deleted: %v", err)
	}
	base := api + "/agents/codex-a/checkpoints/" + del.AutoCheckpointID
	q := "workspace.scope=PROJECT&workspace.project_name=demo&path=gone.txt"
	var cmp struct {
		PlanToken string `json:"plan_token"`
	}
	ckJSON(t, admin(t, g, http.MethodGet, base+"/compare?"+q, ""), 200, &cmp)
	ckJSON(t, admin(t, g, http.MethodPost, base+":restore", `{"workspace":{"scope":"PROJECT","project_name":"demo"},"path":"gone.txt","plan_token":"`+cmp.PlanToken+`"}`), 200, nil)
	if b, _ := os.ReadFile(filepath.Join(projects, "demo/gone.txt")); string(b) != "bring me back\n" {
		t.Fatalf("gone.txt after the undo: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(projects, "demo/stays.txt")); string(b) != "stays\n" {
		t.Fatalf("stays.txt changed: %q", b)
	}
}
