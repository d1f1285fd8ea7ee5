package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/contracts"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/gatewaytest"
)

// PRD §15.2 "Proto, gRPC-Gateway, Swagger and SDK consistent": the served
// document is contracts.OpenAPI and names every RPC of the service with the
// route the gateway actually serves.
func TestOpenAPIDocument(t *testing.T) {
	g, _, _ := twoFakes(t, gatewaytest.Options{})
	r := admin(t, g, http.MethodGet, api+"/openapi.json", "")
	if r.Status != http.StatusOK || !bytes.Equal(r.Body, contracts.OpenAPI) {
		t.Fatalf("openapi.json: %d, equal to contracts.OpenAPI: %v", r.Status, bytes.Equal(r.Body, contracts.OpenAPI))
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string]string{}
	for p, methods := range doc.Paths {
		for m, op := range methods {
			ops[op.OperationID] = strings.ToUpper(m) + " " + p
		}
	}
	svc := workspacev1.File_workspace_v1_management_proto.Services().ByName("WorkspaceManagementService")
	for i := 0; i < svc.Methods().Len(); i++ {
		name := string(svc.Methods().Get(i).Name())
		if _, ok := ops["WorkspaceManagementService_"+name]; !ok {
			t.Errorf("RPC %s missing from the OpenAPI document", name)
		}
	}
	// Every documented route answers (not the router's 404) when called.
	for id, route := range ops {
		method, path, _ := strings.Cut(route, " ")
		path = strings.NewReplacer("{agent_id}", "codex-c", "{name}", "x").Replace(path)
		r := admin(t, g, method, path+"?workspace.scope=GLOBAL", "")
		if id == "WorkspaceManagementService_ListAgents" {
			if r.Status != 200 {
				t.Errorf("%s: %d", route, r.Status)
			}
			continue
		}
		if r.Status != http.StatusConflict || r.reason(t) != "PROJECT_MANAGEMENT_DISABLED" {
			t.Errorf("%s (%s) did not reach the service: %d %s", id, route, r.Status, r.Body)
		}
	}
}

func TestPortalAndHeaders(t *testing.T) {
	g, _, _ := twoFakes(t, gatewaytest.Options{})
	for _, p := range []string{"/", "/agents/codex-a/projects/demo"} {
		req, _ := http.NewRequest(http.MethodGet, g.URL+p, nil)
		r := do(t, req)
		if r.Status != 200 || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s", p, r.Status, r.Header.Get("Content-Type"))
		}
		csp := r.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("CSP = %q", csp)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Error("no X-Content-Type-Options: nosniff")
		}
	}
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/assets/missing.js", nil)
	if r := do(t, req); r.Status != http.StatusNotFound {
		t.Errorf("missing asset: %d", r.Status)
	}
	req, _ = http.NewRequest(http.MethodOptions, g.URL+"/", nil)
	r := do(t, req)
	if r.Status >= 300 || !strings.Contains(r.Header.Get("DAV"), "1") {
		t.Errorf("OPTIONS /: %d DAV=%q", r.Status, r.Header.Get("DAV"))
	}
}

func TestMetrics(t *testing.T) {
	g, _, b := twoFakes(t, gatewaytest.Options{MetricsServer: true})
	admin(t, g, http.MethodGet, api+"/agents/codex-a/projects", "")
	admin(t, g, http.MethodPut, api+"/agents/codex-a/projects/files", `{"workspace":{"scope":"GLOBAL"},"path":"fail/REVISION_MISMATCH"}`)
	admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/files?workspace.scope=PROJECT&workspace.project_name=p&path=fail/DENYLISTED", "")
	admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/files?workspace.scope=PROJECT&workspace.project_name=p&path=fail/TOO_LARGE", "")
	admin(t, g, http.MethodPost, api+"/agents/codex-a/projects", `{"name":"fail/GIT_INIT_FAILED"}`)
	b.Stop()
	admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", "")

	r := admin(t, g, http.MethodGet, "/metrics", "")
	if r.Status != 200 {
		t.Fatalf("/metrics: %d", r.Status)
	}
	req, _ := http.NewRequest(http.MethodGet, g.MetricsURL+"/metrics", nil)
	rm := do(t, req)
	if rm.Status != 200 {
		t.Fatalf("metrics server /metrics (unauthenticated): %d", rm.Status)
	}
	for _, body := range []string{string(r.Body), string(rm.Body)} {
		for _, want := range []string{
			`agent_gateway_requests_total{action="list_projects",agent_id="codex-a"} 1`,
			`agent_gateway_requests_succeeded_total{action="list_projects",agent_id="codex-a"} 1`,
			`agent_gateway_revision_conflicts_total{action="update_file",agent_id="codex-a"} 1`,
			`agent_gateway_path_rejections_total{agent_id="codex-a",reason="DENYLISTED"} 1`,
			`agent_gateway_size_limit_rejections_total{action="get_file",agent_id="codex-a",reason="TOO_LARGE"} 1`,
			`agent_gateway_git_init_failures_total{agent_id="codex-a"} 1`,
			`agent_gateway_sidecar_unavailable_total{agent_id="codex-b"} 1`,
			`agent_gateway_request_duration_seconds_count{action="list_projects",agent_id="codex-a"} 1`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		req, _ := http.NewRequest(http.MethodGet, g.MetricsURL+p, nil)
		if r := do(t, req); r.Status != 200 {
			t.Errorf("metrics server %s: %d", p, r.Status)
		}
	}
}

// Bad configuration: exit status 2 and one line per problem naming the key.
func TestBadConfigExits2(t *testing.T) {
	bin, err := gatewaytest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cfg := `httpServer: { address: "nonsense" }
agentRuntime:
  defaultAgent: missing
  agents:
    codex-a:
      provider: ""
      sidecar: { endpoint: "127.0.0.1:1", timeout: -1s }
auth:
  tokens:
    - { operator: alice, role: admin, sha256: "abc" }
  trustedProxy: { cidrs: ["not-a-cidr"], userHeader: X-User, groupsHeader: X-Groups, adminGroup: admins }
`
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--config", path)
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v, want status 2; stderr:\n%s", err, stderr.String())
	}
	for _, key := range []string{"httpServer.address", "agentRuntime.defaultAgent", "agentRuntime.agents.codex-a.provider",
		"agentRuntime.agents.codex-a.sidecar.timeout", "auth.tokens[0].sha256", "auth.trustedProxy.cidrs[0]",
		"agentRuntime.sidecarTLS.certFile", "agentRuntime.sidecarTLS.keyFile", "agentRuntime.sidecarTLS.caFile"} {
		if !strings.Contains(stderr.String(), key) {
			t.Errorf("stderr does not name %s:\n%s", key, stderr.String())
		}
	}
	if n := strings.Count(strings.TrimSpace(stderr.String()), "\n") + 1; n != 9 {
		t.Errorf("%d lines, want 9:\n%s", n, stderr.String())
	}

	// Unknown keys are refused.
	if err := os.WriteFile(path, []byte("httpServer: { address: \":0\", bogus: 1 }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	cmd = exec.Command(bin, "--config", path)
	cmd.Stderr = &stderr
	err = cmd.Run()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "bogus") {
		t.Errorf("unknown key: %v\n%s", err, stderr.String())
	}
}
