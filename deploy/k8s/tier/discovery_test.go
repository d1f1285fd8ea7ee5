//go:build k8stier

package tier

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
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

// discoveryInner marks the inner run (inside the network namespace).
const discoveryInner = "AWF_DISCOVERY_TIER_INNER"

// sidecarIP is the address the EndpointSlices give the sidecar: the API
// server refuses loopback endpoint addresses, so the test runs in a network
// namespace of its own (unshare --net) whose loopback interface also
// holds this address, forwarded to the sidecar's loopback listeners; nothing leaves
// the namespace.
const sidecarIP = "10.250.0.1"

// TestAPIServerDiscovery re-runs itself in a new network namespace, where
// it starts etcd and kube-apiserver, applies the dev overlay (its Role and
// service account) and runs testDiscovery.
func TestAPIServerDiscovery(t *testing.T) {
	if os.Getenv(discoveryInner) != "" {
		discoveryInNamespace(t)
		return
	}
	binDir(t)
	need(t, "unshare", "util-linux")
	need(t, "ip", "iproute2")
	if os.Getuid() != 0 {
		t.Fatal("the discovery tier needs root (a network namespace of its own)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--net", "--fork", "--kill-child", self, "-test.run", "^TestAPIServerDiscovery$", "-test.v", "-test.timeout", "8m")
	cmd.Env = append(os.Environ(), discoveryInner+"=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("discovery tier (inside its network namespace): %v", err)
	}
}

func discoveryInNamespace(t *testing.T) {
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", sidecarIP + "/32", "dev", "lo"},
	} {
		mustRun(t, 30*time.Second, "ip", args...)
	}
	cp := startControlPlane(t, t.TempDir(), binDir(t), false)
	cp.mustKubectl("apply", "--server-side", "--field-manager=agent-workspace", "-k", overlayDir)
	testDiscovery(t, cp)
}

// forward accepts on sidecarIP:0 and copies each connection to and from
// target (TLS passes through untouched); it returns the port.
func forward(t *testing.T, target string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(sidecarIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c); u.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

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
	rootBinaries(t)
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
	grpcPort, davPort := forward(t, a.RPCAddr), forward(t, strings.TrimPrefix(a.DavURL, "https://"))

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

// rootBinaries builds agent-gateway and agent-sidecar from the root module
// (gatewaytest and sidecartest would build in this module, which lacks
// them) and points AGENT_GATEWAY_BIN and AGENT_SIDECAR_BIN at them.
func rootBinaries(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for env, pkg := range map[string]string{"AGENT_GATEWAY_BIN": "./gateway/cmd/agent-gateway", "AGENT_SIDECAR_BIN": "./sidecar/cmd/agent-sidecar"} {
		out := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = "../../.."
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		t.Setenv(env, out)
	}
}

// endpointSlice is the slice of agent id's sidecar Service on sidecarIP.
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
  - addresses: [%q]
    conditions: {ready: %v}
`, name, ns, id, grpcPort, davPort, sidecarIP, ready)
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
