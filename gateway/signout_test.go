package gateway_test

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/gateway/internal/fakesidecar"
	"github.com/agentworkspace/files/gateway/internal/session"
)

// Issue 14: sign-out holds on every replica and across a restart of one,
// through real gateway processes that share a session key and name each
// other in auth.session.peers.
func TestSignOutAcrossReplicas(t *testing.T) {
	sc := fakesidecar.Start(t, "codex-a")
	key := make([]byte, 32)
	rand.Read(key)
	b64 := base64.StdEncoding.EncodeToString(key)
	start := func(peers ...string) *gatewaytest.Gateway {
		return gatewaytest.Start(t, gatewaytest.Options{
			Agents:        []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.Addr, DavURL: "https://" + sc.Addr}},
			MetricsServer: true,
			Configure: func(c *gateway.Config) {
				c.Auth.Session.Keys = []string{b64}
				c.Auth.Session.Peers = peers
			},
		})
	}
	dead := closedAddr(t) // connection refused
	hung := hungPeer(t)   // accepts, never answers
	peerAddr := func(g *gatewaytest.Gateway) string { return strings.TrimPrefix(g.MetricsURL, "http://") }
	get := func(g *gatewaytest.Gateway, cookie string) int {
		req, _ := http.NewRequest(http.MethodGet, g.URL+api+"/agents", nil)
		req.AddCookie(&http.Cookie{Name: session.CookieName, Value: cookie})
		return do(t, req).Status
	}

	// B starts first; its only peer is down, so it reports ready after
	// SyncTimeout with what it has (nothing).
	if _, err := gatewaytest.Binary(); err != nil { // built before the clock starts
		t.Fatal(err)
	}
	t0 := time.Now()
	b := start(dead)
	if d := time.Since(t0); d > session.SyncTimeout+10*time.Second {
		t.Errorf("B with a dead peer took %v to become ready", d)
	}
	// The line may reach the test a moment after B reports ready.
	if !strings.Contains(waitLog(b, "not every peer answered at start"), "not every peer answered at start") {
		t.Errorf("B did not say it started without its peers' lists")
	}
	// A names B and a peer that accepts connections but never answers.
	a := start(peerAddr(b), hung)

	cookie, csrf, lr := login(t, a, a.AdminToken)
	if lr.Status != http.StatusOK || cookie == nil {
		t.Fatalf("login on A: %d %s", lr.Status, lr.Body)
	}
	copied := cookie.Value
	if st := get(b, copied); st != http.StatusOK {
		t.Fatalf("A's session on B before sign-out: %d (the replicas share the key)", st)
	}

	req, _ := http.NewRequest(http.MethodDelete, a.URL+api+"/session", nil)
	req.AddCookie(cookie)
	req.Header.Set("X-CSRF-Token", csrf)
	t1 := time.Now()
	if r := do(t, req); r.Status != http.StatusNoContent {
		t.Fatalf("sign-out on A: %d %s", r.Status, r.Body)
	}
	t.Run("a peer that does not answer does not hold up sign-out", func(t *testing.T) {
		// A waits at most SignOutWait, well below the hung peer's PeerTimeout.
		if d := time.Since(t1); d >= session.PeerTimeout {
			t.Errorf("sign-out took %v with a hung peer (bound %v)", d, session.SignOutWait)
		}
	})
	t.Run("the copy is refused on A and, within a bounded wait, on B", func(t *testing.T) {
		if st := get(a, copied); st != http.StatusUnauthorized {
			t.Errorf("copy on A after sign-out: %d", st)
		}
		// The first delivery to B may time out (PeerTimeout) on a loaded
		// machine; the retries run for about 8 s after it.
		const bound = 10 * time.Second
		deadline := time.Now().Add(bound)
		for get(b, copied) != http.StatusUnauthorized {
			if time.Now().After(deadline) {
				t.Fatalf("copy still accepted on B %v after sign-out on A", bound)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	t.Run("a restarted B pulls the sign-out before it is ready", func(t *testing.T) {
		if err := b.Stop(); err != nil {
			t.Fatal(err)
		}
		b2 := start(peerAddr(a))
		if st := get(b2, copied); st != http.StatusUnauthorized {
			t.Errorf("copy on the restarted B: %d", st)
		}
		if !strings.Contains(waitLog(b2, "session revocations synced from peers"), "session revocations synced from peers") {
			t.Errorf("restarted B did not log its sync")
		}
		// A live session still works there: the list is of sign-outs only.
		c2, _, _ := login(t, a, a.AdminToken)
		if st := get(b2, c2.Value); st != http.StatusOK {
			t.Errorf("a live session on the restarted B: %d", st)
		}
	})

	t.Run("the peer endpoint refuses anything not signed with the key", func(t *testing.T) {
		live, _, _ := login(t, a, a.AdminToken)
		sess, ok := session.New(nil, 0, 0, key).Get(live.Value)
		if !ok {
			t.Fatal("cannot open A's cookie with the shared key")
		}
		body := []byte(fmt.Sprintf(`{"revocations":[{"sid":%q,"exp":%d}]}`, sess.SID, sess.Expires.Unix()))
		other := make([]byte, 32)
		rand.Read(other)
		now := time.Now()
		for _, tc := range []struct {
			name   string
			method string
			sign   func(*http.Request, []byte)
		}{
			{"no signature", http.MethodPost, func(*http.Request, []byte) {}},
			{"read without signature", http.MethodGet, func(*http.Request, []byte) {}},
			{"another key", http.MethodPost, func(r *http.Request, b []byte) { signPeer(r, other, now, "n1", b) }},
			{"signature over another body", http.MethodPost, func(r *http.Request, _ []byte) { signPeer(r, key, now, "n2", []byte("{}")) }},
			{"stale timestamp", http.MethodPost, func(r *http.Request, b []byte) { signPeer(r, key, now.Add(-2*session.PeerWindow), "n3", b) }},
			{"future timestamp", http.MethodPost, func(r *http.Request, b []byte) { signPeer(r, key, now.Add(2*session.PeerWindow), "n4", b) }},
			{"garbled signature", http.MethodPost, func(r *http.Request, b []byte) {
				signPeer(r, key, now, "n5", b)
				r.Header.Set("X-Session-Peer-Signature", "AAAA,"+strings.Repeat("x", 43))
			}},
			{"signed body digest, other body", http.MethodPost, func(r *http.Request, b []byte) {
				signPeer(r, key, now, "n6", b)
				r.Body = io.NopCloser(bytes.NewReader(bytes.ToUpper(b)))
			}},
			{"nonce of another length", http.MethodPost, func(r *http.Request, b []byte) {
				signPeer(r, key, now, "n7", b)
				r.Header.Set("X-Session-Peer-Nonce", strings.Repeat("A", 4096))
			}},
		} {
			req, _ := http.NewRequest(tc.method, a.MetricsURL+session.PeerPath, bytes.NewReader(body))
			tc.sign(req, body)
			r := do(t, req)
			if r.Status != http.StatusForbidden {
				t.Errorf("%s: %d %s, want 403", tc.name, r.Status, r.Body)
			}
			if tc.method == http.MethodGet && bytes.Contains(r.Body, []byte("revocations")) {
				t.Errorf("%s: the list was returned", tc.name)
			}
			if st := get(a, live.Value); st != http.StatusOK {
				t.Fatalf("%s revoked a live session (%d)", tc.name, st)
			}
		}
		// The public port does not serve the peer endpoint at all (a GET
		// there is the portal's page).
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(m, a.URL+session.PeerPath, bytes.NewReader(body))
			signPeer(req, key, now, "public-"+m, body)
			r := do(t, req)
			if r.Header.Get("X-Session-Peer-Signature") != "" || bytes.Contains(r.Body, []byte(`"revocations"`)) || (m == http.MethodPost && r.Status < 400) {
				t.Errorf("%s %s on the public port: %d %s", m, session.PeerPath, r.Status, r.Body)
			}
		}
		// Control: the same request signed with the key is accepted once...
		signed := func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, a.MetricsURL+session.PeerPath, bytes.NewReader(body))
			signPeer(req, key, now, "replay-me", body)
			return req
		}
		if r := do(t, signed()); r.Status != http.StatusOK || r.Header.Get("X-Session-Peer-Signature") == "" {
			t.Fatalf("signed revocation: %d %s", r.Status, r.Body)
		}
		if st := get(a, live.Value); st != http.StatusUnauthorized {
			t.Errorf("signed revocation did not sign the session out: %d", st)
		}
		// ...and refused when replayed.
		if r := do(t, signed()); r.Status != http.StatusForbidden {
			t.Errorf("replayed request: %d, want 403", r.Status)
		}
		logs := waitLog(a, `"reason":"replayed nonce"`)
		for _, want := range []string{"missing signature", "bad signature", "timestamp outside the window", "replayed nonce", "body does not match its digest", "malformed peer header"} {
			if !strings.Contains(logs, `"reason":"`+want+`"`) {
				t.Errorf("no refusal logged with reason %q", want)
			}
		}
		if strings.Contains(logs, b64) || strings.Contains(logs, sess.SID) || strings.Contains(logs, live.Value) {
			t.Errorf("the log shows a key, a session id or a cookie")
		}
	})
}

// waitLog returns g's log once it holds want (its output reaches the test
// through a pipe, a moment after the response), or after 5 s.
func waitLog(g *gatewaytest.Gateway, want string) string {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(g.Logs(), want) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return g.Logs()
}

// signPeer signs req as a replica does, written from the wire format (see
// gateway/internal/session/peerauth.go) rather than with its code. The
// nonce is derived from label: 16 bytes, base64url (22 characters).
func signPeer(req *http.Request, sessionKey []byte, at time.Time, label string, body []byte) {
	ls := sha256.Sum256([]byte(label))
	nonce := base64.RawURLEncoding.EncodeToString(ls[:16])
	const instance = "test-peer-instance-000" // 22 characters, as an instance id
	k, err := hkdf.Key(sha256.New, sessionKey, nil, "agent-gateway session peers v1", 32)
	if err != nil {
		panic(err)
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	msg := strings.Join([]string{"request", req.Method, req.URL.Path, ts, nonce, instance, digest}, "\n")
	m := hmac.New(sha256.New, k)
	m.Write([]byte(msg))
	req.Header.Set("X-Session-Peer-Instance", instance)
	req.Header.Set("X-Session-Peer-Body-SHA256", digest)
	req.Header.Set("X-Session-Peer-Timestamp", ts)
	req.Header.Set("X-Session-Peer-Nonce", nonce)
	req.Header.Set("X-Session-Peer-Signature", base64.RawURLEncoding.EncodeToString(m.Sum(nil)))
}

// hungPeer returns the address of a listener that accepts connections and
// never answers.
func hungPeer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}
