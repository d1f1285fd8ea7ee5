//go:build k8stier

package tier

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentworkspace/files/internal/restwalk"
)

// thirdAgent is the agent the discovery step adds and removes.
const thirdAgent = "codex-c"

// discoverThirdAgent (issue 26, node tier): a third agent, instantiated
// from base/agent as the dev overlay's codex-a is (its own sidecar
// certificate, volumes and labelled sidecar Service), is applied while the
// gateway runs: the gateway, which lists no static agent, finds it through
// the EndpointSlices the cluster's endpoints controller makes and serves
// its files; when the agent is deleted it leaves the list. No restart and
// no change of the gateway's config.
func (n *node) discoverThirdAgent() {
	t := n.t
	pki := filepath.Join(n.dir, "pki") // sidecarCerts made codex-c's pair too
	n.cp.mustKubectl("-n", nodeNS, "create", "secret", "generic", thirdAgent+"-sidecar-tls",
		"--from-file=tls.crt="+filepath.Join(pki, "sidecar-"+thirdAgent+".crt"), "--from-file=tls.key="+filepath.Join(pki, "sidecar-"+thirdAgent+".key"),
		"--from-file=ca.crt="+filepath.Join(pki, "ca.crt"))
	var pvs strings.Builder
	for _, claim := range []string{"projects", "codex-home", "checkpoints"} {
		name := thirdAgent + "-" + claim
		d := filepath.Join(n.dir, "volumes", name)
		if claim == "projects" {
			writeFile(t, filepath.Join(d, "demo3", "hello.txt"), "from the third agent\n", 0o644)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		asAgent(t, d)
		fmt.Fprintf(&pvs, "---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: tier-%s}\nspec:\n  capacity: {storage: 20Gi}\n  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Retain\n  storageClassName: \"\"\n  hostPath: {path: %q, type: Directory}\n  claimRef: {namespace: %s, name: %s}\n", name, d, nodeNS, name)
	}
	n.cp.applyYAML(pvs.String())

	dir := n.thirdAgentOverlay()
	n.cp.mustKubectl("apply", "--server-side", "--field-manager=agent-workspace", "--warnings-as-errors", "-k", dir)
	// Only the new agent's rollout: codex-b is scaled to nothing by then
	// (waitAvailable wants every Deployment ready).
	n.cp.mustKubectl("-n", nodeNS, "rollout", "status", "deployment/"+thirdAgent+"-agent", "--timeout=300s")
	start := time.Now()
	entries := restwalk.Q(thirdAgent, "entries", "PROJECT", "demo3", "")
	waitFor(t, thirdAgent+" listed and its files reachable", 90*time.Second, func() error {
		if st := n.agentState(thirdAgent); st != "AGENT_STATE_READY" {
			return fmt.Errorf("%s is %q", thirdAgent, st)
		}
		r, err := n.client().Try("GET", entries, nil)
		if err != nil {
			return err
		}
		if r.Status != 200 || !slices.Contains(r.Names(), "hello.txt") {
			return fmt.Errorf("%d %s", r.Status, r.Body)
		}
		return nil
	}, n.procs...)
	t.Logf("%s discovered and serving %.1f s after it became Available", thirdAgent, time.Since(start).Seconds())

	n.cp.mustKubectl("delete", "--wait=true", "--timeout=120s", "-k", dir)
	start = time.Now()
	waitFor(t, thirdAgent+" gone from the list", 60*time.Second, func() error {
		if st := n.agentState(thirdAgent); st != "" {
			return fmt.Errorf("%s is still listed (%s)", thirdAgent, st)
		}
		return nil
	}, n.procs...)
	if r := n.client().Do(t, "GET", entries, nil); r.Status != 404 || r.Reason() != "AGENT_NOT_FOUND" {
		t.Fatalf("the deleted agent answers %d %s", r.Status, r.Body)
	}
	t.Logf("%s gone from ListAgents %.1f s after its deletion", thirdAgent, time.Since(start).Seconds())
}

// agentState is the state ListAgents shows for id ("" when not listed).
func (n *node) agentState(id string) string {
	r, err := n.client().Try("GET", api+"?query="+id, nil)
	if err != nil || r.Status != 200 {
		return ""
	}
	list, _ := r.JSON["agents"].([]any)
	for _, e := range list {
		if m, _ := e.(map[string]any); m["agent_id"] == id {
			s, _ := m["state"].(string)
			return s
		}
	}
	return ""
}

// thirdAgentOverlay writes the third agent's kustomization: the dev
// overlay's codex-a one with codex-c's name, base/agent by a relative
// path, and the overlay's namespace and images.
func (n *node) thirdAgentOverlay() string {
	t := n.t
	agent, err := os.ReadFile(filepath.Join(overlayDir, "codex-a", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Abs("../base/agent")
	if err != nil {
		t.Fatal(err)
	}
	top, err := os.ReadFile(filepath.Join(overlayDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	images := string(top[strings.Index(string(top), "\nimages:\n")+1:])
	k := strings.ReplaceAll(string(agent), "codex-a", thirdAgent)
	dir := filepath.Join(n.dir, "overlay-"+thirdAgent)
	// kustomize takes a base outside the kustomization's root only by a
	// relative path.
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	k = strings.Replace(k, "../../../base/agent", rel, 1)
	k = strings.Replace(k, "kind: Kustomization\n", "kind: Kustomization\nnamespace: "+nodeNS+"\n", 1) + images
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), k, 0o644)
	return dir
}
