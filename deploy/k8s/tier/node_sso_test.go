//go:build k8stier

package tier

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/internal/restwalk"
)

// sso runs the dev overlay's single sign-on on the real kubelet
// (docs/sso.md): the oauth2-proxy container of the gateway's pod, with the
// overlay's own settings pointed at a real OpenID Connect provider
// (mockoidc, the mock-oidc command, on the node's bridge address that pods
// reach), signs an admin-group user in; they read and edit a file through
// it. A user outside the group gets 403; identity headers sent to the
// gateway's own port from outside its pod are ignored. First an HTTP
// client with cookies follows the redirects a browser would; then headless
// Chromium does it all in the portal (portal/e2e/node-sso.mjs).
// It runs last: it rolls the gateway to the provider's client.
func (n *node) sso() {
	n.t.Run("SSO: oauth2-proxy in the gateway's pod signs an admin-group user in; others get 403; forged headers are ignored", func(t *testing.T) {
		// A project of its own on codex-a's volume (earlier steps delete theirs).
		project := filepath.Join(n.volumes["codex-a-projects"], "sso-demo")
		if err := os.Mkdir(project, 0o755); err != nil || os.Lchown(project, 1000, 1000) != nil {
			t.Fatalf("project sso-demo: %v", err)
		}
		writeAs1000(t, filepath.Join(project, "notes.md"), "before\n")
		oidc := startMockOIDC(t, n.dir)
		ssoURL := n.pointProxyAt(t, oidc)
		admin := ssoClient()
		oidc.queue(t, `{"name":"ada","email":"ada@example.com","groups":["devs","workspace-admins"]}`)
		r := ssoGet(t, admin, ssoURL+"/oauth2/start?rd=%2Fapi%2Fv1%2Fagent-gateway%2Fsession")
		if r.status != 200 || r.json["operator"] != "ada" || r.json["sso"] != true {
			t.Fatalf("sign-in through the proxy: %d %s", r.status, r.body)
		}
		f := ssoGet(t, admin, ssoURL+restwalk.Q("codex-a", "files", "PROJECT", "sso-demo", "notes.md"))
		if f.status != 200 {
			t.Fatalf("read through the proxy: %d %s", f.status, f.body)
		}
		entry, _ := f.json["entry"].(map[string]any)
		body, _ := json.Marshal(map[string]any{"workspace": restwalk.WS("PROJECT", "sso-demo"), "path": "notes.md", "content": "edited by ada via SSO\n", "expected_revision": entry["revision"]})
		if u := ssoDo(t, admin, "PUT", ssoURL+api+"/codex-a/projects/files", body, nil); u.status != 200 {
			t.Fatalf("edit through the proxy: %d %s", u.status, u.body)
		}
		if b, err := os.ReadFile(filepath.Join(project, "notes.md")); err != nil || string(b) != "edited by ada via SSO\n" {
			t.Errorf("the volume after the edit: %q %v", b, err)
		}
		outsider := ssoClient()
		oidc.queue(t, `{"name":"otto","email":"otto@example.com","groups":["devs"]}`)
		if r := ssoGet(t, outsider, ssoURL+"/oauth2/start?rd=%2Fapi%2Fv1%2Fagent-gateway%2Fsession"); r.status != 403 || r.json["operator"] != "otto" {
			t.Errorf("outsider's session: %d %s", r.status, r.body)
		}
		forged := map[string]string{"X-Forwarded-User": "ada", "X-Forwarded-Groups": "workspace-admins"}
		if r := ssoDo(t, outsider, "GET", ssoURL+api, nil, forged); r.status != 403 {
			t.Errorf("outsider with forged groups through the proxy: %d %s", r.status, r.body)
		}
		// Straight to the gateway's port from the node, not the pod's loopback.
		if r := ssoDo(t, ssoClient(), "GET", n.gatewayURL+api, nil, forged); r.status != 401 {
			t.Errorf("forged identity headers at the gateway's own port: %d %s (want 401: ignored)", r.status, r.body)
		}
		if r := n.do("GET", api, nil); r.status != 200 {
			t.Errorf("a token client at the gateway's port: %d %s", r.status, r.body)
		}
		// The same in a browser: headless Chromium signs in through the
		// proxy and edits the file in the portal; the outsider meets the
		// no-access page and a 403 (portal/e2e/node-sso.mjs).
		oidc.queue(t, `{"name":"ada","email":"ada@example.com","groups":["devs","workspace-admins"]}`)
		seen := browserSSO(t, "--url", ssoURL, "--as", "admin", "--project", "sso-demo", "--file", "notes.md", "--text", "edited by ada in the browser\n")
		if seen["operator"] != "ada" || seen["sso"] != "via SSO" {
			t.Errorf("the portal signed in through the proxy shows %v", seen)
		}
		if b, err := os.ReadFile(filepath.Join(project, "notes.md")); err != nil || string(b) != "edited by ada in the browser\n" {
			t.Errorf("the volume after the browser's edit: %q %v", b, err)
		}
		oidc.queue(t, `{"name":"otto","email":"otto@example.com","groups":["devs"]}`)
		seen = browserSSO(t, "--url", ssoURL, "--as", "outsider")
		if seen["apiStatus"] != float64(403) || !strings.Contains(fmt.Sprint(seen["noAccess"]), "otto") {
			t.Errorf("the outsider's browser: %v", seen)
		}
	})
}

// browserSSO runs portal/e2e/node-sso.mjs (Playwright's Chromium, the
// system chromium) with args and returns the JSON line it printed.
func browserSSO(t *testing.T, args ...string) map[string]any {
	t.Helper()
	portal := filepath.Join("..", "..", "..", "portal")
	if _, err := os.Stat(filepath.Join(portal, "node_modules", "@playwright", "test")); err != nil {
		t.Fatalf("the browser step needs the portal's packages: run make setup (npm ci in portal): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"e2e/node-sso.mjs"}, args...)...)
	cmd.Dir = portal
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the browser (%s): %v\n%s", strings.Join(args[:4], " "), err, stderr.String())
	}
	var seen map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(out), &seen); err != nil {
		t.Fatalf("the browser printed %q: %v", out, err)
	}
	t.Logf("the browser (%s): %s", strings.Join(args[:4], " "), bytes.TrimSpace(out))
	return seen
}

type mockOIDC struct {
	issuer, clientID, secret string
	in                       io.WriteCloser
	lines                    chan map[string]any
}

// startMockOIDC builds and starts the mock-oidc command on the bridge
// address; it stops with the test.
func startMockOIDC(t *testing.T, dir string) *mockOIDC {
	t.Helper()
	bin := filepath.Join(dir, "mock-oidc")
	if out, err := runEnv(3*time.Minute, []string{"CGO_ENABLED=0"}, "go", "build", "-C", "../../..", "-o", bin, "./internal/ssotest/cmd/mock-oidc"); err != nil {
		t.Fatalf("go build mock-oidc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--listen", bridgeIP+":0")
	in, _ := cmd.StdinPipe()
	errp, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	m := &mockOIDC{in: in, lines: make(chan map[string]any, 16)}
	go func() {
		sc := bufio.NewScanner(errp)
		for sc.Scan() {
			var v map[string]any
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				m.lines <- v
			}
		}
		close(m.lines)
	}()
	l := m.next(t)
	m.issuer, _ = l["issuer"].(string)
	m.clientID, _ = l["client_id"].(string)
	m.secret, _ = l["client_secret"].(string)
	if l["@message"] != "listening" || m.issuer == "" {
		t.Fatalf("mock-oidc: %v", l)
	}
	return m
}

func (m *mockOIDC) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case l, ok := <-m.lines:
		if !ok {
			t.Fatal("mock-oidc exited")
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("mock-oidc: no answer in 30 s")
	}
	return nil
}

// queue makes user (a JSON line) the next login's.
func (m *mockOIDC) queue(t *testing.T, user string) {
	t.Helper()
	fmt.Fprintln(m.in, user)
	if l := m.next(t); l["@message"] != "queued" {
		t.Fatalf("mock-oidc: %v", l)
	}
}

// pointProxyAt gives the overlay's oauth2-proxy settings the provider m
// (its issuer, discovery, its client in the Secret oauth2-proxy-oidc, a
// plain-HTTP callback on the Service's port sso), rolls the gateway and
// returns the proxy's URL.
func (n *node) pointProxyAt(t *testing.T, m *mockOIDC) string {
	t.Helper()
	svc := strings.TrimSpace(n.cp.mustKubectl("-n", nodeNS, "get", "service", "agent-gateway", "-o", "jsonpath={.spec.clusterIP}"))
	ssoURL := "http://" + svc + ":4180"
	src, err := os.ReadFile(filepath.Join(overlayDir, "oauth2-proxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	for _, l := range strings.Split(string(src), "\n") {
		switch key, _, _ := strings.Cut(l, " ="); key {
		case "skip_oidc_discovery", "login_url", "redeem_url", "oidc_jwks_url", "cookie_secure":
		case "oidc_issuer_url":
			fmt.Fprintf(&cfg, "oidc_issuer_url = %q\n", m.issuer)
		case "redirect_url":
			fmt.Fprintf(&cfg, "redirect_url = %q\ncookie_secure = false\n", ssoURL+"/oauth2/callback")
		default:
			cfg.WriteString(l + "\n")
		}
	}
	file := filepath.Join(n.dir, "oauth2-proxy-sso.cfg")
	writeFile(t, file, cfg.String(), 0o600)
	n.cp.mustKubectl("-n", nodeNS, "create", "configmap", "oauth2-proxy-config-sso", "--from-file=oauth2-proxy.cfg="+file)
	n.cp.mustKubectl("-n", nodeNS, "delete", "secret", "oauth2-proxy-oidc")
	n.cp.mustKubectl("-n", nodeNS, "create", "secret", "generic", "oauth2-proxy-oidc", "--from-literal=client-id="+m.clientID,
		"--from-literal=client-secret="+m.secret, "--from-literal=cookie-secret="+randomHex(16))
	// The pods before the roll: a terminating one can still answer a ping
	// (or hold the Service's address) after rollout status returns.
	before := strings.Fields(n.cp.mustKubectl("-n", nodeNS, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o", "jsonpath={.items[*].metadata.name}"))
	n.cp.mustKubectl("-n", nodeNS, "patch", "deployment", "agent-gateway", "--type=strategic",
		"-p", `{"spec":{"template":{"spec":{"volumes":[{"name":"oauth2-proxy-config","configMap":{"name":"oauth2-proxy-config-sso"}}]}}}}`)
	// Only the gateway's rollout: codex-b is scaled to nothing by then.
	n.cp.mustKubectl("-n", nodeNS, "rollout", "status", "deployment/agent-gateway", "--timeout=180s")
	for _, p := range before {
		if out, err := n.cp.kubectl(2*time.Minute, "-n", nodeNS, "wait", "--for=delete", "pod/"+p, "--timeout=110s"); err != nil && !strings.Contains(string(out), "NotFound") {
			t.Fatalf("the gateway pod %s before the roll is still there: %v\n%s", p, err, out)
		}
	}
	// The new pod's address is programmed by kube-proxy and the policy
	// enforcer a moment after it is ready: five answers in a row, not one.
	ok := 0
	waitFor(t, "the proxy answers on the Service's port sso five times in a row", 90*time.Second, func() error {
		r, err := http.Get(ssoURL + "/ping")
		if err == nil {
			r.Body.Close()
			if r.StatusCode != 200 {
				err = fmt.Errorf("/ping: %d", r.StatusCode)
			}
		}
		if err != nil {
			ok = 0
			return err
		}
		if ok++; ok < 5 {
			return fmt.Errorf("%d answers in a row", ok)
		}
		return nil
	}, n.procs...)
	return ssoURL
}

func ssoClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

func ssoGet(t *testing.T, c *http.Client, url string) reply { return ssoDo(t, c, "GET", url, nil, nil) }

func ssoDo(t *testing.T, c *http.Client, method, url string, body []byte, hdr map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, body: b}
	_ = json.Unmarshal(b, &r.json)
	return r
}

// writeAs1000 writes p owned by UID 1000, the agent's user.
func writeAs1000(t *testing.T, p, content string) {
	t.Helper()
	writeFile(t, p, content, 0o600)
	if err := os.Lchown(p, 1000, 1000); err != nil {
		t.Fatal(err)
	}
}
