package gateway_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/fakesidecar"
	"github.com/agentworkspace/files/gateway/internal/session"
)

// Issues 14 and 26: a lone gateway (no auth.session.signOutConfigMap)
// keeps its sign-outs in process: a copy of a signed-out cookie is refused
// while live sessions go on working, and nothing secret is logged. Sharing
// sign-outs between replicas goes through the Kubernetes API (tested in
// internal/signouts and the API-server tier).
func TestSignOutInProcess(t *testing.T) {
	sc := fakesidecar.Start(t, "codex-a")
	key := make([]byte, 32)
	rand.Read(key)
	b64 := base64.StdEncoding.EncodeToString(key)
	g := gatewaytest.Start(t, gatewaytest.Options{
		Agents:        []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.Addr, DavURL: "https://" + sc.Addr}},
		MetricsServer: true,
		Configure:     func(c *gateway.Config) { c.Auth.Session.Keys = []string{b64} },
	})
	get := func(cookie string) int {
		req, _ := http.NewRequest(http.MethodGet, g.URL+api+"/agents", nil)
		req.AddCookie(&http.Cookie{Name: session.CookieName, Value: cookie})
		return do(t, req).Status
	}
	cookie, csrf, lr := login(t, g, g.AdminToken)
	if lr.Status != http.StatusOK || cookie == nil {
		t.Fatalf("login: %d %s", lr.Status, lr.Body)
	}
	copied := cookie.Value
	other, _, _ := login(t, g, g.AdminToken)
	if st := get(copied); st != http.StatusOK {
		t.Fatalf("the session before sign-out: %d", st)
	}
	sess, ok := session.New(nil, 0, 0, key).Get(copied)
	if !ok {
		t.Fatal("cannot open the cookie with the configured key")
	}

	req, _ := http.NewRequest(http.MethodDelete, g.URL+api+"/session", nil)
	req.AddCookie(cookie)
	req.Header.Set("X-CSRF-Token", csrf)
	if r := do(t, req); r.Status != http.StatusNoContent {
		t.Fatalf("sign-out: %d %s", r.Status, r.Body)
	}
	if st := get(copied); st != http.StatusUnauthorized {
		t.Errorf("a copy of the cookie after sign-out: %d, want 401", st)
	}
	if st := get(other.Value); st != http.StatusOK {
		t.Errorf("another live session after the sign-out: %d", st)
	}
	// The peer endpoint is gone from the metrics listener.
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(m, g.MetricsURL+"/internal/session/revocations", strings.NewReader(`{"revocations":[]}`))
		if r := do(t, req); r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
			t.Errorf("%s of the removed peer endpoint: %d %s", m, r.Status, r.Body)
		}
	}
	logs := g.Logs()
	if strings.Contains(logs, b64) || strings.Contains(logs, sess.SID) || strings.Contains(logs, copied) || strings.Contains(logs, session.Digest(sess.SID)) {
		t.Errorf("the log shows a key, a session id, its digest or a cookie")
	}
}

// The removed peer protocol's key is refused at start, by name, in one line
// that says what replaces it.
func TestSessionPeersRefused(t *testing.T) {
	bin, err := gatewaytest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cfg := `httpServer: { address: "127.0.0.1:0" }
agentRuntime:
  defaultAgent: codex-a
  agents:
    codex-a: { provider: codex_app_server, codexAppServer: { endpoint: "ws://codex-a.invalid:4500" } }
auth:
  tokens:
    - { operator: alice, role: admin, sha256: "` + config.HashToken("t") + `" }
  session:
    keys: ["` + base64.StdEncoding.EncodeToString(make([]byte, 32)) + `"]
    peers: ["agent-gateway-peers:9090"]
`
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--config", path)
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v, want status 2; stderr:\n%s", err, stderr.String())
	}
	out := strings.TrimSpace(stderr.String())
	if n := strings.Count(out, config.PeersRemoved); n != 1 || strings.Count(out, "\n") != 0 {
		t.Errorf("want exactly the one line %q, got:\n%s", config.PeersRemoved, out)
	}
}
