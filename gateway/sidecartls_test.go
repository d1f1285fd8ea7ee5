package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// Issue 23: the gateway checks which agent's sidecar it reached, not only
// its address. A sidecar whose certificate names codex-a, configured as
// codex-b's, is refused (503, on REST and WebDAV) while codex-a's entry for
// the same sidecar works.
func TestGatewayRefusesASidecarNamingAnotherAgent(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{AgentID: "codex-a"})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{
		{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL},
		{ID: "codex-b", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL},
	}})
	if r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects", ""); r.Status != http.StatusOK {
		t.Fatalf("codex-a: %d %s", r.Status, r.Body)
	}
	r := admin(t, g, http.MethodGet, api+"/agents/codex-b/projects", "")
	if r.Status != http.StatusServiceUnavailable || r.reason(t) != "SIDECAR_UNAVAILABLE" {
		t.Errorf("codex-b over codex-a's sidecar: %d %s", r.Status, r.Body)
	}
	for id, want := range map[string]int{"codex-a": http.StatusMultiStatus, "codex-b": http.StatusServiceUnavailable} {
		req, _ := http.NewRequest("PROPFIND", g.URL+"/dav/"+id+"/projects/", nil)
		req.Header.Set("Depth", "1")
		req.SetBasicAuth("any", g.AdminToken)
		if r := do(t, req); r.Status != want {
			t.Errorf("WebDAV %s: %d, want %d", id, r.Status, want)
		}
	}
	if strings.Contains(g.Logs(), strings.TrimPrefix(sc.DavURL, "https://")) {
		t.Error("the gateway's log names the sidecar's address")
	}
}
