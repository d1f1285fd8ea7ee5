//go:build k8stier

package tier

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/restwalk"
)

const signOutNS, signOutCM = "agent-workspace-dev", "agent-gateway-signouts"

// sharedSignOuts (issue 26): two gateway processes share sign-outs through
// the overlay's ConfigMap on a real kube-apiserver, as the overlay's
// service account (impersonated: the Role and its binding are what is
// checked). A sign-out on one refuses the copied cookie on the other
// within 2 s, still after either restarts; concurrent sign-outs on both
// all land (resourceVersion conflicts retried).
func sharedSignOuts(t *testing.T, cp *controlPlane, dir string) {
	if os.Getenv("AGENT_GATEWAY_BIN") == "" {
		// gatewaytest builds from the working directory, which here is
		// deploy/k8s/tier: build this checkout's gateway from the root.
		bin := filepath.Join(dir, "agent-gateway")
		build := exec.Command("go", "build", "-o", bin, "./gateway/cmd/agent-gateway")
		build.Dir = filepath.Join("..", "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the gateway: %v\n%s", err, out)
		}
		t.Setenv("AGENT_GATEWAY_BIN", bin)
	}
	kc := filepath.Join(dir, "gateway-kubeconfig")
	writeFile(t, kc, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tier
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: gateway
  user: {token: %q, as: "system:serviceaccount:%s:agent-gateway"}
contexts:
- name: tier
  context: {cluster: tier, user: gateway, namespace: %s}
current-context: tier
`, cp.apiURL, cp.token, signOutNS, signOutNS), 0o600)
	key := make([]byte, 32)
	rand.Read(key)
	b64 := base64.StdEncoding.EncodeToString(key)
	start := func() *gatewaytest.Gateway {
		return gatewaytest.Start(t, gatewaytest.Options{
			Agents: []gatewaytest.Agent{{ID: "codex-a"}},
			Configure: func(c *gateway.Config) {
				c.Auth.Session.Keys = []string{b64}
				c.Auth.Session.SignOutConfigMap = signOutCM
				c.Kubernetes.Kubeconfig = kc
			},
		})
	}
	a, b := start(), start()
	// a and b have different admin tokens but the same session key: a
	// cookie from one opens on the other.
	login := func(g *gatewaytest.Gateway) (string, string) { return signIn(t, g.URL, g.AdminToken) }
	get := func(g *gatewaytest.Gateway, cookie string) restwalk.Reply { return withCookie(t, g.URL, cookie) }

	cookie, csrf := login(a)
	live, _ := login(b)
	if r := get(b, cookie); r.Status != http.StatusOK || len(r.Body) == 0 {
		t.Fatalf("a's session on b before sign-out: %d %s", r.Status, r.Body)
	}
	signOut(t, a.URL, cookie, csrf)
	if r := get(a, cookie); r.Status != http.StatusUnauthorized {
		t.Errorf("the signed-out cookie on the replica that signed it out: %d", r.Status)
	}
	d := refusedWithin(t, b.URL, cookie, "the other replica")
	t.Logf("the copied cookie refused on the other replica %v after the sign-out answered", d.Round(time.Millisecond))
	restwalk.Must(t, http.StatusOK, get(b, live), "a live session on b")

	// Either restarts: the list is in the API server, read before ready.
	for _, which := range []string{"b", "a"} {
		g := &b
		if which == "a" {
			g = &a
		}
		if err := (*g).Stop(); err != nil {
			t.Fatal(err)
		}
		*g = start()
		if r := get(*g, cookie); r.Status != http.StatusUnauthorized {
			t.Errorf("the copied cookie on the restarted %s: %d", which, r.Status)
		}
	}
	restwalk.Must(t, http.StatusOK, get(a, live), "a live session on the restarted a")

	// Concurrent sign-outs on both replicas all land.
	const n = 6
	type sess struct {
		g            *gatewaytest.Gateway
		cookie, csrf string
	}
	var all []sess
	for i := range n {
		g := []*gatewaytest.Gateway{a, b}[i%2]
		c, x := login(g)
		all = append(all, sess{g, c, x})
	}
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { signOut(t, s.g.URL, s.cookie, s.csrf) })
	}
	wg.Wait()
	for i, s := range all {
		for _, g := range []*gatewaytest.Gateway{a, b} {
			refusedWithin(t, g.URL, s.cookie, fmt.Sprintf("concurrent sign-out %d", i))
		}
	}
	data := cp.mustKubectl("get", "configmap", "-n", signOutNS, signOutCM, "-o", "jsonpath={.data.revoked}")
	if lines := strings.Count(data, "\n"); lines != n+1 {
		t.Errorf("the ConfigMap holds %d sign-outs, want %d", lines, n+1)
	}
	if strings.Contains(data, cookie) {
		t.Error("the ConfigMap holds a cookie")
	}
	conflicts := 0
	for _, g := range []*gatewaytest.Gateway{a, b} {
		r := restwalk.Client{URL: g.URL, Token: g.AdminToken}.Do(t, http.MethodGet, "/metrics", nil)
		for _, l := range strings.Split(string(r.Body), "\n") {
			var v int
			if _, err := fmt.Sscanf(l, "agent_gateway_session_signout_conflicts_total %d", &v); err == nil {
				conflicts += v
			}
		}
	}
	t.Logf("%d concurrent sign-outs on two replicas: all landed, %d resourceVersion conflicts retried", n, conflicts)
}
