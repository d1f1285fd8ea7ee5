package gateway_test

// Integration tests with two real agent-sidecar processes (sidecar/sidecartest)
// behind the real gateway binary (PRD §15.2). They need a working davfs core:
// while davfs still panics "not implemented", they fail with the sidecar's
// logs attached.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

type realSetup struct {
	g      *gatewaytest.Gateway
	a, b   *sidecartest.Sidecar
	agents []gatewaytest.Agent
}

func startReal(t *testing.T, writable bool) realSetup {
	t.Helper()
	small := func(c *sidecar.Config) { c.Services.Project.MaxEditableFileSize = 1024 }
	a := sidecartest.Start(t, sidecartest.Options{Configure: small})
	b := sidecartest.Start(t, sidecartest.Options{AgentID: "codex-b", Configure: small})
	agents := []gatewaytest.Agent{
		{ID: "codex-a", RPCAddr: a.RPCAddr, DavURL: a.DavURL},
		{ID: "codex-b", RPCAddr: b.RPCAddr, DavURL: b.DavURL},
		{ID: "codex-c"},
	}
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: agents, Writable: writable})
	return realSetup{g: g, a: a, b: b, agents: agents}
}

func projectQuery(project, path string) string {
	return "workspace.scope=PROJECT&workspace.project_name=" + url.QueryEscape(project) + "&path=" + url.QueryEscape(path)
}

// getFile returns content and revision over REST.
func getFile(t *testing.T, g *gatewaytest.Gateway, agent, project, path string) (string, string, response) {
	t.Helper()
	r := admin(t, g, http.MethodGet, api+"/agents/"+agent+"/projects/files?"+projectQuery(project, path), "")
	if r.Status != http.StatusOK {
		return "", "", r
	}
	var out struct {
		Entry struct {
			Revision string `json:"revision"`
		} `json:"entry"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Content, out.Entry.Revision, r
}

func updateBody(project, path, content, rev string) string {
	b, _ := json.Marshal(map[string]any{
		"workspace": map[string]string{"scope": "PROJECT", "project_name": project},
		"path":      path, "content": content, "expected_revision": rev,
	})
	return string(b)
}

func TestWithRealSidecars(t *testing.T) {
	s := startReal(t, false)
	g := s.g
	contents := map[string]string{"codex-a": "alpha content AAA-71", "codex-b": "bravo content BBB-93"}

	t.Run("same project name on both agents, different content", func(t *testing.T) {
		for _, agent := range []string{"codex-a", "codex-b"} {
			r := admin(t, g, http.MethodPost, api+"/agents/"+agent+"/projects", `{"name":"demo"}`)
			if r.Status != http.StatusOK {
				t.Fatalf("%s create project: %d %s", agent, r.Status, r.Body)
			}
			if r.JSON(t)["git_initialized"] != true {
				t.Errorf("%s: project not git-initialised: %s", agent, r.Body)
			}
			r = admin(t, g, http.MethodPost, api+"/agents/"+agent+"/projects/entries",
				`{"workspace":{"scope":"PROJECT","project_name":"demo"},"parent_path":"","name":"README.md","type":"ENTRY_TYPE_FILE"}`)
			if r.Status != http.StatusOK {
				t.Fatalf("%s create entry: %d %s", agent, r.Status, r.Body)
			}
			_, rev, gr := getFile(t, g, agent, "demo", "README.md")
			if rev == "" {
				t.Fatalf("%s get: %d %s", agent, gr.Status, gr.Body)
			}
			r = admin(t, g, http.MethodPut, api+"/agents/"+agent+"/projects/files", updateBody("demo", "README.md", contents[agent], rev))
			if r.Status != http.StatusOK {
				t.Fatalf("%s update: %d %s", agent, r.Status, r.Body)
			}
		}
		for agent, want := range contents {
			got, _, r := getFile(t, g, agent, "demo", "README.md")
			if got != want {
				t.Errorf("%s: content %q, want %q (%d %s)", agent, got, want, r.Status, r.Body)
			}
		}
		onDisk, err := os.ReadFile(filepath.Join(s.b.ProjectsDir, "demo", "README.md"))
		if err != nil || string(onDisk) != contents["codex-b"] {
			t.Errorf("codex-b volume holds %q, %v", onDisk, err)
		}
	})

	t.Run("revision conflict is 409", func(t *testing.T) {
		r := admin(t, g, http.MethodPut, api+"/agents/codex-a/projects/files", updateBody("demo", "README.md", "x", "stale-revision"))
		if r.Status != http.StatusConflict || r.reason(t) != "REVISION_MISMATCH" {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})

	t.Run("too large is 413", func(t *testing.T) {
		_, rev, _ := getFile(t, g, "codex-a", "demo", "README.md")
		r := admin(t, g, http.MethodPut, api+"/agents/codex-a/projects/files", updateBody("demo", "README.md", strings.Repeat("z", 4096), rev))
		if r.Status != http.StatusRequestEntityTooLarge || r.reason(t) != "TOO_LARGE" {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})

	t.Run("denylisted name is 403", func(t *testing.T) {
		r := admin(t, g, http.MethodPost, api+"/agents/codex-a/projects/entries",
			`{"workspace":{"scope":"PROJECT","project_name":"demo"},"parent_path":"","name":"node_modules","type":"ENTRY_TYPE_DIRECTORY"}`)
		if r.Status != http.StatusForbidden || r.reason(t) != "DENYLISTED" {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})

	t.Run("CODEX_HOME outside the allowlist is unreachable", func(t *testing.T) {
		secret := "sk-never-shown-4242"
		p := filepath.Join(s.a.CodexHome, "auth.json")
		if err := os.WriteFile(p, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		sidecartest.Chown(t, p)
		r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/files?workspace.scope=GLOBAL&path=auth.json", "")
		if r.Status != http.StatusForbidden && r.Status != http.StatusNotFound {
			t.Errorf("%d %s", r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), secret) {
			t.Error("secret returned")
		}
	})

	t.Run("WebDAV read through the gateway", func(t *testing.T) {
		for agent, want := range contents {
			req, _ := http.NewRequest(http.MethodGet, g.URL+"/dav/"+agent+"/projects/demo/README.md", nil)
			req.SetBasicAuth("any", g.AdminToken)
			r := do(t, req)
			if r.Status != 200 || string(r.Body) != want {
				t.Errorf("%s GET: %d %q", agent, r.Status, r.Body)
			}
			if etag := r.Header.Get("ETag"); etag == "" {
				t.Errorf("%s: no ETag", agent)
			}
		}
		req, _ := http.NewRequest("PROPFIND", g.URL+"/dav/codex-a/projects/demo/", nil)
		req.SetBasicAuth("any", g.AdminToken)
		req.Header.Set("Depth", "1")
		r := do(t, req)
		if r.Status != 207 || !strings.Contains(string(r.Body), "/dav/codex-a/projects/demo/README.md") {
			t.Errorf("PROPFIND: %d %s", r.Status, r.Body)
		}
		for _, leak := range []string{s.a.DavURL, strings.TrimPrefix(s.a.DavURL, "https://"), s.a.ProjectsDir} {
			if strings.Contains(string(r.Body), leak) {
				t.Errorf("PROPFIND body names %q", leak)
			}
		}
		req, _ = http.NewRequest(http.MethodPut, g.URL+"/dav/codex-a/projects/demo/new.txt", strings.NewReader("nope"))
		req.SetBasicAuth("any", g.AdminToken)
		r = do(t, req)
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") == "" {
			t.Errorf("read-only PUT: %d Allow=%q", r.Status, r.Header.Get("Allow"))
		}
		req, _ = http.NewRequest("PROPFIND", g.URL+"/dav/codex-a/", nil)
		r = do(t, req)
		if r.Status != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("unauthenticated PROPFIND: %d %q", r.Status, r.Header.Get("WWW-Authenticate"))
		}
	})

	t.Run("audit has every mutation and no content", func(t *testing.T) {
		recs := g.AuditRecords(t)
		actions := map[string]int{}
		for _, rec := range recs {
			actions[rec["action"].(string)]++
			if rec["operator"] != gatewaytest.AdminOperator {
				t.Errorf("operator %v", rec["operator"])
			}
		}
		if actions["create_project"] != 2 || actions["create_entry"] < 3 || actions["update_file"] < 4 {
			t.Errorf("actions %v", actions)
		}
		webdav := 0
		for a := range actions {
			if strings.HasPrefix(a, "webdav.") {
				webdav++
			}
		}
		if webdav == 0 {
			t.Errorf("the refused WebDAV PUT was not audited: %v", actions)
		}
		data, _ := os.ReadFile(g.AuditFile)
		for _, needle := range []string{contents["codex-a"], contents["codex-b"], "sk-never-shown", s.a.RPCAddr, s.b.RPCAddr, s.a.ProjectsDir} {
			if strings.Contains(string(data), needle) || strings.Contains(g.Logs(), needle) {
				t.Errorf("audit or log contains %q", needle)
			}
		}
	})

	t.Run("a stopped sidecar is 503 for its agent only", func(t *testing.T) {
		before := admin(t, g, http.MethodGet, api+"/agents", "")
		if err := s.b.Stop(); err != nil {
			t.Logf("sidecar stop: %v", err)
		}
		r := admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", "")
		if r.Status != http.StatusServiceUnavailable || r.reason(t) != "SIDECAR_UNAVAILABLE" || strings.Contains(string(r.Body), s.b.RPCAddr) {
			t.Errorf("codex-b: %d %s", r.Status, r.Body)
		}
		req, _ := http.NewRequest(http.MethodGet, g.URL+"/dav/codex-b/projects/demo/README.md", nil)
		req.SetBasicAuth("any", g.AdminToken)
		if r := do(t, req); r.Status != http.StatusServiceUnavailable || strings.Contains(string(r.Body), strings.TrimPrefix(s.b.DavURL, "https://")) {
			t.Errorf("codex-b WebDAV: %d %s", r.Status, r.Body)
		}
		if got, _, r := getFile(t, g, "codex-a", "demo", "README.md"); got != contents["codex-a"] {
			t.Errorf("codex-a: %d %s", r.Status, r.Body)
		}
		after := admin(t, g, http.MethodGet, api+"/agents", "")
		if string(before.Body) != string(after.Body) {
			t.Errorf("ListAgents changed: %s -> %s", before.Body, after.Body)
		}
	})
}

// With webdav.writable the preconditions apply end to end, an
// unconditional overwrite is kept as a version (the default of a writable
// view with checkpoints on) that records the authenticated operator, and
// writes are audited with that operator.
func TestWritableWebDAVWithRealSidecar(t *testing.T) {
	s := startReal(t, true)
	g := s.g
	if r := admin(t, g, http.MethodPost, api+"/agents/codex-a/projects", `{"name":"w"}`); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	put := func(path, body string, hdr map[string]string) response {
		req, _ := http.NewRequest(http.MethodPut, g.URL+"/dav/codex-a/projects/w/"+path, strings.NewReader(body))
		req.SetBasicAuth("x", g.AdminToken)
		req.Header.Set("X-Operator", "mallory")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		return do(t, req)
	}
	const body = "webdav body CCC-55"
	if r := put("f.txt", body, map[string]string{"If-None-Match": "*"}); r.Status != 201 && r.Status != 204 {
		t.Fatalf("create PUT: %d %s", r.Status, r.Body)
	}
	if r := put("f.txt", "again", nil); r.Status != http.StatusNoContent && r.Status != http.StatusCreated {
		t.Errorf("PUT without If-Match on the default writable view: %d %s (want it kept and accepted)", r.Status, r.Body)
	}
	if r := put("f.txt", "stale", map[string]string{"If-Match": `"stale"`}); r.Status != http.StatusPreconditionFailed {
		t.Errorf("PUT with stale If-Match: %d", r.Status)
	}
	if got, _, _ := getFile(t, g, "codex-a", "w", "f.txt"); got != "again" {
		t.Errorf("content %q, want the unconditional PUT's", got)
	}
	var list struct {
		Checkpoints []struct{ Reason, Operator string }
	}
	if r := admin(t, g, http.MethodGet, api+"/agents/codex-a/checkpoints?"+projectQuery("w", "f.txt"), ""); r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
		t.Fatalf("list checkpoints: %d %s", r.Status, r.Body)
	}
	kept := 0
	for _, c := range list.Checkpoints {
		if c.Reason == "CHECKPOINT_REASON_BEFORE_WEBDAV_WRITE" {
			kept++
			if c.Operator != gatewaytest.AdminOperator {
				t.Errorf("the version kept records operator %q, want %q", c.Operator, gatewaytest.AdminOperator)
			}
		}
	}
	if kept != 1 {
		t.Errorf("%d versions kept of f.txt, want 1: %+v", kept, list.Checkpoints)
	}
	var puts []map[string]any
	for _, rec := range g.AuditRecords(t) {
		if rec["action"] == "webdav.PUT" {
			puts = append(puts, rec)
		}
	}
	if len(puts) != 3 {
		t.Fatalf("%d webdav.PUT records, want 3", len(puts))
	}
	first := puts[0]
	for k, v := range map[string]any{"operator": gatewaytest.AdminOperator, "agent_id": "codex-a", "workspace_scope": "PROJECT",
		"project_name": "w", "source_path": "f.txt", "result": "ok", "grpc_code": "OK"} {
		if first[k] != v {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	if puts[1]["result"] != "ok" || puts[1]["unconditional"] != true || puts[2]["result"] != "error" {
		t.Errorf("kept and refused PUTs recorded as %v %v", puts[1], puts[2])
	}
	// The codes come from the reason the sidecar named (errtable), not
	// from the status.
	if puts[2]["grpc_code"] != "Aborted" || puts[2]["reason"] != "REVISION_MISMATCH" {
		t.Errorf("refused PUT audited as %v/%v", puts[2]["grpc_code"], puts[2]["reason"])
	}
	data, _ := os.ReadFile(g.AuditFile)
	if strings.Contains(string(data), body) || strings.Contains(string(data), "mallory") {
		t.Error("audit holds content or the forged operator")
	}
}
