package gateway_test

// Automatic checkpoints over REST (issue #15 review): the skip_checkpoint
// override of a delete when the store is full, and the audit of every
// automatic checkpoint (before a recursive delete, a project delete and a
// restore). The real gateway binary in front of a real agent-sidecar.

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// entryRevision is the revision of name in dir of project, as the REST
// listing hands it out.
func entryRevision(t *testing.T, g *gatewaytest.Gateway, project, dir, name string) string {
	t.Helper()
	var page struct {
		Entries []struct{ Name, Revision string }
	}
	ckJSON(t, admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/entries?workspace.scope=PROJECT&workspace.project_name="+project+"&path="+url.QueryEscape(dir), ""), 200, &page)
	for _, e := range page.Entries {
		if e.Name == name {
			return e.Revision
		}
	}
	t.Fatalf("%s/%s not listed: %+v", project, dir, page)
	return ""
}

func deleteEntryURL(project, path, rev, extra string) string {
	return api + "/agents/codex-a/projects/entries?workspace.scope=PROJECT&workspace.project_name=" + project +
		"&path=" + url.QueryEscape(path) + "&expected_revision=" + url.QueryEscape(rev) + "&recursive=true" + extra
}

// auditOf returns the audit records of action, in order.
func auditOf(t *testing.T, g *gatewaytest.Gateway, action string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range g.AuditRecords(t) {
		if rec["action"] == action {
			out = append(out, rec)
		}
	}
	return out
}

// A full store refuses a recursive delete and a project delete (nothing is
// deleted) with a message naming skip_checkpoint; with skip_checkpoint=true
// they go ahead without a checkpoint, and the audit says so.
func TestDeleteSkipCheckpointREST(t *testing.T) {
	projects := t.TempDir()
	big := strings.Repeat("x", 8<<10)
	ckFile(t, projects, "demo/big/blob.bin", big)
	ckFile(t, projects, "demo/keep.txt", "keep\n")
	ckFile(t, projects, "doomed/blob.bin", big)
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects,
		Configure: func(c *sidecar.Config) { c.Services.Checkpoints.MaxTotalBytes = 4 << 10 }})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})

	rev := entryRevision(t, g, "demo", "", "big")
	r := admin(t, g, http.MethodDelete, deleteEntryURL("demo", "big", rev, ""), "")
	if r.Status != http.StatusInsufficientStorage || r.reason(t) != "CHECKPOINT_LIMIT" ||
		!strings.Contains(string(r.Body), "skip_checkpoint=true") {
		t.Fatalf("delete into a full store: %d %s", r.Status, r.Body)
	}
	if _, err := os.Stat(filepath.Join(projects, "demo/big/blob.bin")); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
	var del struct {
		AutoCheckpointID string `json:"auto_checkpoint_id"`
	}
	ckJSON(t, admin(t, g, http.MethodDelete, deleteEntryURL("demo", "big", rev, "&skip_checkpoint=true"), ""), 200, &del)
	if _, err := os.Stat(filepath.Join(projects, "demo/big")); !os.IsNotExist(err) || del.AutoCheckpointID != "" {
		t.Fatalf("skip_checkpoint delete: %v, auto checkpoint %q", err, del.AutoCheckpointID)
	}

	r = admin(t, g, http.MethodDelete, api+"/agents/codex-a/projects/doomed?confirm_name=doomed", "")
	if r.reason(t) != "CHECKPOINT_LIMIT" || !strings.Contains(string(r.Body), "skip_checkpoint=true") {
		t.Fatalf("project delete into a full store: %d %s", r.Status, r.Body)
	}
	if _, err := os.Stat(filepath.Join(projects, "doomed/blob.bin")); err != nil {
		t.Fatalf("a refused project delete deleted: %v", err)
	}
	ckJSON(t, admin(t, g, http.MethodDelete, api+"/agents/codex-a/projects/doomed?confirm_name=doomed&skip_checkpoint=true", ""), 200, &del)
	if _, err := os.Stat(filepath.Join(projects, "doomed")); !os.IsNotExist(err) || del.AutoCheckpointID != "" {
		t.Fatalf("skip_checkpoint project delete: %v, auto checkpoint %q", err, del.AutoCheckpointID)
	}
	var list struct{ Checkpoints []ckREST }
	for _, p := range []string{"demo", "doomed"} {
		ckJSON(t, admin(t, g, http.MethodGet, api+"/agents/codex-a/checkpoints?workspace.scope=PROJECT&workspace.project_name="+p, ""), 200, &list)
		if len(list.Checkpoints) != 0 {
			t.Errorf("%s: checkpoints %+v", p, list.Checkpoints)
		}
	}

	for _, action := range []string{"delete_entry", "delete_project"} {
		recs := auditOf(t, g, action)
		if len(recs) != 2 || recs[0]["result"] != "error" || recs[0]["reason"] != "CHECKPOINT_LIMIT" || recs[0]["skip_checkpoint"] != nil ||
			recs[1]["result"] != "ok" || recs[1]["skip_checkpoint"] != true || recs[1]["auto_checkpoint_id"] != nil {
			t.Errorf("%s audit: %v", action, recs)
		}
	}
	if n := len(auditOf(t, g, "create_checkpoint")); n != 0 {
		t.Errorf("%d create_checkpoint records, want none", n)
	}
}

// Each automatic checkpoint has its own create_checkpoint record (automatic,
// with its reason and ID), and the mutation's record names it.
func TestAutomaticCheckpointAuditREST(t *testing.T) {
	const secret = "SECRET-AUTO-5d1e"
	projects := t.TempDir()
	ckFile(t, projects, "demo/src/a.go", "package a // "+secret+"\n")
	ckFile(t, projects, "demo/notes.txt", "one\n")
	ckFile(t, projects, "gone/x.txt", secret+"\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	base := api + "/agents/codex-a/checkpoints"
	ws := `"workspace":{"scope":"PROJECT","project_name":"demo"}`
	q := "workspace.scope=PROJECT&workspace.project_name=demo"

	// A recursive delete.
	var del struct {
		AutoCheckpointID string `json:"auto_checkpoint_id"`
	}
	ckJSON(t, admin(t, g, http.MethodDelete, deleteEntryURL("demo", "src", entryRevision(t, g, "demo", "", "src"), ""), ""), 200, &del)
	beforeDelete := del.AutoCheckpointID
	// A project delete.
	ckJSON(t, admin(t, g, http.MethodDelete, api+"/agents/codex-a/projects/gone?confirm_name=gone", ""), 200, &del)
	beforeProject := del.AutoCheckpointID
	// A restore (of the checkpoint the recursive delete took) over a src
	// the agent made again: its undo checkpoint holds that.
	var cmp struct {
		PlanToken string `json:"plan_token"`
	}
	ckFile(t, projects, "demo/src/a.go", "package b\n")
	ckJSON(t, admin(t, g, http.MethodGet, base+"/"+beforeDelete+"/compare?"+q, ""), 200, &cmp)
	var res struct {
		UndoCheckpointID string `json:"undo_checkpoint_id"`
	}
	ckJSON(t, admin(t, g, http.MethodPost, base+"/"+beforeDelete+":restore", `{`+ws+`,"plan_token":"`+cmp.PlanToken+`"}`), 200, &res)
	if b, _ := os.ReadFile(filepath.Join(projects, "demo/src/a.go")); !strings.Contains(string(b), secret) {
		t.Fatalf("src not restored: %q", b)
	}
	beforeRestore := res.UndoCheckpointID
	if beforeDelete == "" || beforeProject == "" || beforeRestore == "" {
		t.Fatalf("automatic checkpoint IDs: delete %q, project delete %q, restore %q", beforeDelete, beforeProject, beforeRestore)
	}

	creates := auditOf(t, g, "create_checkpoint")
	want := []struct{ reason, id, project, path string }{
		{"before_delete", beforeDelete, "demo", "src"},
		{"before_project_delete", beforeProject, "gone", ""},
		{"before_restore", beforeRestore, "demo", "src"},
	}
	if len(creates) != len(want) {
		t.Fatalf("create_checkpoint records: %v", creates)
	}
	for i, w := range want {
		c := creates[i]
		if c["automatic"] != true || c["checkpoint_reason"] != w.reason || c["checkpoint_id"] != w.id || c["result"] != "ok" ||
			c["project_name"] != w.project || c["source_path"] != w.path || c["operator"] != gatewaytest.AdminOperator {
			t.Errorf("create_checkpoint %s: %v", w.reason, c)
		}
	}
	for action, id := range map[string]string{"delete_entry": beforeDelete, "delete_project": beforeProject, "restore_checkpoint": beforeRestore} {
		recs := auditOf(t, g, action)
		if len(recs) != 1 || recs[0]["auto_checkpoint_id"] != id || recs[0]["skip_checkpoint"] != nil {
			t.Errorf("%s audit: %v", action, recs)
		}
		if recs[0]["request_id"] == nil || recs[0]["request_id"] != creates[map[string]int{"delete_entry": 0, "delete_project": 1, "restore_checkpoint": 2}[action]]["request_id"] {
			t.Errorf("%s and its checkpoint have different request IDs", action)
		}
	}
	if b, _ := os.ReadFile(g.AuditFile); strings.Contains(string(b), secret) {
		t.Error("the audit file holds file content")
	}
}

// The automatic checkpoint a WebDAV DELETE of a folder takes (here under a
// LOCK the client holds: folders have no ETag) is audited like REST's: its
// own create_checkpoint record, named by the DELETE's auto_checkpoint_id;
// the sidecar's header naming it never reaches the client.
func TestAutomaticCheckpointAuditWebDAV(t *testing.T) {
	const secret = "SECRET-AUTO-DAV-77c1"
	projects := t.TempDir()
	ckFile(t, projects, "demo/src/a.go", "package a // "+secret+"\n")
	ckFile(t, projects, "demo/keep.txt", "stays\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects})
	g := gatewaytest.Start(t, gatewaytest.Options{Writable: true, Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	dav := func(method, path, body string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, g.URL+"/dav/codex-a/projects/demo/"+path, strings.NewReader(body))
		req.SetBasicAuth("x", g.AdminToken)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	lock := dav("LOCK", "src/", `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>t</D:owner></D:lockinfo>`,
		"Depth", "infinity", "Timeout", "Second-60", "Content-Type", "application/xml")
	token := lock.Header.Get("Lock-Token")
	if lock.StatusCode != http.StatusOK || token == "" {
		t.Fatalf("LOCK: %d %q", lock.StatusCode, token)
	}
	del := dav(http.MethodDelete, "src/", "", "If", "("+token+")")
	if del.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE under the lock: %d", del.StatusCode)
	}
	for k := range del.Header {
		if strings.HasPrefix(k, "X-Workspace-") {
			t.Errorf("the client got %s", k)
		}
	}
	if _, err := os.Stat(filepath.Join(projects, "demo/src")); !os.IsNotExist(err) {
		t.Fatalf("src still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(projects, "demo/keep.txt")); err != nil {
		t.Fatalf("a file beside it changed: %v", err)
	}
	// The WebDAV audit records are written once the response is sent; the
	// two reads of the log are apart, so both records are waited for.
	var creates, dels []map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		creates, dels = auditOf(t, g, "create_checkpoint"), auditOf(t, g, "webdav.DELETE")
		if (len(creates) > 0 && len(dels) > 0) || time.Now().After(deadline) {
			break
		}
	}
	if len(creates) != 1 || len(dels) != 1 {
		t.Fatalf("create_checkpoint %v, webdav.DELETE %v", creates, dels)
	}
	c, d := creates[0], dels[0]
	id, _ := c["checkpoint_id"].(string)
	if id == "" || c["automatic"] != true || c["checkpoint_reason"] != "before_delete" || c["source_path"] != "src" ||
		c["project_name"] != "demo" || c["result"] != "ok" || c["operator"] != gatewaytest.AdminOperator || c["request_id"] != d["request_id"] {
		t.Errorf("create_checkpoint: %v", c)
	}
	if d["auto_checkpoint_id"] != id || d["result"] != "ok" {
		t.Errorf("webdav.DELETE: %v (checkpoint %q)", d, id)
	}
	// The checkpoint named is the one that holds the folder.
	var list struct {
		Checkpoints []struct {
			ID string `json:"id"`
		} `json:"checkpoints"`
	}
	ckJSON(t, admin(t, g, http.MethodGet, api+"/agents/codex-a/checkpoints?workspace.scope=PROJECT&workspace.project_name=demo&path=src", ""), 200, &list)
	if len(list.Checkpoints) != 1 || list.Checkpoints[0].ID != id {
		t.Errorf("checkpoints holding src: %+v, audited %q", list.Checkpoints, id)
	}
	if b, _ := os.ReadFile(g.AuditFile); strings.Contains(string(b), secret) {
		t.Error("the audit file holds file content")
	}
}
