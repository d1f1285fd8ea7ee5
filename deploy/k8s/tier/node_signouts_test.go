//go:build k8stier

package tier

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/internal/restwalk"
)

// twoReplicaSignOut (issue 26) scales the overlay's gateway to two pods on
// the real kubelet: a session signed in on one opens on the other (the
// overlay's shared session key); signed out on the first, the copied
// cookie is refused on the second within 2 s (the ConfigMap
// agent-gateway-signouts, written and watched as the pods' service
// account), and still on the pod that replaces a deleted one. Each pod is
// called on its own address, not the Service's, so the replica is known.
// It scales back to one pod at the end.
func (n *node) twoReplicaSignOut() {
	n.t.Run("two gateway replicas: a sign-out on one refuses the copied cookie on the other within 2 s, and after a restart", func(t *testing.T) {
		n.cp.mustKubectl("-n", nodeNS, "scale", "deployment/agent-gateway", "--replicas=2")
		t.Cleanup(func() {
			n.cp.mustKubectl("-n", nodeNS, "scale", "deployment/agent-gateway", "--replicas=1")
			n.cp.mustKubectl("-n", nodeNS, "rollout", "status", "deployment/agent-gateway", "--timeout=180s")
		})
		n.cp.mustKubectl("-n", nodeNS, "rollout", "status", "deployment/agent-gateway", "--timeout=180s")
		pods := n.gatewayPods(t, 2, nil)
		a, b := pods[0], pods[1]

		cookie, csrf := signIn(t, a.url, n.token)
		live, _ := signIn(t, b.url, n.token)
		if st := withCookie(t, b.url, cookie).Status; st != http.StatusOK {
			t.Fatalf("a session of %s on %s before its sign-out: %d", a.name, b.name, st)
		}
		signOut(t, a.url, cookie, csrf)
		if st := withCookie(t, a.url, cookie).Status; st != http.StatusUnauthorized {
			t.Errorf("the signed-out cookie on the pod that signed it out: %d", st)
		}
		d := refusedWithin(t, b.url, cookie, "the copied cookie on "+b.name)
		t.Logf("the copied cookie refused on the other pod %v after the sign-out answered", d.Round(time.Millisecond))
		if st := withCookie(t, b.url, live).Status; st != http.StatusOK {
			t.Errorf("a live session on %s after another's sign-out: %d", b.name, st)
		}

		// The replacement of a deleted pod reads the sign-outs before it is ready.
		n.cp.mustKubectl("-n", nodeNS, "delete", "pod", b.name, "--wait=true", "--timeout=120s")
		n.cp.mustKubectl("-n", nodeNS, "rollout", "status", "deployment/agent-gateway", "--timeout=180s")
		c := n.gatewayPods(t, 2, []string{a.name})
		fresh := c[0]
		if fresh.name == a.name {
			fresh = c[1]
		}
		if st := withCookie(t, fresh.url, cookie).Status; st != http.StatusUnauthorized {
			t.Errorf("the copied cookie on %s, which replaced %s: %d", fresh.name, b.name, st)
		}
		if st := withCookie(t, fresh.url, live).Status; st != http.StatusOK {
			t.Errorf("a live session on the new pod %s: %d", fresh.name, st)
		}
		data := n.cp.mustKubectl("-n", nodeNS, "get", "configmap", "agent-gateway-signouts", "-o", "jsonpath={.data.revoked}")
		if strings.Contains(data, cookie) || strings.TrimSpace(data) == "" {
			t.Errorf("the ConfigMap's sign-outs: %d bytes, holds the cookie: %v", len(data), strings.Contains(data, cookie))
		}
	})
}

type gatewayPod struct{ name, url string }

// gatewayPods waits for want ready gateway pods that are not terminating,
// keeping must among them, and returns them by name.
func (n *node) gatewayPods(t *testing.T, want int, must []string) []gatewayPod {
	t.Helper()
	var pods []gatewayPod
	waitFor(t, fmt.Sprintf("%d ready gateway pods answering on their addresses", want), 120*time.Second, func() error {
		out, err := n.cp.kubectl(time.Minute, "-n", nodeNS, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o",
			`jsonpath={range .items[?(@.status.podIP)]}{.metadata.name} {.status.podIP} {.metadata.deletionTimestamp}{"\n"}{end}`)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		pods = pods[:0]
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 { // a third field is a deletion timestamp
				continue
			}
			pods = append(pods, gatewayPod{f[0], "http://" + f[1] + ":8080"})
		}
		if len(pods) != want {
			return fmt.Errorf("%d gateway pods: %s", len(pods), out)
		}
		for _, m := range must {
			if !slices.ContainsFunc(pods, func(p gatewayPod) bool { return p.name == m }) {
				return fmt.Errorf("%s is not among %v", m, pods)
			}
		}
		for _, p := range pods {
			r, err := restwalk.Client{URL: p.url}.Try(http.MethodGet, "/readyz", nil)
			if err != nil {
				return err
			}
			if r.Status != http.StatusOK {
				return fmt.Errorf("%s /readyz: %d", p.name, r.Status)
			}
		}
		slices.SortFunc(pods, func(x, y gatewayPod) int { return strings.Compare(x.name, y.name) })
		return nil
	}, n.procs...)
	return pods
}
