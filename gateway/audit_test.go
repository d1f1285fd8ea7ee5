package gateway_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// PRD §15.2: request ID and operator travel to the sidecar as metadata; the
// operator comes only from authentication (X-Operator and body fields are
// ignored); no credentials are sent to the sidecar.
func TestSidecarMetadata(t *testing.T) {
	g, a, _ := twoFakes(t, gatewaytest.Options{})
	req := g.NewRequest(t, http.MethodPost, api+"/agents/codex-a/projects", strings.NewReader(`{"name":"md"}`))
	req.Header.Set("X-Request-ID", "client-chosen-id-42")
	req.Header.Set("X-Operator", "mallory")
	req.Header.Set("Grpc-Metadata-X-Operator", "mallory")
	r := do(t, req)
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if got := r.Header.Get("X-Request-ID"); got != "client-chosen-id-42" {
		t.Errorf("X-Request-ID = %q", got)
	}
	calls := a.Calls()
	md := calls[len(calls)-1].MD
	if v := md.Get(rpcmeta.RequestID); len(v) != 1 || v[0] != "client-chosen-id-42" {
		t.Errorf("x-request-id metadata = %v", v)
	}
	if v := md.Get(rpcmeta.Operator); len(v) != 1 || v[0] != gatewaytest.AdminOperator {
		t.Errorf("x-operator metadata = %v", v)
	}
	for k := range md {
		if strings.Contains(k, "authorization") || strings.Contains(k, "cookie") || strings.Contains(k, "token") {
			t.Errorf("credential-like metadata sent to the sidecar: %s=%v", k, md[k])
		}
	}

	// A bad client ID (too long / control characters) is replaced.
	req = g.NewRequest(t, http.MethodGet, api+"/agents/codex-a/projects", nil)
	req.Header.Set("X-Request-ID", strings.Repeat("x", 200))
	r = do(t, req)
	if got := r.Header.Get("X-Request-ID"); got == "" || len(got) > 128 {
		t.Errorf("X-Request-ID for an over-long client ID = %q", got)
	}
}

// PRD §12.1, §15.2: one complete record per mutation, field by field; never
// the content; GLOBAL paths outside the allowlist redacted.
func TestAuditRecords(t *testing.T) {
	g, a, _ := twoFakes(t, gatewaytest.Options{})
	const secret = "TOP-SECRET-FILE-CONTENT-7f3a"
	a.Put(t, "demo", "notes.txt", "old text")
	a.Put(t, "demo", "src/main.go", "package main\n")

	// "{rev}" in a step's path or body is the revision in the previous
	// step's response.
	steps := []struct {
		method, path, body string
		wantStatus         int
		want               map[string]any
	}{
		{"POST", "/agents/codex-a/projects", `{"name":"newproj"}`, 200,
			map[string]any{"action": "create_project", "workspace_scope": "PROJECT", "project_name": "newproj", "result": "ok", "grpc_code": "OK"}},
		{"PUT", "/agents/codex-a/projects/files", `{"workspace":{"scope":"PROJECT","project_name":"demo"},"path":"notes.txt","content":"` + secret + `","expected_revision":"` + a.Revision(t, "demo", "notes.txt") + `"}`, 200,
			map[string]any{"action": "update_file", "workspace_scope": "PROJECT", "project_name": "demo", "source_path": "notes.txt", "result": "ok", "grpc_code": "OK"}},
		{"PUT", "/agents/codex-a/projects/files", `{"workspace":{"scope":"PROJECT","project_name":"demo"},"path":"notes.txt","content":"` + secret + `","expected_revision":"stale"}`, 409,
			map[string]any{"action": "update_file", "source_path": "notes.txt", "result": "error", "grpc_code": "Aborted", "reason": "REVISION_MISMATCH"}},
		{"POST", "/agents/codex-a/projects/entries", `{"workspace":{"scope":"PROJECT","project_name":"demo"},"parent_path":"src","name":"a.go","type":"ENTRY_TYPE_FILE"}`, 200,
			map[string]any{"action": "create_entry", "source_path": "src/a.go", "result": "ok"}},
		{"POST", "/agents/codex-a/projects/entries:move", `{"workspace":{"scope":"PROJECT","project_name":"demo"},"source_path":"src/a.go","destination_path":"src/b.go","expected_revision":"{rev}"}`, 200,
			map[string]any{"action": "move_entry", "source_path": "src/a.go", "destination_path": "src/b.go", "result": "ok"}},
		{"DELETE", "/agents/codex-a/projects/entries?workspace.scope=PROJECT&workspace.project_name=demo&path=src/b.go&expected_revision={rev}", "", 200,
			map[string]any{"action": "delete_entry", "source_path": "src/b.go", "result": "ok"}},
		{"POST", "/agents/codex-a/projects/entries", `{"workspace":{"scope":"GLOBAL"},"parent_path":"","name":"auth.json","type":"ENTRY_TYPE_FILE"}`, 403,
			map[string]any{"action": "create_entry", "workspace_scope": "GLOBAL", "project_name": "", "source_path": "[redacted]", "result": "error", "reason": "OUTSIDE_GLOBAL"}},
		{"POST", "/agents/codex-a/projects/entries", `{"workspace":{"scope":"GLOBAL"},"parent_path":"skills","name":"tool.md","type":"ENTRY_TYPE_FILE"}`, 200,
			map[string]any{"action": "create_entry", "workspace_scope": "GLOBAL", "source_path": "skills/tool.md"}},
		{"DELETE", "/agents/codex-a/projects/newproj?confirm_name=newproj", "", 200,
			map[string]any{"action": "delete_project", "project_name": "newproj", "result": "ok"}},
		{"POST", "/agents/codex-a/projects", `{"name":"x","operator":"mallory"}`, 400,
			map[string]any{"action": "create_project", "result": "error", "grpc_code": "InvalidArgument", "reason": "INVALID_ARGUMENT", "project_name": ""}},
		{"DELETE", "/agents/codex-a/projects/entries?workspace.scope=BOGUS&path=x", "", 400,
			map[string]any{"action": "delete_entry", "result": "error", "grpc_code": "InvalidArgument", "reason": "INVALID_ARGUMENT", "http_status": float64(400)}},
		{"POST", "/agents/ghost/projects", `{"name":"x"}`, 404,
			map[string]any{"action": "create_project", "agent_id": "ghost", "result": "error", "grpc_code": "NotFound", "reason": "AGENT_NOT_FOUND"}},
	}
	var rev string
	for i, s := range steps {
		req := g.NewRequest(t, s.method, api+strings.ReplaceAll(s.path, "{rev}", rev), strings.NewReader(strings.ReplaceAll(s.body, "{rev}", rev)))
		req.Header.Set("X-Request-ID", "audit-step-"+string(rune('a'+i)))
		req.Header.Set("X-Operator", "mallory")
		r := do(t, req)
		if r.Status != s.wantStatus {
			t.Fatalf("step %d %s %s: %d %s", i, s.method, s.path, r.Status, r.Body)
		}
		var e struct{ Revision string }
		_ = json.Unmarshal(r.Body, &e)
		rev = e.Revision
	}
	recs := g.AuditRecords(t)
	if len(recs) != len(steps) {
		t.Fatalf("%d audit records for %d mutations: %v", len(recs), len(steps), recs)
	}
	for i, s := range steps {
		rec := recs[i]
		base := map[string]any{"request_id": "audit-step-" + string(rune('a'+i)), "operator": gatewaytest.AdminOperator, "agent_id": "codex-a"}
		for k, v := range base {
			if _, override := s.want[k]; !override && rec[k] != v {
				t.Errorf("record %d: %s = %v, want %v", i, k, rec[k], v)
			}
		}
		for k, v := range s.want {
			if rec[k] != v {
				t.Errorf("record %d (%s): %s = %v, want %v", i, s.want["action"], k, rec[k], v)
			}
		}
		for _, k := range []string{"time", "request_id", "operator", "agent_id", "workspace_scope", "project_name", "action", "source_path", "destination_path", "result", "grpc_code", "duration_ms"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("record %d lacks %s: %v", i, k, rec)
			}
		}
	}
	data, _ := os.ReadFile(g.AuditFile)
	logs := g.Logs()
	for _, needle := range []string{secret, "auth.json", "mallory", a.Addr, g.AdminToken} {
		if strings.Contains(string(data), needle) {
			t.Errorf("audit file contains %q", needle)
		}
		if strings.Contains(logs, needle) {
			t.Errorf("gateway log contains %q", needle)
		}
	}
	fi, err := os.Stat(g.AuditFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit file mode: %v %v", fi.Mode(), err)
	}
	if !strings.Contains(logs, `"@message":"audit"`) {
		t.Error("audit records are not in the log")
	}
}

// grpc-gateway's X-HTTP-Method-Override (a form POST that its mux serves
// as another method) must not reach a mutation the audit fallback does not
// see as one: a POST .../projects/demo served as DELETE and refused before
// the service (a repeated confirm_name) left no audit record.
func TestMethodOverrideIsNotAnUnauditedMutation(t *testing.T) {
	g, _, _ := twoFakes(t, gatewaytest.Options{})
	req := g.NewRequest(t, http.MethodPost, api+"/agents/codex-a/projects/demo?confirm_name=a&confirm_name=b", strings.NewReader("x=1"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-HTTP-Method-Override", "DELETE")
	r := do(t, req)
	recs := g.AuditRecords(t)
	if r.Status < 400 || (r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed && len(recs) != 1) {
		t.Fatalf("POST with X-HTTP-Method-Override: DELETE: %d %s, %d audit records %v", r.Status, r.Body, len(recs), recs)
	}
}
