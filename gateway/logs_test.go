package gateway_test

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
)

// closedAddr is a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Issue #13: no log line names an endpoint. The real gateway runs against
// an unreachable sidecar endpoint, with grpc-go's own logging turned up as
// an operator might (GRPC_GO_LOG_SEVERITY_LEVEL=info); every REST call
// fails as unavailable, and the gateway's entire output, from start to
// stop, never contains the endpoint.
func TestNoEndpointInLogs(t *testing.T) {
	rpc, dav := closedAddr(t), closedAddr(t)
	g := gatewaytest.Start(t, gatewaytest.Options{
		Agents:   []gatewaytest.Agent{{ID: "codex-a", RPCAddr: rpc, DavURL: "https://" + dav}},
		Writable: true,
		Env:      []string{"GRPC_GO_LOG_SEVERITY_LEVEL=info", "GRPC_GO_LOG_VERBOSITY_LEVEL=99"},
	})
	p := api + "/agents/codex-a/projects"
	for _, c := range []struct{ method, path, body string }{
		{"GET", p, ""},
		{"POST", p, `{"name":"demo"}`},
		{"GET", p + "/entries?workspace.scope=PROJECT&workspace.project_name=demo&path=", ""},
		{"GET", p + "/files?workspace.scope=PROJECT&workspace.project_name=demo&path=a.txt", ""},
		{"PUT", p + "/files", `{"workspace":{"scope":"GLOBAL"},"path":"skills/a.md","content":"x","expected_revision":"r"}`},
		{"POST", p + "/entries", `{"workspace":{"scope":"PROJECT","project_name":"demo"},"parent_path":"","name":"n","type":"ENTRY_TYPE_FILE"}`},
		{"POST", p + "/entries:move", `{"workspace":{"scope":"PROJECT","project_name":"demo"},"source_path":"a","destination_path":"b","expected_revision":"r"}`},
		{"DELETE", p + "/entries?workspace.scope=PROJECT&workspace.project_name=demo&path=a&expected_revision=r", ""},
		{"DELETE", p + "/demo?confirm_name=demo", ""},
	} {
		r := admin(t, g, c.method, c.path, c.body)
		if r.Status != http.StatusServiceUnavailable || r.reason(t) != "SIDECAR_UNAVAILABLE" {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), rpc) {
			t.Errorf("%s %s: the response names the endpoint: %s", c.method, c.path, r.Body)
		}
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	logs := g.Logs()
	if !strings.Contains(logs, `"@message":"stopped"`) || !strings.Contains(logs, `"status":503`) {
		t.Fatalf("the log is not the whole run:\n%s", logs)
	}
	for _, endpoint := range []string{rpc, dav} {
		if strings.Contains(logs, endpoint) {
			t.Errorf("the gateway's log names the sidecar endpoint %s:\n%s", endpoint, logs)
		}
	}
}
