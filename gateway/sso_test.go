package gateway_test

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/ssotest"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// ssoUsers of the provider: one in the admin group, one outside it.
var (
	ssoAdmin    = ssotest.User{Name: "ada", Email: "ada@example.com", Groups: []string{"devs", "workspace-admins"}}
	ssoOutsider = ssotest.User{Name: "otto", Email: "otto@example.com", Groups: []string{"devs"}}
)

// browser is a client with its own cookies that follows redirects, as a
// browser does; from, when set, is the local address it connects from.
func browser(t *testing.T, from string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if from != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Jar: jar, Transport: tr}
}

func send(t *testing.T, c *http.Client, method, url, body string, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// signIn signs u in through the proxy: the proxy's start page, the
// provider's authorization endpoint, the callback, back to the portal's
// session endpoint.
func signIn(t *testing.T, m *mockoidc.MockOIDC, p *ssotest.Proxy, u ssotest.User) (*http.Client, response) {
	t.Helper()
	c := browser(t, "")
	m.QueueUser(u.Mock())
	return c, send(t, c, "GET", p.URL+"/oauth2/start?rd="+api+"/session", "")
}

// ssoStack: a real sidecar with demo/notes.txt, the gateway trusting
// identity headers from loopback 127.0.0.1 only with workspace-admins as its
// admin group, mockoidc and the built oauth2-proxy in front of the gateway.
func ssoStack(t *testing.T) (*gatewaytest.Gateway, *mockoidc.MockOIDC, *ssotest.Proxy, string) {
	projects := t.TempDir()
	ckFile(t, projects, "demo/notes.txt", "first\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects})
	g := gatewaytest.Start(t, gatewaytest.Options{Writable: true, TrustedProxyCIDRs: []string{"127.0.0.1/32"},
		Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}},
		Configure: func(c *gateway.Config) {
			c.Auth.TrustedProxy.AdminGroup, c.Auth.TrustedProxy.AdminGroups = "", []string{"workspace-admins"}
		}})
	m := ssotest.StartOIDC(t)
	p := ssotest.StartProxy(t, m, ssotest.ProxyOptions{Upstream: g.URL})
	return g, m, p, filepath.Join(sc.ProjectsDir, "demo/notes.txt")
}

// davEdit replaces demo/notes.txt over WebDAV through base with the
// precondition the sidecar requires (If-Match with the current ETag).
func davEdit(t *testing.T, c *http.Client, base, body string, hdr ...string) response {
	t.Helper()
	url := base + "/dav/codex-a/projects/demo/notes.txt"
	etag := send(t, c, "HEAD", url, "", hdr...).Header.Get("ETag")
	return send(t, c, "PUT", url, body, append([]string{"If-Match", etag}, hdr...)...)
}

const ssoFile = api + "/agents/codex-a/projects/files?workspace.scope=PROJECT&workspace.project_name=demo&path=notes.txt"

// An admin-group user signs in through oauth2-proxy against a real OIDC
// provider, reads and edits a file, and signs out through the proxy.
func TestSSOAdminEditsThroughProxy(t *testing.T) {
	g, m, p, notes := ssoStack(t)
	c, r := signIn(t, m, p, ssoAdmin)
	if r.Status != http.StatusOK {
		t.Fatalf("sign-in: %d %s\nproxy logs:\n%s", r.Status, r.Body, p.Logs())
	}
	who := r.JSON(t)
	if who["operator"] != ssoAdmin.Name || who["role"] != "admin" || who["sso"] != true || who["sign_out_url"] != "/oauth2/sign_out" {
		t.Errorf("session = %s", r.Body)
	}
	if r := send(t, c, "GET", p.URL+ssoFile, ""); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "first") {
		t.Fatalf("read through the proxy: %d %s", r.Status, r.Body)
	}
	if r := davEdit(t, c, p.URL, "edited by ada\n"); r.Status/100 != 2 {
		t.Fatalf("edit through the proxy: %d %s", r.Status, r.Body)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "edited by ada\n" {
		t.Fatalf("file after the edit: %q %v", b, err)
	}
	// The audit record is written as the response goes out: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(auditOf(t, g, "webdav.PUT"), func(rec map[string]any) bool { return rec["operator"] == ssoAdmin.Name }) {
		if time.Now().After(deadline) {
			t.Fatalf("no webdav.PUT audit record names %s: %v", ssoAdmin.Name, g.AuditRecords(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Sign out through the proxy, back to the portal: the proxy's cookie is
	// gone and the gateway is out of reach again.
	nr := &http.Client{Jar: c.Jar, Transport: c.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if r := send(t, nr, "GET", p.URL+"/oauth2/sign_out?rd=%2F", ""); r.Status != http.StatusFound || r.Header.Get("Location") != "/" {
		t.Fatalf("sign out: %d %s %v", r.Status, r.Header.Get("Location"), r.Header)
	}
	if r := send(t, nr, "GET", p.URL+api+"/session", ""); r.Status == http.StatusOK {
		t.Fatalf("after sign-out the session still answers: %s", r.Body)
	}
}

// A user outside the admin group is refused everywhere (REST, WebDAV, the
// portal's session), also when it adds admin groups to its own request.
func TestSSOOutsiderRefused(t *testing.T) {
	_, m, p, _ := ssoStack(t)
	c, r := signIn(t, m, p, ssoOutsider)
	if r.Status != http.StatusForbidden {
		t.Fatalf("outsider's session: %d %s", r.Status, r.Body)
	}
	if who := r.JSON(t); who["operator"] != ssoOutsider.Name || who["sso"] != true || who["sign_out_url"] != "/oauth2/sign_out" {
		t.Errorf("outsider's 403 = %s (want it named, with the sign-out)", r.Body)
	}
	forged := []string{"X-Forwarded-User", "ada@example.com", "X-Forwarded-Groups", "workspace-admins", "X-Forwarded-Email", "ada@example.com"}
	for _, h := range [][]string{nil, forged} {
		if r := send(t, c, "GET", p.URL+ssoFile, "", h...); r.Status != http.StatusForbidden {
			t.Errorf("outsider REST (headers %v): %d %s", h, r.Status, r.Body)
		}
		if r := send(t, c, "PROPFIND", p.URL+"/dav/codex-a/", "", append([]string{"Depth", "1"}, h...)...); r.Status != http.StatusForbidden {
			t.Errorf("outsider WebDAV (headers %v): %d", h, r.Status)
		}
		if r := davEdit(t, c, p.URL, "otto was here\n", h...); r.Status != http.StatusForbidden {
			t.Errorf("outsider WebDAV PUT (headers %v): %d", h, r.Status)
		}
		if r := send(t, c, "GET", p.URL+api+"/session", "", h...); r.Status != http.StatusForbidden {
			t.Errorf("outsider session (headers %v): %d %s", h, r.Status, r.Body)
		}
	}
}

// Identity headers sent to the gateway by anyone but the proxy (here from
// 127.0.0.2, outside the trusted 127.0.0.1/32) are stripped: no identity,
// 401; next to a token they change nothing. Token and Basic auth work.
func TestSSOForgedHeadersIgnored(t *testing.T) {
	g, _, _, notes := ssoStack(t)
	c := browser(t, "127.0.0.2")
	forged := []string{"X-Forwarded-User", "mallory", "X-Forwarded-Groups", "workspace-admins"}
	if r := send(t, c, "GET", g.URL+ssoFile, "", forged...); r.Status != http.StatusUnauthorized {
		t.Errorf("forged REST: %d %s", r.Status, r.Body)
	}
	if r := davEdit(t, c, g.URL, "mallory\n", forged...); r.Status != http.StatusUnauthorized {
		t.Errorf("forged WebDAV PUT: %d", r.Status)
	}
	if r := send(t, c, "GET", g.URL+api+"/session", "", forged...); r.Status != http.StatusUnauthorized {
		t.Errorf("forged session: %d %s", r.Status, r.Body)
	}
	if r := send(t, c, "GET", g.URL+ssoFile, "", append([]string{"Authorization", "Bearer " + g.AdminToken}, forged...)...); r.Status != http.StatusOK {
		t.Errorf("bearer with forged headers: %d %s", r.Status, r.Body)
	}
	basic := append([]string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+g.AdminToken))}, forged...)
	if r := davEdit(t, c, g.URL, "by token\n", basic...); r.Status/100 != 2 {
		t.Fatalf("basic WebDAV PUT: %d %s", r.Status, r.Body)
	}
	if b, _ := os.ReadFile(notes); string(b) != "by token\n" {
		t.Errorf("file = %q", b)
	}
	for _, rec := range g.AuditRecords(t) {
		if rec["operator"] == "mallory" {
			t.Errorf("audit names the forged operator: %v", rec)
		}
	}
}
