//go:build k8stier

package tier

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/restwalk"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// discoveryNS is the dev overlay's namespace: the gateway's service
// account, Role and RoleBinding there are the ones the overlay applied.
const discoveryNS = "agent-workspace-dev"

// follow is how soon ListAgents must follow an EndpointSlice change.
const follow = 2 * time.Second

// testDiscovery (issue 26, API-server tier): a real gateway, signed in as
// the overlay's agent-gateway service account (its Role: get, list, watch
// EndpointSlices), discovers real sidecars from EndpointSlices created,
// made ready and deleted in the real API server; ListAgents follows within
// 2 s each way. A slice without the label, one in another namespace and a
// not-ready one are never routed to, and a slice that claims agent
// disc-b's label for disc-a's sidecar is refused by the certificate check.
func testDiscovery(t *testing.T, cp *controlPlane) {
	kc := cp.serviceAccountKubeconfig(t, discoveryNS, "agent-gateway")
	if out, _ := cp.kubectl(time.Minute, "--kubeconfig="+kc, "auth", "can-i", "list", "pods", "-n", discoveryNS); strings.TrimSpace(string(out)) != "no" {
		t.Fatalf("the gateway's service account may list pods: %s", out)
	}
	projects := filepath.Join(t.TempDir(), "projects")
	writeFile(t, filepath.Join(projects, "demo", "hello.txt"), "hello\n", 0o644)
	a := sidecartest.Start(t, sidecartest.Options{AgentID: "disc-a", ProjectsDir: projects})
	g := gatewaytest.Start(t, gatewaytest.Options{
		Agents:       []gatewaytest.Agent{{ID: "disc-static"}},
		DefaultAgent: "-",
		Configure: func(c *gateway.Config) {
			c.Kubernetes.Kubeconfig = kc
			c.AgentRuntime.Discovery.Enabled = true
		},
	})
	rc := restwalk.Client{URL: g.URL, Token: g.AdminToken}
	grpcPort, davPort := port(t, a.RPCAddr), port(t, a.DavURL)

	cp.applyYAML(endpointSlice("disc-a-1", discoveryNS, "disc-a", false, grpcPort, davPort))
	waitState(t, rc, "disc-a", "AGENT_STATE_UNREACHABLE")
	entries := restwalk.Q("disc-a", "entries", "PROJECT", "demo", "")
	if r := rc.Do(t, "GET", entries, nil); r.Status != 503 || r.Reason() != "SIDECAR_UNAVAILABLE" {
		t.Fatalf("an agent with no ready address was routed to: %d %s", r.Status, r.Body)
	}

	cp.applyYAML(endpointSlice("disc-a-1", discoveryNS, "disc-a", true, grpcPort, davPort))
	waitState(t, rc, "disc-a", "AGENT_STATE_READY")
	if names := restwalk.Must(t, 200, rc.Do(t, "GET", entries, nil), "list disc-a's demo").Names(); !slices.Contains(names, "hello.txt") {
		t.Fatalf("disc-a's demo lists %v", names)
	}
	if r := rc.Dav(t, "PROPFIND", "/dav/disc-a/projects/demo/", "Depth", "1"); r.Status != 207 || !strings.Contains(string(r.Body), "hello.txt") {
		t.Fatalf("WebDAV of disc-a: %d", r.Status)
	}
	if !slices.Contains(listedIDs(t, rc), "disc-static") {
		t.Fatal("the static agent is not listed beside the discovered one")
	}

	neverRouted(t, cp, rc, grpcPort, davPort)

	cp.mustKubectl("delete", "endpointslice", "-n", discoveryNS, "disc-a-1")
	waitState(t, rc, "disc-a", "")
	if r := rc.Do(t, "GET", entries, nil); r.Status != 404 || r.Reason() != "AGENT_NOT_FOUND" {
		t.Fatalf("a deleted agent answers %d %s", r.Status, r.Body)
	}
	if strings.Contains(g.Logs(), a.RPCAddr) {
		t.Error("the gateway's log names a sidecar's address")
	}
}

// neverRouted creates the slices that must not reach the sidecar as an
// agent: no label, another namespace, not ready, and an impostor (disc-b's
// label on disc-a's sidecar, whose certificate names disc-a).
func neverRouted(t *testing.T, cp *controlPlane, rc restwalk.Client, grpcPort, davPort int) {
	cp.applyYAML("apiVersion: v1\nkind: Namespace\nmetadata: {name: disc-elsewhere}\n")
	unlabelled := strings.Replace(endpointSlice("disc-x-1", discoveryNS, "disc-x", true, grpcPort, davPort), "agentworkspace.io/agent-id", "example.com/not-the-label", 1)
	cp.applyYAML(unlabelled)
	cp.applyYAML(endpointSlice("disc-y-1", "disc-elsewhere", "disc-y", true, grpcPort, davPort))
	cp.applyYAML(endpointSlice("disc-z-1", discoveryNS, "disc-z", false, grpcPort, davPort))
	cp.applyYAML(endpointSlice("disc-b-1", discoveryNS, "disc-b", true, grpcPort, davPort))
	waitState(t, rc, "disc-z", "AGENT_STATE_UNREACHABLE")
	waitState(t, rc, "disc-b", "AGENT_STATE_READY")
	ids := listedIDs(t, rc)
	for _, id := range []string{"disc-x", "disc-y"} {
		if slices.Contains(ids, id) {
			t.Errorf("%s was discovered (%v)", id, ids)
		}
		if r := rc.Do(t, "GET", restwalk.Q(id, "entries", "PROJECT", "demo", ""), nil); r.Status != 404 {
			t.Errorf("%s was routed to: %d %s", id, r.Status, r.Body)
		}
	}
	for _, id := range []string{"disc-z", "disc-b"} {
		r := rc.Do(t, "GET", restwalk.Q(id, "entries", "PROJECT", "demo", ""), nil)
		if r.Status != 503 || r.Reason() != "SIDECAR_UNAVAILABLE" || strings.Contains(string(r.Body), "hello.txt") {
			t.Errorf("%s reached disc-a's files: %d %s", id, r.Status, r.Body)
		}
		if d := rc.Dav(t, "PROPFIND", "/dav/"+id+"/projects/demo/", "Depth", "1"); d.Status != 503 {
			t.Errorf("WebDAV %s: %d, want 503", id, d.Status)
		}
	}
	cp.mustKubectl("delete", "endpointslice", "-n", discoveryNS, "disc-x-1", "disc-z-1", "disc-b-1")
}

// endpointSlice is the slice of agent id's sidecar Service on 127.0.0.1.
func endpointSlice(name, ns, id string, ready bool, grpcPort, davPort int) string {
	return fmt.Sprintf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %s
  namespace: %s
  labels: {agentworkspace.io/agent-id: %s, endpointslice.kubernetes.io/managed-by: tier-test}
addressType: IPv4
ports:
  - {name: grpc, port: %d, protocol: TCP}
  - {name: webdav, port: %d, protocol: TCP}
endpoints:
  - addresses: ["127.0.0.1"]
    conditions: {ready: %v}
`, name, ns, id, grpcPort, davPort, ready)
}

// listedIDs walks every page of ListAgents (pages of 50).
func listedIDs(t *testing.T, rc restwalk.Client) []string {
	t.Helper()
	ids, _ := listedStates(t, rc)
	return ids
}

func listedStates(t *testing.T, rc restwalk.Client) ([]string, map[string]string) {
	t.Helper()
	var ids []string
	states := map[string]string{}
	cursor := ""
	for range 1000 {
		r := restwalk.Must(t, 200, rc.Do(t, "GET", restwalk.API+"?page_size=50&cursor="+cursor, nil), "ListAgents")
		list, _ := r.JSON["agents"].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			id, _ := m["agent_id"].(string)
			st, _ := m["state"].(string)
			ids = append(ids, id)
			states[id] = st
		}
		if cursor, _ = r.JSON["next_cursor"].(string); cursor == "" {
			return ids, states
		}
	}
	t.Fatal("ListAgents has no last page")
	return nil, nil
}

// waitState waits (at most follow) until ListAgents shows id in state
// ("": not listed).
func waitState(t *testing.T, rc restwalk.Client, id, state string) {
	t.Helper()
	start := time.Now()
	for {
		_, states := listedStates(t, rc)
		got, listed := states[id]
		if state == "" && !listed || state != "" && got == state {
			t.Logf("%s %s after %v", id, cmpOr(state, "gone"), time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > follow {
			t.Fatalf("ListAgents did not follow within %v: %s is %q, want %q", follow, id, got, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func port(t *testing.T, addr string) int {
	t.Helper()
	addr = strings.TrimPrefix(addr, "https://")
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(p, &n)
	return n
}

// serviceAccountKubeconfig is a kubeconfig signed in as namespace/name's
// service account (a token from the TokenRequest API), with that
// namespace as its context's.
func (cp *controlPlane) serviceAccountKubeconfig(t *testing.T, namespace, name string) string {
	t.Helper()
	token := strings.TrimSpace(cp.mustKubectl("create", "token", name, "-n", namespace, "--duration=1h"))
	p := filepath.Join(t.TempDir(), "kubeconfig-"+name)
	writeFile(t, p, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tier
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: %s
  user: {token: %q}
contexts:
- name: sa
  context: {cluster: tier, user: %s, namespace: %s}
current-context: sa
`, cp.apiURL, name, token, name, namespace), 0o600)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}
