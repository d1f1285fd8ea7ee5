//go:build k8stier

package tier

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// renderOverlay returns the dev overlay's objects as generic maps, in order.
func renderOverlay(t *testing.T, bin string) []map[string]any {
	t.Helper()
	out := mustRun(t, time.Minute, filepath.Join(bin, "kubectl"), "kustomize", overlayDir)
	var objs []map[string]any
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(out), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, m)
	}
	return objs
}

func find(t *testing.T, objs []map[string]any, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == kind && o["metadata"].(map[string]any)["name"] == name {
			// A deep copy, so that callers may change it.
			b, _ := json.Marshal(o)
			var c map[string]any
			_ = json.Unmarshal(b, &c)
			return c
		}
	}
	t.Fatalf("the overlay has no %s %s", kind, name)
	return nil
}

func toYAML(t *testing.T, o map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAPIServer is the API server tier (issue #17): etcd and kube-apiserver
// on loopback ports; the dev overlay is server-side applied with
// --warnings-as-errors into its namespace, which enforces Pod Security
// "restricted"; every object is admitted, a second apply is a no-op, and
// changes that break the rules are refused.
func TestAPIServer(t *testing.T) {
	bin := binDir(t)
	dir := t.TempDir()
	cp := startControlPlane(t, dir, bin, false)
	objs := renderOverlay(t, bin)
	if len(objs) < 10 {
		t.Fatalf("the overlay renders only %d objects", len(objs))
	}

	out := cp.mustKubectl("apply", "--server-side", "--field-manager=agent-workspace", "--warnings-as-errors", "-k", overlayDir)
	applied := strings.Count(out, "serverside-applied")
	if applied != len(objs) {
		t.Fatalf("%d of %d objects applied:\n%s", applied, len(objs), out)
	}
	t.Logf("all %d objects of overlays/dev admitted with no warning", applied)

	ns := cp.mustKubectl("get", "namespace", "agent-workspace-dev", "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}")
	if ns != "restricted" {
		t.Fatalf("namespace enforces %q, want restricted", ns)
	}

	// A second apply changes nothing: kubectl diff exits 0 only when the
	// server's dry run of the same apply equals what is stored.
	if out, err := cp.kubectl(2*time.Minute, "diff", "--server-side", "--field-manager=agent-workspace", "-k", overlayDir); err != nil {
		t.Fatalf("kubectl diff --server-side after apply: %v (a second apply is not a no-op)\n%s", err, out)
	}
	if out := cp.mustKubectl("apply", "--server-side", "--field-manager=agent-workspace", "--warnings-as-errors", "-k", overlayDir); strings.Count(out, "serverside-applied") != len(objs) {
		t.Fatalf("second apply:\n%s", out)
	}
	rv := cp.mustKubectl("get", "deployment", "-n", "agent-workspace-dev", "-o", "jsonpath={.items[*].metadata.generation}")
	if strings.Trim(rv, "1 ") != "" {
		t.Fatalf("Deployment generations after two applies: %q, want all 1", rv)
	}

	refused := func(t *testing.T, what, doc, want string) {
		t.Helper()
		f := filepath.Join(dir, strings.ReplaceAll(what, " ", "-")+".yaml")
		writeFile(t, f, doc, 0o600)
		// A server-side dry run: admission runs in full, nothing is stored.
		// (--warnings-as-errors alone fails kubectl but the server has
		// already stored an object that Pod Security only warned about.)
		out, err := cp.kubectl(time.Minute, "apply", "--server-side", "--dry-run=server", "--field-manager=agent-workspace", "--warnings-as-errors", "-f", f)
		if err == nil {
			t.Fatalf("%s was admitted:\n%s", what, out)
		}
		if !strings.Contains(string(out), want) {
			t.Fatalf("%s refused, but not for %q:\n%s", what, want, out)
		}
		t.Logf("%s refused: %s", what, strings.TrimSpace(firstLine(string(out), want)))
	}

	t.Run("privileged sidecar refused", func(t *testing.T) {
		d := find(t, objs, "Deployment", "codex-a-agent")
		for _, c := range d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
			c := c.(map[string]any)
			if c["name"] == "agent-sidecar" {
				sc := c["securityContext"].(map[string]any)
				sc["privileged"] = true
				sc["allowPrivilegeEscalation"] = true
			}
		}
		refused(t, "privileged Deployment", toYAML(t, d), `would violate PodSecurity "restricted:latest": privileged`)
		live := cp.mustKubectl("get", "deployment", "-n", "agent-workspace-dev", "codex-a-agent", "-o", "json")
		if strings.Contains(live, `"privileged"`) {
			t.Fatal("the refused change reached the stored Deployment")
		}
	})
	t.Run("privileged pod refused", func(t *testing.T) {
		// No controller-manager here makes the namespace's default
		// ServiceAccount, which Pod admission looks up first.
		cp.applyYAML("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: agent-workspace-dev}\n")
		refused(t, "privileged Pod", `apiVersion: v1
kind: Pod
metadata: {name: privileged, namespace: agent-workspace-dev}
spec:
  containers:
  - name: c
    image: registry.example.internal/agent-workspace/agent-sidecar:0.1.0
    securityContext: {privileged: true}
`, "violates PodSecurity")
	})
	t.Run("hostPath volume refused", func(t *testing.T) {
		d := find(t, objs, "Deployment", "codex-b-agent")
		spec := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		spec["volumes"] = append(spec["volumes"].([]any), map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}})
		refused(t, "hostPath Deployment", toYAML(t, d), `restricted volume types (volume "host" uses restricted volume type "hostPath")`)
	})
	t.Run("unknown field refused", func(t *testing.T) {
		s := find(t, objs, "Service", "codex-a-sidecar")
		s["spec"].(map[string]any)["bogusField"] = 1
		refused(t, "unknown field", toYAML(t, s), "bogusField")
	})
	t.Run("sign-outs shared by two gateways", func(t *testing.T) { sharedSignOuts(t, cp, dir) })
	t.Run("still a no-op", func(t *testing.T) {
		if out, err := cp.kubectl(2*time.Minute, "diff", "--server-side", "--field-manager=agent-workspace", "-k", overlayDir); err != nil {
			t.Fatalf("kubectl diff after the refused changes: %v\n%s", err, out)
		}
	})
}

func firstLine(s, want string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, want) {
			return l
		}
	}
	return s
}
