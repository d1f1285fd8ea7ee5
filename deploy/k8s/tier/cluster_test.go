//go:build k8stier

package tier

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
	pki := sidecarCerts(t, n.dir, agentIDs...)
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

type reply struct {
	status int
	body   []byte
	json   map[string]any
}

const api = "/api/v1/agent-gateway/agents"

// do sends one REST request to the in-cluster gateway's Service address, as
// a client would.
func (n *node) do(method, path string, body any) reply {
	n.t.Helper()
	r, err := n.try(method, path, body)
	if err != nil {
		n.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// try is do with a transport error returned instead of ending the test:
// for the waits, while kube-proxy and the policy enforcer still program a
// new pod's address (connections are refused until then).
func (n *node) try(method, path string, body any) (reply, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, n.gatewayURL+path, rd)
	if err != nil {
		n.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+n.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, body: b}
	_ = json.Unmarshal(b, &r.json)
	return r, nil
}

// dav sends one WebDAV request with Basic auth, as a WebDAV client would.
func (n *node) dav(method, path string, hdr ...string) reply {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, n.gatewayURL+path, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	req.SetBasicAuth("admin", n.token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.t.Fatalf("WebDAV %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: b}
}

func (n *node) must(want int, r reply, what string) reply {
	n.t.Helper()
	if r.status != want {
		n.t.Fatalf("%s: status %d, want %d: %s", what, r.status, want, r.body)
	}
	return r
}

func reason(r reply) string {
	details, _ := r.json["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok {
			if s, ok := m["reason"].(string); ok {
				return s
			}
		}
	}
	return ""
}

// q builds /agents/{agent}/projects/{what}?workspace...&path=...
func q(agent, what, scope, project, path string) string {
	v := url.Values{"workspace.scope": {scope}}
	if project != "" {
		v.Set("workspace.project_name", project)
	}
	if path != "" {
		v.Set("path", path)
	}
	return api + "/" + agent + "/projects/" + what + "?" + v.Encode()
}

func ws(scope, project string) map[string]any {
	m := map[string]any{"scope": scope}
	if project != "" {
		m["project_name"] = project
	}
	return m
}

func names(r reply) []string {
	var out []string
	list, _ := r.json["entries"].([]any)
	for _, e := range list {
		out = append(out, e.(map[string]any)["name"].(string))
	}
	return out
}

func isDir(p string) bool { fi, err := os.Lstat(p); return err == nil && fi.IsDir() }

// tree maps every path under root to its content hash (directories "dir",
// symlinks "-> target"): what a restart must keep.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[rel] = "-> " + l
		case d.IsDir():
			m[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			m[rel] = hex.EncodeToString(s[:8])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func writeAs1000(t *testing.T, p, content string) {
	t.Helper()
	writeFile(t, p, content, 0o600)
	if err := os.Lchown(p, 1000, 1000); err != nil {
		t.Fatal(err)
	}
}

func (n *node) podName(agent string) string {
	return strings.TrimSpace(n.cp.mustKubectl("-n", nodeNS, "get", "pods", "-l", "agent-workspace.dev/agent-id="+agent,
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}"))
}

// acceptance runs PRD §15.5 steps 1-10 through the gateway in the cluster
// (its Service address; the gateway reaches each sidecar by its Service
// name through CoreDNS and kube-proxy), checking the agents' volumes on
// the node, plus a pod restart that keeps every file.
func (n *node) acceptance() {
	t := n.t
	pa, ha := n.volumes["codex-a-projects"], n.volumes["codex-a-codex-home"]
	pb := n.volumes["codex-b-projects"]
	secretText := "sk-acceptance-" + time.Now().Format("150405.000000")
	bodyText := "# demo\n\nacceptance body text 7f3a\n"
	for _, h := range []string{ha, n.volumes["codex-b-codex-home"]} {
		writeAs1000(t, filepath.Join(h, "auth.json"), `{"key":"`+secretText+`"}`)
		writeAs1000(t, filepath.Join(h, "config.toml"), "token = \""+secretText+"\"\n")
	}
	outside := filepath.Join(n.dir, "outside")
	writeFile(t, filepath.Join(outside, "canary.txt"), "canary "+secretText, 0o644)

	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	// The test's own t for helpers inside steps.
	sub := func(st *testing.T) *node { c := *n; c.t = st; return &c }

	step("0 sidecar Services resolve through the cluster DNS", func(t *testing.T) {
		for _, a := range agentIDs {
			want := strings.TrimSpace(n.cp.mustKubectl("-n", nodeNS, "get", "service", a+"-sidecar", "-o", "jsonpath={.spec.clusterIP}"))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			got, err := resolver().LookupHost(ctx, a+"-sidecar."+nodeNS+".svc.cluster.local")
			cancel()
			if err != nil || !slices.Equal(got, []string{want}) {
				t.Fatalf("%s-sidecar resolves to %v (%v), want %s", a, got, err, want)
			}
		}
		c := sub(t)
		c.must(200, c.dav("GET", "/readyz"), "gateway /readyz through its Service")
		l := c.must(200, c.do("GET", api, nil), "list agents")
		if agents, _ := l.json["agents"].([]any); len(agents) != 2 {
			t.Fatalf("agents: %s", l.body)
		}
	})

	step("1 same project in both agents with its own .git", func(t *testing.T) {
		c := sub(t)
		for _, a := range agentIDs {
			r := c.must(200, c.do("POST", api+"/"+a+"/projects", map[string]any{"name": "demo"}), "create demo in "+a)
			if r.json["name"] != "demo" || r.json["git_initialized"] != true {
				t.Fatalf("%s: created project = %s", a, r.body)
			}
		}
		for _, p := range []string{pa, pb} {
			if !isDir(filepath.Join(p, "demo", ".git")) {
				t.Fatalf("%s/demo/.git is not a real directory", p)
			}
		}
		c.must(409, c.do("POST", api+"/codex-a/projects", map[string]any{"name": "demo"}), "create demo twice")
	})

	step("2 .git is never listed", func(t *testing.T) {
		c := sub(t)
		for _, a := range agentIDs {
			r := c.must(200, c.do("GET", q(a, "entries", "PROJECT", "demo", ""), nil), "list demo")
			if slices.Contains(names(r), ".git") {
				t.Fatalf("%s lists .git: %v", a, names(r))
			}
			g := c.do("GET", q(a, "files", "PROJECT", "demo", ".git/config"), nil)
			if g.status != 403 || reason(g) != "DENYLISTED" {
				t.Fatalf("%s: GET .git/config = %d %s, want 403 DENYLISTED", a, g.status, g.body)
			}
			if d := c.dav("GET", "/dav/"+a+"/projects/demo/.git/HEAD"); d.status != 403 && d.status != 404 {
				t.Fatalf("%s: WebDAV GET .git/HEAD = %d", a, d.status)
			}
		}
	})

	var staleRev string
	step("3 edit in codex-a, invisible in codex-b", func(t *testing.T) {
		c := sub(t)
		r := c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{
			"workspace": ws("PROJECT", "demo"), "parent_path": "", "name": "notes.md", "type": "ENTRY_TYPE_FILE"}), "create notes.md")
		staleRev, _ = r.json["revision"].(string)
		u := c.must(200, c.do("PUT", api+"/codex-a/projects/files", map[string]any{
			"workspace": ws("PROJECT", "demo"), "path": "notes.md", "content": bodyText, "expected_revision": staleRev}), "save notes.md")
		if u.json["revision"] == staleRev {
			t.Fatal("revision did not change on save")
		}
		g := c.must(200, c.do("GET", q("codex-a", "files", "PROJECT", "demo", "notes.md"), nil), "read back")
		if g.json["content"] != bodyText {
			t.Fatalf("read back %q", g.json["content"])
		}
		if got, _ := os.ReadFile(filepath.Join(pa, "demo", "notes.md")); string(got) != bodyText {
			t.Fatalf("on the volume: %q", got)
		}
		if slices.Contains(names(c.must(200, c.do("GET", q("codex-b", "entries", "PROJECT", "demo", ""), nil), "list codex-b")), "notes.md") {
			t.Fatal("codex-b shows codex-a's file")
		}
		c.must(404, c.do("GET", q("codex-b", "files", "PROJECT", "demo", "notes.md"), nil), "codex-b read")
		if d := c.dav("GET", "/dav/codex-b/projects/demo/notes.md"); d.status != 404 {
			t.Fatalf("codex-b WebDAV GET notes.md = %d", d.status)
		}
		if d := c.dav("GET", "/dav/codex-a/projects/demo/notes.md"); d.status != 200 || string(d.body) != bodyText {
			t.Fatalf("codex-a WebDAV GET notes.md = %d", d.status)
		}
		if d := c.dav("PROPFIND", "/dav/codex-a/projects/demo/", "Depth", "1"); d.status != 207 || !bytes.Contains(d.body, []byte("notes.md")) || bytes.Contains(d.body, []byte(".git")) {
			t.Fatalf("codex-a WebDAV PROPFIND demo = %d %s", d.status, d.body)
		}
	})

	step("4 a stale revision is refused and the content survives", func(t *testing.T) {
		c := sub(t)
		r := c.do("PUT", api+"/codex-a/projects/files", map[string]any{
			"workspace": ws("PROJECT", "demo"), "path": "notes.md", "content": "overwrite\n", "expected_revision": staleRev})
		if r.status != 409 || reason(r) != "REVISION_MISMATCH" {
			t.Fatalf("stale save = %d %s, want 409 REVISION_MISMATCH", r.status, r.body)
		}
		if got, _ := os.ReadFile(filepath.Join(pa, "demo", "notes.md")); string(got) != bodyText {
			t.Fatalf("content changed by a stale save: %q", got)
		}
	})

	step("5 a denylisted directory is hidden and refused", func(t *testing.T) {
		c := sub(t)
		r := c.do("POST", api+"/codex-a/projects/entries", map[string]any{
			"workspace": ws("PROJECT", "demo"), "parent_path": "", "name": "node_modules", "type": "ENTRY_TYPE_DIRECTORY"})
		if r.status != 403 || reason(r) != "DENYLISTED" {
			t.Fatalf("create node_modules = %d %s", r.status, r.body)
		}
		// The agent makes one itself, as npm would.
		nm := filepath.Join(pa, "demo", "node_modules")
		writeAs1000(t, filepath.Join(nm, "left-pad", "index.js"), "module.exports = 1\n")
		for _, d := range []string{nm, filepath.Join(nm, "left-pad")} {
			if err := os.Chown(d, 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}
		if slices.Contains(names(c.must(200, c.do("GET", q("codex-a", "entries", "PROJECT", "demo", ""), nil), "list")), "node_modules") {
			t.Fatal("node_modules is listed")
		}
		g := c.do("GET", q("codex-a", "files", "PROJECT", "demo", "node_modules/left-pad/index.js"), nil)
		if g.status != 403 || reason(g) != "DENYLISTED" {
			t.Fatalf("read inside node_modules = %d %s", g.status, g.body)
		}
		if d := c.dav("GET", "/dav/codex-a/projects/demo/node_modules/left-pad/index.js"); d.status != 403 && d.status != 404 {
			t.Fatalf("WebDAV read inside node_modules = %d", d.status)
		}
	})

	step("6 Global AGENTS.md and skills/example/SKILL.md", func(t *testing.T) {
		c := sub(t)
		g := ws("GLOBAL", "")
		r := c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": g, "parent_path": "", "name": "AGENTS.md", "type": "ENTRY_TYPE_FILE"}), "create AGENTS.md")
		c.must(200, c.do("PUT", api+"/codex-a/projects/files", map[string]any{"workspace": g, "path": "AGENTS.md", "content": "Be kind.\n", "expected_revision": r.json["revision"]}), "edit AGENTS.md")
		c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": g, "parent_path": "skills", "name": "example", "type": "ENTRY_TYPE_DIRECTORY"}), "mkdir skills/example")
		s := c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": g, "parent_path": "skills/example", "name": "SKILL.md", "type": "ENTRY_TYPE_FILE"}), "create SKILL.md")
		c.must(200, c.do("PUT", api+"/codex-a/projects/files", map[string]any{"workspace": g, "path": "skills/example/SKILL.md", "content": "---\nname: example\n---\n", "expected_revision": s.json["revision"]}), "edit SKILL.md")
		for p, want := range map[string]string{"AGENTS.md": "Be kind.\n", "skills/example/SKILL.md": "---\nname: example\n---\n"} {
			if got, _ := os.ReadFile(filepath.Join(ha, p)); string(got) != want {
				t.Fatalf("%s on the volume = %q", p, got)
			}
		}
		root := names(c.must(200, c.do("GET", q("codex-a", "entries", "GLOBAL", "", ""), nil), "list Global"))
		slices.Sort(root)
		if !slices.Equal(root, []string{"AGENTS.md", "skills"}) {
			t.Fatalf("Global root lists %v, want exactly [AGENTS.md skills]", root)
		}
		c.must(403, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": g, "parent_path": "", "name": "notes.md", "type": "ENTRY_TYPE_FILE"}), "a third Global root entry")
	})

	step("restart: a new codex-a pod keeps every file", func(t *testing.T) {
		c := sub(t)
		beforeP, beforeH := tree(t, pa), tree(t, ha)
		old := c.podName("codex-a")
		if old == "" {
			t.Fatal("no running codex-a pod")
		}
		start := time.Now()
		c.cp.mustKubectl("-n", nodeNS, "delete", "pod", old, "--wait=true", "--timeout=120s")
		waitFor(t, "a new codex-a pod", 180*time.Second, func() error {
			if p := c.podName("codex-a"); p == "" || p == old {
				return fmt.Errorf("pod %q", p)
			}
			return nil
		})
		c.waitAvailable("codex-a Available again", 180*time.Second)
		t.Logf("codex-a pod replaced in %.1f s", time.Since(start).Seconds())
		if afterP, afterH := tree(t, pa), tree(t, ha); !mapsEqual(beforeP, afterP) || !mapsEqual(beforeH, afterH) {
			t.Fatalf("the volumes changed across the restart:\nprojects %v\n      -> %v\ncodex-home %v\n      -> %v", beforeP, afterP, beforeH, afterH)
		}
		waitFor(t, "codex-a answers through the gateway", 60*time.Second, func() error {
			r := c.do("GET", q("codex-a", "files", "PROJECT", "demo", "notes.md"), nil)
			if r.status != 200 || r.json["content"] != bodyText {
				return fmt.Errorf("%d %s", r.status, r.body)
			}
			return nil
		})
		if r := c.must(200, c.do("GET", q("codex-a", "files", "GLOBAL", "", "AGENTS.md"), nil), "AGENTS.md after restart"); r.json["content"] != "Be kind.\n" {
			t.Fatalf("AGENTS.md after restart: %s", r.body)
		}
		if !isDir(filepath.Join(pa, "demo", ".git")) {
			t.Fatal("demo/.git gone after restart")
		}
	})

	step("7 auth.json, config.toml and symlink targets are refused", func(t *testing.T) {
		c := sub(t)
		for _, p := range []string{"auth.json", "config.toml", "skills/../auth.json", "Auth.json"} {
			r := c.do("GET", q("codex-a", "files", "GLOBAL", "", p), nil)
			if (r.status != 403 && r.status != 400) || bytes.Contains(r.body, []byte(secretText)) {
				t.Fatalf("GET Global %s = %d %s", p, r.status, r.body)
			}
		}
		for _, p := range []string{"/dav/codex-a/global/auth.json", "/dav/codex-a/global/config.toml"} {
			if d := c.dav("GET", p); (d.status != 403 && d.status != 404) || bytes.Contains(d.body, []byte(secretText)) {
				t.Fatalf("WebDAV %s = %d", p, d.status)
			}
		}
		// Symlinks an agent left behind. Relative targets: on the node they
		// stay inside the test's work directory; in the pod skills/auth-link
		// names the real auth.json.
		links := map[string]string{
			filepath.Join(pa, "demo", "secret-link"): "../../codex-a-codex-home/auth.json",
			filepath.Join(pa, "demo", "outside"):     "../../../outside",
			filepath.Join(ha, "skills", "auth-link"): "../auth.json",
		}
		for l, target := range links {
			if err := os.Symlink(target, l); err != nil {
				t.Fatal(err)
			}
			_ = os.Lchown(l, 1000, 1000)
		}
		for _, tc := range []struct{ scope, project, path string }{
			{"PROJECT", "demo", "secret-link"}, {"PROJECT", "demo", "outside/canary.txt"}, {"GLOBAL", "", "skills/auth-link"},
		} {
			r := c.do("GET", q("codex-a", "files", tc.scope, tc.project, tc.path), nil)
			if r.status != 403 || reason(r) != "SYMLINK" || bytes.Contains(r.body, []byte(secretText)) {
				t.Fatalf("GET %s %s = %d %s, want 403 SYMLINK", tc.scope, tc.path, r.status, r.body)
			}
		}
		if l := names(c.must(200, c.do("GET", q("codex-a", "entries", "PROJECT", "demo", ""), nil), "list")); slices.Contains(l, "secret-link") || slices.Contains(l, "outside") {
			t.Fatalf("symlinks listed: %v", l)
		}
	})

	step("8 deletions need confirmation and are audited", func(t *testing.T) {
		c := sub(t)
		c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": ws("PROJECT", "demo"), "parent_path": "", "name": "docs", "type": "ENTRY_TYPE_DIRECTORY"}), "mkdir docs")
		c.must(200, c.do("POST", api+"/codex-a/projects/entries", map[string]any{"workspace": ws("PROJECT", "demo"), "parent_path": "docs", "name": "a.md", "type": "ENTRY_TYPE_FILE"}), "docs/a.md")
		entryRev := func(scope, project, dir, name string) string {
			l := c.must(200, c.do("GET", q("codex-a", "entries", scope, project, dir), nil), "list "+dir)
			for _, e := range l.json["entries"].([]any) {
				if m := e.(map[string]any); m["name"] == name {
					return m["revision"].(string)
				}
			}
			t.Fatalf("%s not in %s", name, dir)
			return ""
		}
		rm := func(scope, project, path, rev string, recursive bool) reply {
			v := url.Values{"workspace.scope": {scope}, "path": {path}, "expected_revision": {rev}}
			if project != "" {
				v.Set("workspace.project_name", project)
			}
			if recursive {
				v.Set("recursive", "true")
			}
			return c.do("DELETE", api+"/codex-a/projects/entries?"+v.Encode(), nil)
		}
		c.must(200, rm("PROJECT", "demo", "notes.md", entryRev("PROJECT", "demo", "", "notes.md"), false), "delete notes.md")
		docsRev := entryRev("PROJECT", "demo", "", "docs")
		if r := rm("PROJECT", "demo", "docs", docsRev, false); r.status == 200 {
			t.Fatal("a non-empty directory was deleted without recursive")
		}
		c.must(200, rm("PROJECT", "demo", "docs", docsRev, true), "delete docs recursively")
		c.must(200, rm("GLOBAL", "", "AGENTS.md", entryRev("GLOBAL", "", "", "AGENTS.md"), false), "delete AGENTS.md")
		if r := rm("GLOBAL", "", "skills", entryRev("GLOBAL", "", "", "skills"), true); r.status != 403 {
			t.Fatalf("deleting the skills root = %d %s", r.status, r.body)
		}
		for _, p := range []string{filepath.Join(pa, "demo", "notes.md"), filepath.Join(pa, "demo", "docs"), filepath.Join(ha, "AGENTS.md")} {
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				t.Fatalf("%s still exists", p)
			}
		}
		if r := c.do("DELETE", api+"/codex-a/projects/demo?confirm_name=dem", nil); r.status != 400 {
			t.Fatalf("delete with a wrong confirmation = %d %s", r.status, r.body)
		}
		if !isDir(filepath.Join(pa, "demo")) {
			t.Fatal("project deleted despite the wrong confirmation")
		}
		c.must(200, c.do("DELETE", api+"/codex-a/projects/demo?confirm_name=demo", nil), "delete project")
		if _, err := os.Lstat(filepath.Join(pa, "demo")); !os.IsNotExist(err) {
			t.Fatal("project still on the volume")
		}
		if !isDir(filepath.Join(pb, "demo", ".git")) {
			t.Fatal("codex-b's demo was touched")
		}
		if got, _ := os.ReadFile(filepath.Join(outside, "canary.txt")); string(got) != "canary "+secretText {
			t.Fatal("canary outside the volume changed (symlink followed on delete)")
		}
		want := map[string]bool{"delete_entry notes.md": false, "delete_entry docs": false, "delete_entry AGENTS.md": false, "delete_project": false}
		for _, rec := range c.auditRecords() {
			if rec["agent_id"] != "codex-a" || rec["result"] != "ok" {
				continue
			}
			key := fmt.Sprint(rec["action"]) + " " + fmt.Sprint(rec["source_path"])
			if _, ok := want[key]; ok {
				want[key] = true
			}
			if rec["action"] == "delete_project" && rec["project_name"] == "demo" {
				want["delete_project"] = true
			}
		}
		for k, seen := range want {
			if !seen {
				t.Errorf("no successful audit record for %q", k)
			}
		}
	})

	step("9 a stopped sidecar is Unavailable for its agent only", func(t *testing.T) {
		c := sub(t)
		c.cp.mustKubectl("-n", nodeNS, "scale", "deployment", "codex-b-agent", "--replicas=0")
		waitFor(t, "codex-b's pod gone", 120*time.Second, func() error {
			out, err := c.cp.kubectl(20*time.Second, "-n", nodeNS, "get", "pods", "-l", "agent-workspace.dev/agent-id=codex-b", "-o", "name")
			if err != nil || strings.TrimSpace(string(out)) != "" {
				return fmt.Errorf("%v %s", err, out)
			}
			return nil
		})
		l := c.must(200, c.do("GET", api, nil), "list agents")
		if agents, _ := l.json["agents"].([]any); len(agents) != 2 {
			t.Fatalf("agent list changed: %s", l.body)
		}
		var r reply
		waitFor(t, "codex-b Unavailable", 60*time.Second, func() error {
			if r = c.do("GET", api+"/codex-b/projects", nil); r.status != 503 || reason(r) != "SIDECAR_UNAVAILABLE" {
				return fmt.Errorf("codex-b list = %d %s, want 503 SIDECAR_UNAVAILABLE", r.status, r.body)
			}
			return nil
		})
		ip := strings.TrimSpace(c.cp.mustKubectl("-n", nodeNS, "get", "service", "codex-b-sidecar", "-o", "jsonpath={.spec.clusterIP}"))
		if bytes.Contains(r.body, []byte("codex-b-sidecar")) || bytes.Contains(r.body, []byte(":9091")) || bytes.Contains(r.body, []byte(ip)) {
			t.Fatalf("the error names the sidecar endpoint: %s", r.body)
		}
		c.must(200, c.do("GET", api+"/codex-a/projects", nil), "codex-a still works")
		c.must(200, c.do("POST", api+"/codex-a/projects", map[string]any{"name": "after"}), "codex-a still creates")
		if !isDir(filepath.Join(pb, "demo", ".git")) {
			t.Fatal("codex-b's volume changed while its sidecar was down")
		}
	})

	step("10 audit records are complete and carry no content or secrets", func(t *testing.T) {
		c := sub(t)
		recs := c.auditRecords()
		if len(recs) < 12 {
			t.Fatalf("only %d audit records", len(recs))
		}
		for _, rec := range recs {
			for _, f := range []string{"request_id", "operator", "agent_id", "workspace_scope", "action", "result", "grpc_code", "duration_ms"} {
				if v, ok := rec[f]; !ok || v == "" {
					t.Errorf("audit record %v lacks %s", rec, f)
				}
			}
			if rec["operator"] != "tier-admin" {
				t.Errorf("operator = %v", rec["operator"])
			}
		}
		logs := c.podLogs("app.kubernetes.io/component=gateway", "agent-gateway")
		for _, leak := range []string{bodyText, "acceptance body text", "Be kind.", secretText, n.token, pa, ha, "module.exports"} {
			if strings.Contains(logs, leak) {
				t.Errorf("the gateway's log contains %q", leak)
			}
		}
		sl := c.podLogs("agent-workspace.dev/agent-id=codex-a", "agent-sidecar")
		if strings.Contains(sl, secretText) || strings.Contains(sl, "acceptance body text") {
			t.Error("codex-a's sidecar log contains content or a secret")
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
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
		before := tree(t, n.volumes["codex-a-projects"])
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
		if after := tree(t, n.volumes["codex-a-projects"]); !mapsEqual(before, after) {
			t.Errorf("the direct calls changed codex-a's projects volume")
		}
		c := *n
		c.t = t
		c.must(200, c.do("GET", api+"/codex-a/projects", nil), "codex-a through the gateway after the direct calls")
		c.must(207, c.dav("PROPFIND", "/dav/codex-a/projects/", "Depth", "1"), "codex-a WebDAV through the gateway after the direct calls")
	})
}
