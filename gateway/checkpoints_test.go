package gateway_test

// Checkpoints (issue #15) over REST: the real gateway binary in front of a
// real agent-sidecar, both on 127.0.0.1 with t.TempDir() volumes.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

func ckFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sidecartest.Chown(t, root)
}

func ckJSON(t *testing.T, r response, want int, v any) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	if v != nil {
		if err := json.Unmarshal(r.Body, v); err != nil {
			t.Fatalf("%v: %s", err, r.Body)
		}
	}
}

type ckREST struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	Label  string `json:"label"`
}

func TestCheckpointsREST(t *testing.T) {
	const secret = "SECRET-CONTENT-91c2"
	projects := t.TempDir()
	ckFile(t, projects, "demo/notes.txt", "line one\n"+secret+"\n")
	ckFile(t, projects, "demo/src/a.go", "package a\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	base := api + "/agents/codex-a/checkpoints"
	ws := `"workspace":{"scope":"PROJECT","project_name":"demo"}`
	q := "workspace.scope=PROJECT&workspace.project_name=demo"

	var c ckREST
	ckJSON(t, admin(t, g, http.MethodPost, base, `{`+ws+`,"label":"before the agent"}`), 200, &c)
	if c.ID == "" || c.Label != "before the agent" || c.Reason != "CHECKPOINT_REASON_MANUAL" {
		t.Fatalf("created %+v", c)
	}
	var list struct{ Checkpoints []ckREST }
	ckJSON(t, admin(t, g, http.MethodGet, base+"?"+q, ""), 200, &list)
	if len(list.Checkpoints) != 1 || list.Checkpoints[0].ID != c.ID {
		t.Fatalf("list %+v", list)
	}

	// The agent changes a file and adds one.
	ckFile(t, projects, "demo/notes.txt", "line one\nline two\n")
	ckFile(t, projects, "demo/junk.txt", "junk\n")
	var cmp struct {
		PlanToken string `json:"plan_token"`
	}
	r := admin(t, g, http.MethodGet, base+"/"+c.ID+"/compare?"+q+"&include_diffs=true", "")
	ckJSON(t, r, 200, &cmp)
	var raw struct {
		Changes []map[string]any `json:"changes"`
	}
	json.Unmarshal(r.Body, &raw)
	got := map[string]string{}
	for _, ch := range raw.Changes {
		got[ch["path"].(string)] = ch["kind"].(string)
	}
	if len(got) != 2 || got["notes.txt"] != "CHANGE_KIND_MODIFIED" || got["junk.txt"] != "CHANGE_KIND_ADDED" || cmp.PlanToken == "" {
		t.Fatalf("compare: %s", r.Body)
	}
	if !strings.Contains(string(r.Body), `+line two`) {
		t.Errorf("no text diff: %s", r.Body)
	}

	// Restore, given the comparison's plan.
	var res struct {
		UndoCheckpointID string `json:"undo_checkpoint_id"`
	}
	ckJSON(t, admin(t, g, http.MethodPost, base+"/"+c.ID+":restore", `{`+ws+`,"plan_token":"`+cmp.PlanToken+`"}`), 200, &res)
	if b, _ := os.ReadFile(filepath.Join(projects, "demo/notes.txt")); string(b) != "line one\n"+secret+"\n" {
		t.Fatalf("notes.txt after restore = %q", b)
	}
	if _, err := os.Stat(filepath.Join(projects, "demo/junk.txt")); !os.IsNotExist(err) {
		t.Fatalf("junk.txt after restore: %v", err)
	}
	if res.UndoCheckpointID == "" {
		t.Fatal("no undo checkpoint")
	}

	// Refusals: no plan_token, bad path, unknown ID, a non-admin.
	ckFile(t, projects, "demo/late.txt", "late\n")
	r = admin(t, g, http.MethodPost, base+"/"+c.ID+":restore", `{`+ws+`}`)
	if r.Status != 400 || r.reason(t) != "INVALID_ARGUMENT" || !strings.Contains(string(r.Body), "plan_token is required") {
		t.Fatalf("restore without plan_token: %d %s", r.Status, r.Body)
	}
	if _, err := os.Stat(filepath.Join(projects, "demo/late.txt")); err != nil {
		t.Fatalf("a refused restore removed late.txt: %v", err)
	}
	r = admin(t, g, http.MethodPost, base+"/"+c.ID+":restore", `{`+ws+`,"path":"src/../notes.txt","plan_token":"x"}`)
	if r.Status != 400 || r.reason(t) != "INVALID_PATH" {
		t.Fatalf("dotdot restore: %d %s", r.Status, r.Body)
	}
	r = admin(t, g, http.MethodDelete, base+"/0123456789abcdef01234567?"+q, "")
	if r.Status != 404 || r.reason(t) != "CHECKPOINT_NOT_FOUND" {
		t.Fatalf("unknown delete: %d %s", r.Status, r.Body)
	}
	req := g.NewRequest(t, http.MethodGet, base+"?"+q, nil)
	req.Header.Set("Authorization", "Bearer "+g.UserToken)
	if r := do(t, req); r.Status != 403 {
		t.Fatalf("non-admin list: %d", r.Status)
	}
	req = g.NewRequest(t, http.MethodPost, base+"/"+c.ID+":restore", strings.NewReader(`{`+ws+`}`))
	req.Header.Set("Authorization", "Bearer "+g.UserToken)
	if r := do(t, req); r.Status != 403 {
		t.Fatalf("non-admin restore: %d", r.Status)
	}
	// An undecodable body is refused before the service, and audited.
	if r := admin(t, g, http.MethodPost, base+"/"+c.ID+":restore", `{"workspace":`); r.Status != 400 {
		t.Fatalf("bad body: %d %s", r.Status, r.Body)
	}

	// A project delete keeps an automatic checkpoint that brings it back.
	if r := admin(t, g, http.MethodDelete, api+"/agents/codex-a/projects/demo?confirm_name=demo", ""); r.Status != 200 {
		t.Fatalf("delete project: %d %s", r.Status, r.Body)
	}
	ckJSON(t, admin(t, g, http.MethodGet, base+"?"+q, ""), 200, &list)
	if len(list.Checkpoints) < 3 || list.Checkpoints[0].Reason != "CHECKPOINT_REASON_BEFORE_PROJECT_DELETE" {
		t.Fatalf("after project delete: %+v", list)
	}
	ckJSON(t, admin(t, g, http.MethodGet, base+"/"+list.Checkpoints[0].ID+"/compare?"+q, ""), 200, &cmp)
	ckJSON(t, admin(t, g, http.MethodPost, base+"/"+list.Checkpoints[0].ID+":restore", `{`+ws+`,"plan_token":"`+cmp.PlanToken+`"}`), 200, nil)
	if b, _ := os.ReadFile(filepath.Join(projects, "demo/src/a.go")); string(b) != "package a\n" {
		t.Fatalf("project not back: %q", b)
	}

	ckJSON(t, admin(t, g, http.MethodDelete, base+"/"+c.ID+"?"+q, ""), 200, nil)

	// Audit: one record per create, restore and delete, with the ID; never content.
	acts := map[string]int{}
	for _, rec := range g.AuditRecords(t) {
		a, _ := rec["action"].(string)
		if !strings.Contains(a, "checkpoint") {
			continue
		}
		acts[a+"/"+rec["result"].(string)]++
		// checkpoint_id is omitempty: a missing one is an absent key (nil),
		// never "", so check that it is a non-empty string.
		if id, _ := rec["checkpoint_id"].(string); rec["result"] == "ok" && id == "" {
			t.Errorf("audit record without checkpoint_id: %v", rec)
		}
		if rec["result"] == "ok" && rec["project_name"] != "demo" || rec["operator"] != gatewaytest.AdminOperator {
			t.Errorf("audit record: %v", rec)
		}
	}
	// create: the manual one and two automatic ones (before the first
	// restore and the project delete; the second restore, of the deleted
	// project, had nothing to checkpoint), each audited on its own.
	want := map[string]int{"create_checkpoint/ok": 3, "restore_checkpoint/ok": 2, "restore_checkpoint/error": 3, "delete_checkpoint/ok": 1, "delete_checkpoint/error": 1}
	for k, n := range want {
		if acts[k] != n {
			t.Errorf("audit %s: %d records, want %d (all: %v)", k, acts[k], n, acts)
		}
	}
	if b, _ := os.ReadFile(g.AuditFile); strings.Contains(string(b), secret) || strings.Contains(string(b), "line two") {
		t.Error("the audit file holds file content")
	}
	if strings.Contains(g.Logs(), secret) || strings.Contains(sc.Logs(), secret) {
		t.Error("a log holds file content")
	}

	// The OpenAPI document describes the routes.
	r = admin(t, g, http.MethodGet, api+"/openapi.json", "")
	for _, p := range []string{`"/api/v1/agent-gateway/agents/{agent_id}/checkpoints"`, `"/api/v1/agent-gateway/agents/{agent_id}/checkpoints/{checkpoint_id}:restore"`, `CHECKPOINT_REASON_BEFORE_RESTORE`} {
		if !strings.Contains(string(r.Body), p) {
			t.Errorf("openapi.json lacks %s", p)
		}
	}
}

// A listing with a path says over REST when it searched only the newest
// candidates (davfs decodes at most MaxHoldingDecodes manifests), so that
// the portal does not present it as every checkpoint holding the path.
func TestCheckpointsRESTPathTruncated(t *testing.T) {
	projects := t.TempDir()
	ckFile(t, projects, "demo/notes.txt", "one\n")
	// The default bound of the store is MaxHoldingDecodes: room for one more.
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, Configure: func(c *sidecar.Config) {
		c.Services.Checkpoints.MaxPerWorkspace = checkpoint.MaxHoldingDecodes + 1
	}})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	base := api + "/agents/codex-a/checkpoints"
	ws := `"workspace":{"scope":"PROJECT","project_name":"demo"}`
	q := "workspace.scope=PROJECT&workspace.project_name=demo&path=notes.txt"
	type listing struct {
		Checkpoints []ckREST `json:"checkpoints"`
		Truncated   *bool    `json:"truncated"`
	}

	var ids []string
	create := func() {
		t.Helper()
		var c ckREST
		ckJSON(t, admin(t, g, http.MethodPost, base, `{`+ws+`}`), 200, &c)
		ids = append(ids, c.ID)
	}
	create()
	var l listing
	ckJSON(t, admin(t, g, http.MethodGet, base+"?"+q, ""), 200, &l)
	if len(l.Checkpoints) != 1 || l.Truncated != nil && *l.Truncated {
		t.Fatalf("one checkpoint: %+v", l)
	}
	for len(ids) < checkpoint.MaxHoldingDecodes+1 {
		create()
	}
	l = listing{}
	r := admin(t, g, http.MethodGet, base+"?"+q, "")
	ckJSON(t, r, 200, &l)
	if l.Truncated == nil || !*l.Truncated || len(l.Checkpoints) != checkpoint.MaxHoldingDecodes || l.Checkpoints[0].ID != ids[len(ids)-1] {
		t.Fatalf("%d checkpoints, newest %s: want the %d newest, truncated: %s", len(ids), ids[len(ids)-1], checkpoint.MaxHoldingDecodes, r.Body)
	}
}
