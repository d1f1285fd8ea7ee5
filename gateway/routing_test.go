package gateway_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
)

// PRD §15.2: all configured agents, sorted, capability and default flags,
// no sidecar contacted, no endpoint shown.
func TestListAgents(t *testing.T) {
	g, a, b := twoFakes(t, gatewaytest.Options{})
	r := admin(t, g, http.MethodGet, api+"/agents", "")
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var got struct {
		Agents []struct {
			AgentID                  string `json:"agent_id"`
			Provider                 string `json:"provider"`
			ProjectManagementEnabled bool   `json:"project_management_enabled"`
			IsDefault                bool   `json:"is_default"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id        string
		enabled   bool
		isDefault bool
	}{{"codex-a", true, true}, {"codex-b", true, false}, {"codex-c", false, false}}
	if len(got.Agents) != len(want) {
		t.Fatalf("agents = %s", r.Body)
	}
	for i, w := range want {
		ag := got.Agents[i]
		if ag.AgentID != w.id || ag.ProjectManagementEnabled != w.enabled || ag.IsDefault != w.isDefault || ag.Provider != "codex_app_server" {
			t.Errorf("agent %d = %+v, want %+v", i, ag, w)
		}
	}
	for _, secret := range []string{a.Addr, b.Addr, "127.0.0.1", "ws://", "invalid:4500", g.AdminToken} {
		if strings.Contains(string(r.Body), secret) {
			t.Errorf("ListAgents shows %q: %s", secret, r.Body)
		}
	}
	if n := len(a.Calls()) + len(b.Calls()); n != 0 {
		t.Errorf("ListAgents made %d sidecar calls, want 0", n)
	}
}

// PRD §15.2: clients routed by agent_id and isolated: the same project name
// on two agents holds different content.
func TestRoutingIsolation(t *testing.T) {
	g, a, b := twoFakes(t, gatewaytest.Options{})
	a.Put(t, "demo", "README.md", "content of A")
	b.Put(t, "demo", "README.md", "content of B")
	for agent, want := range map[string]string{"codex-a": "content of A", "codex-b": "content of B"} {
		r := admin(t, g, http.MethodGet, api+"/agents/"+agent+"/projects/files?workspace.scope=PROJECT&workspace.project_name=demo&path=README.md", "")
		if r.Status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", agent, r.Status, r.Body)
		}
		if c := r.JSON(t)["content"]; c != want {
			t.Errorf("%s: content = %v, want %q", agent, c, want)
		}
	}
	r := admin(t, g, http.MethodPost, api+"/agents/codex-b/projects", `{"name":"only-b"}`)
	if r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	ra := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects", "")
	if strings.Contains(string(ra.Body), "only-b") {
		t.Errorf("project created on codex-b is listed by codex-a: %s", ra.Body)
	}
	rb := admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", "")
	if !strings.Contains(string(rb.Body), "only-b") {
		t.Errorf("codex-b does not list its project: %s", rb.Body)
	}
}

func TestUnknownAgentAndNoSidecar(t *testing.T) {
	g, _, _ := twoFakes(t, gatewaytest.Options{})
	r := admin(t, g, http.MethodGet, api+"/agents/nope/projects", "")
	if r.Status != http.StatusNotFound || r.reason(t) != "AGENT_NOT_FOUND" {
		t.Errorf("unknown agent: %d %s", r.Status, r.Body)
	}
	r = admin(t, g, http.MethodGet, api+"/agents/codex-c/projects", "")
	if r.Status != http.StatusConflict || r.reason(t) != "PROJECT_MANAGEMENT_DISABLED" {
		t.Errorf("agent without sidecar: %d %s", r.Status, r.Body)
	}
}

// PRD §15.2: one unreachable sidecar gives Unavailable for its agent only;
// ListAgents is unchanged; the message never names the endpoint.
func TestStoppedSidecarIsUnavailableForItsAgentOnly(t *testing.T) {
	g, a, b := twoFakes(t, gatewaytest.Options{})
	before := admin(t, g, http.MethodGet, api+"/agents", "")
	b.Stop()
	r := admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", "")
	if r.Status != http.StatusServiceUnavailable || r.reason(t) != "SIDECAR_UNAVAILABLE" {
		t.Fatalf("stopped sidecar: %d %s", r.Status, r.Body)
	}
	for _, leak := range []string{b.Addr, "127.0.0.1", "dial", "connection refused"} {
		if strings.Contains(string(r.Body), leak) {
			t.Errorf("error body names %q: %s", leak, r.Body)
		}
	}
	if r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects", ""); r.Status != http.StatusOK {
		t.Errorf("other agent: %d %s", r.Status, r.Body)
	}
	after := admin(t, g, http.MethodGet, api+"/agents", "")
	if after.Status != http.StatusOK || string(after.Body) != string(before.Body) {
		t.Errorf("ListAgents changed after a sidecar stopped:\n%s\n%s", before.Body, after.Body)
	}
	_ = a
}

// A sidecar slower than its timeout is Unavailable (503) too.
func TestSlowSidecarTimesOut(t *testing.T) {
	g, _, _ := twoFakes(t, gatewaytest.Options{Configure: func(c *gateway.Config) {
		d := 300 * time.Millisecond
		ag := c.AgentRuntime.Agents["codex-a"]
		ag.Sidecar.Timeout = &d
	}})
	start := time.Now()
	r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/files?workspace.scope=GLOBAL&path=stall", "")
	if r.Status != http.StatusServiceUnavailable || r.reason(t) != "SIDECAR_UNAVAILABLE" {
		t.Fatalf("stalled sidecar: %d %s", r.Status, r.Body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s, want about the 300ms timeout", d)
	}
	if r := admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", ""); r.Status != http.StatusOK {
		t.Errorf("other agent: %d %s", r.Status, r.Body)
	}
}

// Errors without our ErrorInfo (transport text) never reach the client.
func TestSidecarErrorTextIsNotPassedThrough(t *testing.T) {
	g, _, _ := twoFakes(t, gatewaytest.Options{})
	r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/files?workspace.scope=GLOBAL&path=leak", "")
	if r.Status != http.StatusInternalServerError {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), "10.9.8.7") || strings.Contains(string(r.Body), "secret") {
		t.Errorf("transport text leaked: %s", r.Body)
	}
}

// PRD §15.2: file requests are forwarded whatever the agent is doing; the
// gateway never asks the agent runtime (codexAppServer) or any task service.
// A listener stands in for the app-server and must see no connection.
func TestNeverContactsTheAgentRuntime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	g, a, _ := twoFakes(t, gatewaytest.Options{Configure: func(c *gateway.Config) {
		for id, ag := range c.AgentRuntime.Agents {
			ag.CodexAppServer.Endpoint = "ws://" + ln.Addr().String()
			c.AgentRuntime.Agents[id] = ag
		}
	}})
	a.Put(t, "busy", "task.txt", "v1")
	admin(t, g, http.MethodGet, api+"/agents", "")
	if r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/files?workspace.scope=PROJECT&workspace.project_name=busy&path=task.txt", ""); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := admin(t, g, http.MethodPut, api+"/agents/codex-a/projects/files",
		`{"workspace":{"scope":"PROJECT","project_name":"busy"},"path":"task.txt","content":"v2","expected_revision":"`+a.Revision(t, "busy", "task.txt")+`"}`); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the gateway opened %d connections to the agent runtime", n)
	}
}

// A sidecar that comes back is usable again within seconds (bounded
// reconnect backoff), without restarting the gateway.
func TestRestartedSidecarRecovers(t *testing.T) {
	g, _, b := twoFakes(t, gatewaytest.Options{})
	if r := admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", ""); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	b.Stop()
	for i := 0; i < 5; i++ { // let the client's backoff grow
		if r := admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", ""); r.Status != http.StatusServiceUnavailable {
			t.Fatalf("stopped: %d %s", r.Status, r.Body)
		}
		time.Sleep(300 * time.Millisecond)
	}
	b.Restart(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", "")
		if r.Status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d five seconds after the sidecar came back: %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Projects named like the REST API's sub-resources ("entries", "files")
// are valid project names (PRD §7.3) and must be deletable through
// DELETE /projects/{name}: DELETE /projects/entries is also DeleteEntry's
// route, and the gateway tells the two apart by their query (DeleteProject
// has confirm_name and no workspace or path).
func TestProjectsNamedLikeRoutes(t *testing.T) {
	g, a, _ := twoFakes(t, gatewaytest.Options{})
	listed := func(name string) bool {
		r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects", "")
		if r.Status != http.StatusOK {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
		var got struct {
			Projects []struct{ Name string } `json:"projects"`
		}
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatal(err)
		}
		for _, p := range got.Projects {
			if p.Name == name {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"entries", "files"} {
		if r := admin(t, g, http.MethodPost, api+"/agents/codex-a/projects", `{"name":"`+name+`"}`); r.Status != http.StatusOK {
			t.Fatalf("create %s: %d %s", name, r.Status, r.Body)
		}
		if !listed(name) {
			t.Fatalf("project %s not listed after create", name)
		}
		// A wrong confirmation is still DeleteProject's error, not DeleteEntry's.
		r := admin(t, g, http.MethodDelete, api+"/agents/codex-a/projects/"+name+"?confirm_name=nope", "")
		if r.Status != http.StatusBadRequest || r.reason(t) != "CONFIRMATION_MISMATCH" {
			t.Errorf("delete %s with a wrong confirmation: %d %s, want 400 CONFIRMATION_MISMATCH", name, r.Status, r.Body)
		}
		if !listed(name) {
			t.Fatalf("project %s gone after a refused delete", name)
		}
		r = admin(t, g, http.MethodDelete, api+"/agents/codex-a/projects/"+name+"?confirm_name="+name, "")
		if r.Status != http.StatusOK {
			t.Errorf("delete %s: %d %s", name, r.Status, r.Body)
		}
		if listed(name) {
			t.Errorf("project %s still listed after delete", name)
		}
	}
	// DeleteEntry keeps its route: a file in project "demo".
	a.Put(t, "demo", "gone.txt", "x")
	r := admin(t, g, http.MethodDelete, api+"/agents/codex-a/projects/entries?workspace.scope=PROJECT&workspace.project_name=demo&path=gone.txt&expected_revision="+a.Revision(t, "demo", "gone.txt"), "")
	if r.Status != http.StatusOK {
		t.Errorf("DeleteEntry: %d %s", r.Status, r.Body)
	}
	// One audit record per delete, naming the project (or the entry).
	var deletes []string
	for _, rec := range g.AuditRecords(t) {
		if a, _ := rec["action"].(string); strings.HasPrefix(a, "delete_") {
			deletes = append(deletes, fmt.Sprintf("%s %v %v %v", a, rec["project_name"], rec["source_path"], rec["result"]))
		}
	}
	want := "delete_project entries  error|delete_project entries  ok|delete_project files  error|delete_project files  ok|delete_entry demo gone.txt ok"
	if got := strings.Join(deletes, "|"); got != want {
		t.Errorf("audit deletes:\n got %s\nwant %s", got, want)
	}
	var methods []string
	for _, c := range a.Calls() {
		methods = append(methods, c.Method)
	}
	if got := strings.Join(methods, ","); !strings.Contains(got, "DeleteProject") || !strings.HasSuffix(got, "DeleteEntry") {
		t.Errorf("sidecar calls = %s", got)
	}
}
