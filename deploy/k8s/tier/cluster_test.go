//go:build k8stier

package tier

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/internal/restwalk"
	"github.com/agentworkspace/files/internal/testtree"
)

var agentIDs = []string{"codex-a", "codex-b"}

// deploy applies the dev overlay as an operator would: its namespace first,
// then what the overlay references but does not hold (its Secrets, and
// PersistentVolumes for its claims: hostPath directories under the work
// directory, owned by UID 1000 because fsGroup does not apply to hostPath),
// then the overlay itself, server-side, with --warnings-as-errors.
func (n *node) deploy() {
	t := n.t
	n.cp.mustKubectl("apply", "--server-side", "--field-manager=agent-workspace", "--warnings-as-errors", "-f", filepath.Join(overlayDir, "namespace.yaml"))

	n.token = randomHex(24)
	sum := sha256.Sum256([]byte(n.token))
	tokens := filepath.Join(n.dir, "secrets", "tokens.yaml")
	writeFile(t, tokens, fmt.Sprintf("- {operator: tier-admin, role: admin, sha256: %q}\n", hex.EncodeToString(sum[:])), 0o600)
	n.cp.mustKubectl("-n", nodeNS, "create", "secret", "generic", "agent-gateway-tokens", "--from-file=tokens.yaml="+tokens)
	// The session key every gateway replica shares (auth.session.keysFile).
	key, _ := hex.DecodeString(randomHex(32))
	sessionKeys := filepath.Join(n.dir, "secrets", "session-keys")
	writeFile(t, sessionKeys, base64.StdEncoding.EncodeToString(key)+"\n", 0o600)
	n.cp.mustKubectl("-n", nodeNS, "create", "secret", "generic", "agent-gateway-session", "--from-file=keys="+sessionKeys)
	n.cp.mustKubectl("-n", nodeNS, "create", "secret", "generic", "openai-api-key", "--from-literal=OPENAI_API_KEY=sk-tier-not-a-key")
	// The oauth2-proxy container's client and cookie secret (docs/sso.md):
	// it starts without reaching the provider (skip_oidc_discovery).
	n.cp.mustKubectl("-n", nodeNS, "create", "secret", "generic", "oauth2-proxy-oidc", "--from-literal=client-id=tier",
		"--from-literal=client-secret=tier-not-a-secret", "--from-literal=cookie-secret="+randomHex(16))
	// Mutual TLS between the gateway and the sidecars, as the README tells
	// an operator: agent-gateway certs, then one Secret per sidecar and one
	// for the gateway.
	// codex-c's pair too: the discovery step adds it later.
	pki := sidecarCerts(t, n.dir, slices.Concat(agentIDs, []string{thirdAgent})...)
	for _, a := range agentIDs {
		n.cp.mustKubectl("-n", nodeNS, "create", "secret", "generic", a+"-sidecar-tls",
			"--from-file=tls.crt="+filepath.Join(pki, "sidecar-"+a+".crt"), "--from-file=tls.key="+filepath.Join(pki, "sidecar-"+a+".key"),
			"--from-file=ca.crt="+filepath.Join(pki, "ca.crt"))
	}
	n.cp.mustKubectl("-n", nodeNS, "create", "secret", "generic", "gateway-sidecar-tls",
		"--from-file=tls.crt="+filepath.Join(pki, "gateway.crt"), "--from-file=tls.key="+filepath.Join(pki, "gateway.key"),
		"--from-file=ca.crt="+filepath.Join(pki, "ca.crt"))

	n.volumes = map[string]string{}
	var pvs strings.Builder
	for _, a := range agentIDs {
		// checkpoints: the sidecar's own volume (the undo history the agent
		// cannot reach; checkpointStoreHidden checks it).
		for _, claim := range []string{"projects", "codex-home", "checkpoints"} {
			name := a + "-" + claim
			d := filepath.Join(n.dir, "volumes", name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, 1000, 1000); err != nil {
				t.Fatal(err)
			}
			n.volumes[name] = d
			fmt.Fprintf(&pvs, `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: tier-%s}
spec:
  capacity: {storage: 20Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: %q, type: Directory}
  claimRef: {namespace: %s, name: %s}
`, name, d, nodeNS, name)
		}
	}
	n.cp.applyYAML(pvs.String())

	start := time.Now()
	out := n.cp.mustKubectl("apply", "--server-side", "--field-manager=agent-workspace", "--warnings-as-errors", "-k", overlayDir)
	t.Logf("overlay applied: %d objects", strings.Count(out, "serverside-applied"))
	n.waitAvailable("all Deployments Available", 300*time.Second)
	t.Logf("overlay running %.1f s after apply", time.Since(start).Seconds())
	gw := strings.TrimSpace(n.cp.mustKubectl("-n", nodeNS, "get", "service", "agent-gateway", "-o", "jsonpath={.spec.clusterIP}"))
	n.gatewayURL = "http://" + gw
	// Ready pods are not yet reachable everywhere: kube-proxy (and a
	// policy enforcer) program their addresses a moment later.
	waitFor(t, "the gateway reaches every sidecar", 90*time.Second, func() error {
		for _, a := range agentIDs {
			r, err := n.try("GET", api+"/"+a+"/projects", nil)
			if err != nil {
				return fmt.Errorf("%s: %v", a, err)
			}
			if r.status != 200 {
				return fmt.Errorf("%s: %d %s", a, r.status, r.body)
			}
		}
		return nil
	}, n.procs...)
}

// waitAvailable waits until every Deployment in the namespace is Available
// with all its replicas updated and ready.
func (n *node) waitAvailable(what string, timeout time.Duration) {
	n.t.Helper()
	waitFor(n.t, what, timeout, func() error {
		out, err := n.cp.kubectl(20*time.Second, "-n", nodeNS, "get", "deployments", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.replicas} {.status.readyReplicas} {.status.updatedReplicas} {.status.replicas}{"\n"}{end}`)
		if err != nil {
			return fmt.Errorf("%v %s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 3 {
			return fmt.Errorf("deployments: %q", out)
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 5 || f[1] != f[2] || f[1] != f[3] || f[1] != f[4] {
				pods, _ := n.cp.kubectl(20*time.Second, "-n", nodeNS, "get", "pods", "--no-headers")
				return fmt.Errorf("%s not ready (want/ready/updated/total %v)\n%s", f[0], f[1:], pods)
			}
		}
		return nil
	}, n.procs...)
}

// reply is one response of the in-cluster gateway.
type reply struct {
	status int
	body   []byte
	json   map[string]any
}

func asReply(r restwalk.Reply) reply { return reply{status: r.Status, body: r.Body, json: r.JSON} }

const api = restwalk.API

// client talks to the in-cluster gateway's Service address, as a client
// would (the REST driver the acceptance test uses too).
func (n *node) client() restwalk.Client { return restwalk.Client{URL: n.gatewayURL, Token: n.token} }

// with is n reporting to t (a subtest's).
func (n *node) with(t *testing.T) *node { c := *n; c.t = t; return &c }

// do sends one REST request to the in-cluster gateway.
func (n *node) do(method, path string, body any) reply {
	n.t.Helper()
	return asReply(n.client().Do(n.t, method, path, body))
}

// try is do with a transport error returned instead of ending the test:
// for the waits, while kube-proxy and the policy enforcer still program a
// new pod's address (connections are refused until then).
func (n *node) try(method, path string, body any) (reply, error) {
	r, err := n.client().Try(method, path, body)
	return asReply(r), err
}

// dav sends one WebDAV request with Basic auth, as a WebDAV client would.
func (n *node) dav(method, path string, hdr ...string) reply {
	n.t.Helper()
	return asReply(n.client().Dav(n.t, method, path, hdr...))
}

func (n *node) must(want int, r reply, what string) reply {
	n.t.Helper()
	if r.status != want {
		n.t.Fatalf("%s: status %d, want %d: %s", what, r.status, want, r.body)
	}
	return r
}

func isDir(p string) bool { fi, err := os.Lstat(p); return err == nil && fi.IsDir() }

// asAgent hands p and everything under it to UID 1000, the agent's user
// (fsGroup does not apply to hostPath volumes).
func asAgent(t *testing.T, p string) {
	t.Helper()
	err := filepath.WalkDir(p, func(q string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(q, 1000, 1000)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (n *node) podName(agent string) string {
	return strings.TrimSpace(n.cp.mustKubectl("-n", nodeNS, "get", "pods", "-l", "agent-workspace.dev/agent-id="+agent,
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}"))
}

// acceptance runs PRD §15.5 steps 1-10 (internal/restwalk, the walk the
// acceptance test runs too) through the gateway in the cluster (its
// Service address; the gateway reaches each sidecar by its Service name
// through CoreDNS and kube-proxy), checking the agents' volumes on the
// node, plus the cluster DNS first and a pod restart that keeps every file
// before step 7.
func (n *node) acceptance() {
	pa, ha := n.volumes["codex-a-projects"], n.volumes["codex-a-codex-home"]
	w := restwalk.New(n.t, restwalk.Target{
		Client:    n.client(),
		ProjectsA: pa, ProjectsB: n.volumes["codex-b-projects"], HomeA: ha, HomeB: n.volumes["codex-b-codex-home"],
		Outside:  filepath.Join(n.dir, "outside"),
		Operator: "tier-admin",
		AsAgent:  asAgent,
		// In the pod the volumes are at other paths than on the node: the
		// links stay inside the test's work directory on the node, and in
		// the pod skills/auth-link names the real auth.json.
		RelativeLinks: true,
		StopB:         func(t *testing.T) { n.with(t).stopCodexB() },
		Eventually: func(t *testing.T, what string, check func() error) {
			waitFor(t, what, 60*time.Second, check)
		},
		Endpoints: func(t *testing.T) []string {
			ip := strings.TrimSpace(n.with(t).cp.mustKubectl("-n", nodeNS, "get", "service", "codex-b-sidecar", "-o", "jsonpath={.spec.clusterIP}"))
			return []string{"codex-b-sidecar", ":9091", ip}
		},
		AuditRecords: func(t *testing.T) []map[string]any { return n.with(t).auditRecords() },
		Logs: func(t *testing.T, w *restwalk.Walk) []restwalk.Log {
			c := n.with(t)
			return []restwalk.Log{
				{Name: "gateway's log", Text: c.podLogs("app.kubernetes.io/component=gateway", "agent-gateway"),
					Never: append(append(w.Content(), w.Secrets()...), pa, ha)},
				{Name: "codex-a sidecar's log", Text: c.podLogs("agent-workspace.dev/agent-id=codex-a", "agent-sidecar"),
					Never: []string{w.Secret, "acceptance body text"}},
			}
		},
	})
	steps := append([]restwalk.Step{{Name: "0 sidecar Services resolve through the cluster DNS", Run: n.clusterDNS}}, w.Steps()...)
	restwalk.Run(n.t, restwalk.Insert(steps, "7 ", restwalk.Step{Name: "restart: a new codex-a pod keeps every file", Run: func(t *testing.T) { n.with(t).restartKeeps(w) }})...)
}

// clusterDNS: each sidecar's Service name resolves to its address through
// the cluster DNS, and the gateway answers through its own Service.
func (n *node) clusterDNS(t *testing.T) {
	for _, a := range agentIDs {
		want := strings.TrimSpace(n.cp.mustKubectl("-n", nodeNS, "get", "service", a+"-sidecar", "-o", "jsonpath={.spec.clusterIP}"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := resolver().LookupHost(ctx, a+"-sidecar."+nodeNS+".svc.cluster.local")
		cancel()
		if err != nil || !slices.Equal(got, []string{want}) {
			t.Fatalf("%s-sidecar resolves to %v (%v), want %s", a, got, err, want)
		}
	}
	c := n.with(t)
	c.must(200, c.dav("GET", "/readyz"), "gateway /readyz through its Service")
	l := c.must(200, c.do("GET", api, nil), "list agents")
	if agents, _ := l.json["agents"].([]any); len(agents) != 2 {
		t.Fatalf("agents: %s", l.body)
	}
}

// restartKeeps deletes codex-a's pod: the new one keeps every file of both
// its volumes and serves them.
func (n *node) restartKeeps(w *restwalk.Walk) {
	t := n.t
	pa, ha := w.ProjectsA, w.HomeA
	// What a restart must keep: every name, its type, content and link
	// target.
	beforeP, beforeH := testtree.Snap(t, pa), testtree.Snap(t, ha)
	old := n.podName("codex-a")
	if old == "" {
		t.Fatal("no running codex-a pod")
	}
	start := time.Now()
	n.cp.mustKubectl("-n", nodeNS, "delete", "pod", old, "--wait=true", "--timeout=120s")
	waitFor(t, "a new codex-a pod", 180*time.Second, func() error {
		if p := n.podName("codex-a"); p == "" || p == old {
			return fmt.Errorf("pod %q", p)
		}
		return nil
	})
	n.waitAvailable("codex-a Available again", 180*time.Second)
	t.Logf("codex-a pod replaced in %.1f s", time.Since(start).Seconds())
	testtree.Same(t, "the projects volume changed across the restart", beforeP, testtree.Snap(t, pa))
	testtree.Same(t, "codex-home changed across the restart", beforeH, testtree.Snap(t, ha))
	if t.Failed() {
		t.FailNow()
	}
	waitFor(t, "codex-a answers through the gateway", 60*time.Second, func() error {
		r := n.do("GET", restwalk.Q("codex-a", "files", "PROJECT", "demo", "notes.md"), nil)
		if r.status != 200 || r.json["content"] != w.Body {
			return fmt.Errorf("%d %s", r.status, r.body)
		}
		return nil
	})
	if r := n.must(200, n.do("GET", restwalk.Q("codex-a", "files", "GLOBAL", "", "AGENTS.md"), nil), "AGENTS.md after restart"); r.json["content"] != "Be kind.\n" {
		t.Fatalf("AGENTS.md after restart: %s", r.body)
	}
	if !isDir(filepath.Join(pa, "demo", ".git")) {
		t.Fatal("demo/.git gone after restart")
	}
}

// stopCodexB scales codex-b's Deployment to zero and waits for its pod to go.
func (n *node) stopCodexB() {
	n.cp.mustKubectl("-n", nodeNS, "scale", "deployment", "codex-b-agent", "--replicas=0")
	waitFor(n.t, "codex-b's pod gone", 120*time.Second, func() error {
		out, err := n.cp.kubectl(20*time.Second, "-n", nodeNS, "get", "pods", "-l", "agent-workspace.dev/agent-id=codex-b", "-o", "name")
		if err != nil || strings.TrimSpace(string(out)) != "" {
			return fmt.Errorf("%v %s", err, out)
		}
		return nil
	})
}

// podLogs is kubectl logs of one container of the pods matching selector
// (through the API server and the kubelet).
func (n *node) podLogs(selector, container string) string {
	n.t.Helper()
	return n.cp.mustKubectl("-n", nodeNS, "logs", "-l", selector, "-c", container, "--tail=-1")
}

// auditRecords are the gateway's audit records: its JSON log lines whose
// message is "audit" (the dev overlay writes no audit file).
func (n *node) auditRecords() []map[string]any {
	n.t.Helper()
	var recs []map[string]any
	for _, l := range strings.Split(n.podLogs("app.kubernetes.io/component=gateway", "agent-gateway"), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["@message"] == "audit" {
			recs = append(recs, m)
		}
	}
	return recs
}

// networkPolicy checks, with kube-router enforcing, that only the gateway's
// pods reach a sidecar: a probe pod with the gateway's labels connects to
// codex-a's WebDAV port, the same probe without them does not.
func (n *node) networkPolicy() {
	t := n.t
	probe := func(name string, labels string) string {
		n.cp.applyYAML(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext: {runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: probe
    image: registry.example.internal/agent-codex/app-server:0.1.0
    args: ["-dial", "codex-a-sidecar:9092"]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 100m, memory: 32Mi}}
`, name, nodeNS, labels))
		var phase string
		waitFor(t, "probe "+name+" done", 90*time.Second, func() error {
			out, err := n.cp.kubectl(20*time.Second, "-n", nodeNS, "get", "pod", name, "-o", "jsonpath={.status.phase}")
			phase = strings.TrimSpace(string(out))
			if err != nil || (phase != "Succeeded" && phase != "Failed") {
				return fmt.Errorf("phase %q %v", phase, err)
			}
			return nil
		}, n.procs...)
		logs, _ := n.cp.kubectl(20*time.Second, "-n", nodeNS, "logs", name)
		t.Logf("probe %s: %s %s", name, phase, strings.TrimSpace(string(logs)))
		return phase
	}
	t.Run("NetworkPolicy: only the gateway reaches a sidecar", func(t *testing.T) {
		if p := probe("probe-as-gateway", "app.kubernetes.io/name: agent-gateway"); p != "Succeeded" {
			t.Fatalf("a pod with the gateway's labels cannot reach codex-a-sidecar:9092 (%s)", p)
		}
		if p := probe("probe-other", "app.kubernetes.io/name: probe"); p != "Failed" {
			t.Fatalf("a pod without the gateway's labels reached codex-a-sidecar:9092 (%s)", p)
		}
		c := *n
		c.t = t
		c.must(200, c.do("GET", api+"/codex-a/projects", nil), "codex-a through the gateway with the policy enforced")
	})
}

// podBoundary (issue 23) acts as the agent from inside its own container
// (codex-app-server, which shares the sidecar's network namespace): the
// sidecar's gRPC and WebDAV ports answer nothing without the gateway's
// certificate, the sidecar's TLS Secret is not mounted there, and the
// gateway still works end to end.
func (n *node) podBoundary() {
	n.t.Run("pod boundary: the agent's container cannot call its sidecar", func(t *testing.T) {
		pod := n.podName("codex-a")
		before := testtree.Snap(t, n.volumes["codex-a-projects"])
		for _, port := range []string{"9091", "9092"} {
			out, err := n.cp.kubectl(60*time.Second, "-n", nodeNS, "exec", pod, "-c", "codex-app-server", "--",
				"/standin", "-refused", "127.0.0.1:"+port)
			t.Logf("from codex-app-server to 127.0.0.1:%s: %s", port, strings.TrimSpace(string(out)))
			if err != nil {
				t.Errorf("127.0.0.1:%s from the agent's container was not refused at the handshake: %v", port, err)
			}
		}
		for _, p := range []string{"/etc/agent-sidecar/tls", "/etc/agent-sidecar"} {
			if out, err := n.cp.kubectl(60*time.Second, "-n", nodeNS, "exec", pod, "-c", "codex-app-server", "--", "/standin", "-absent", p); err != nil {
				t.Errorf("%s exists in the agent's container: %s", p, out)
			}
		}
		testtree.Same(t, "the direct calls changed codex-a's projects volume", before, testtree.Snap(t, n.volumes["codex-a-projects"]))
		c := *n
		c.t = t
		c.must(200, c.do("GET", api+"/codex-a/projects", nil), "codex-a through the gateway after the direct calls")
		c.must(207, c.dav("PROPFIND", "/dav/codex-a/projects/", "Depth", "1"), "codex-a WebDAV through the gateway after the direct calls")
	})
}
