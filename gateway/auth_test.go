package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// login trades a token for a session cookie and CSRF token.
func login(t *testing.T, g *gatewaytest.Gateway, token string) (*http.Cookie, string, response) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"token": token})
	req, _ := http.NewRequest(http.MethodPost, g.URL+api+"/session", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	r := do(t, req)
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "awf_session" {
			cookie = c
		}
	}
	csrf := ""
	if r.Status == http.StatusOK {
		csrf, _ = r.JSON(t)["csrf_token"].(string)
	}
	return cookie, csrf, r
}

// The auth matrix of docs/architecture.md "Auth" over the real binary.
func TestAuthMatrix(t *testing.T) {
	g, _, _ := twoFakes(t, gatewaytest.Options{})
	cookie, csrf, lr := login(t, g, g.AdminToken)
	if lr.Status != http.StatusOK || cookie == nil || csrf == "" {
		t.Fatalf("login: %d %s", lr.Status, lr.Body)
	}
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || cookie.Secure {
		t.Errorf("cookie attributes: %+v (want HttpOnly, SameSite=Strict, Path=/, not Secure on plain HTTP)", cookie)
	}
	if m := lr.JSON(t); m["operator"] != gatewaytest.AdminOperator || m["role"] != "admin" {
		t.Errorf("login body: %s", lr.Body)
	}
	if _, _, r := login(t, g, g.UserToken); r.Status != http.StatusForbidden {
		t.Errorf("non-admin login: %d %s", r.Status, r.Body)
	}
	if _, _, r := login(t, g, "wrong"); r.Status != http.StatusUnauthorized {
		t.Errorf("bad-token login: %d %s", r.Status, r.Body)
	}

	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	basic := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth("anyone", tok) }
	}
	withCookie := func(withCSRF string) func(*http.Request) {
		return func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: "awf_session", Value: cookie.Value})
			if withCSRF != "" {
				r.Header.Set("X-CSRF-Token", withCSRF)
			}
		}
	}
	none := func(*http.Request) {}
	type tc struct {
		name   string
		method string
		path   string
		body   string
		auth   func(*http.Request)
		want   int
	}
	listAgents := api + "/agents"
	create := api + "/agents/codex-a/projects"
	cases := []tc{
		{"no credentials", "GET", listAgents, "", none, 401},
		{"bad bearer", "GET", listAgents, "", bearer("nope"), 401},
		{"bad basic", "GET", listAgents, "", basic("nope"), 401},
		{"unknown scheme", "GET", listAgents, "", func(r *http.Request) { r.Header.Set("Authorization", "Digest x") }, 401},
		{"bad cookie", "GET", listAgents, "", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "awf_session", Value: "forged"}) }, 401},
		{"non-admin bearer", "GET", listAgents, "", bearer(g.UserToken), 403},
		{"non-admin basic", "GET", listAgents, "", basic(g.UserToken), 403},
		{"non-admin WebDAV", "PROPFIND", "/dav/codex-a/", "", basic(g.UserToken), 403},
		{"non-admin metrics", "GET", "/metrics", "", bearer(g.UserToken), 403},
		{"non-admin openapi (public, #14)", "GET", api + "/openapi.json", "", bearer(g.UserToken), 200},
		{"non-admin session", "GET", api + "/session", "", bearer(g.UserToken), 403},
		{"admin bearer", "GET", listAgents, "", bearer(g.AdminToken), 200},
		{"admin basic", "GET", listAgents, "", basic(g.AdminToken), 200},
		{"admin cookie GET", "GET", listAgents, "", withCookie(""), 200},
		{"admin cookie POST without CSRF", "POST", create, `{"name":"p1"}`, withCookie(""), 403},
		{"admin cookie POST wrong CSRF", "POST", create, `{"name":"p1"}`, withCookie("not-the-token"), 403},
		{"admin cookie POST with CSRF", "POST", create, `{"name":"p1"}`, withCookie(csrf), 200},
		{"admin bearer POST needs no CSRF", "POST", create, `{"name":"p2"}`, bearer(g.AdminToken), 200},
		{"admin cookie session", "GET", api + "/session", "", withCookie(""), 200},
		{"unauthenticated session", "GET", api + "/session", "", none, 401},
		{"healthz public", "GET", "/healthz", "", none, 200},
		{"readyz public", "GET", "/readyz", "", none, 200},
		{"portal public", "GET", "/", "", none, 200},
		{"portal route public", "GET", "/agents/codex-a", "", none, 200},
		{"metrics needs auth", "GET", "/metrics", "", none, 401},
		{"metrics admin", "GET", "/metrics", "", bearer(g.AdminToken), 200},
		{"openapi admin", "GET", api + "/openapi.json", "", bearer(g.AdminToken), 200},
		{"webdav needs auth", "PROPFIND", "/dav/codex-a/", "", none, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body *strings.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			} else {
				body = strings.NewReader("")
			}
			req, _ := http.NewRequest(c.method, g.URL+c.path, body)
			c.auth(req)
			r := do(t, req)
			if r.Status != c.want {
				t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, r.Status, c.want, r.Body)
			}
			if r.Header.Get("X-Request-ID") == "" {
				t.Error("no X-Request-ID on the response")
			}
			if c.want == 401 {
				isDAV := strings.HasPrefix(c.path, "/dav/")
				if got := r.Header.Get("WWW-Authenticate"); isDAV != strings.HasPrefix(got, `Basic realm="agent-workspace"`) {
					t.Errorf("WWW-Authenticate = %q on %s", got, c.path)
				}
				if r.reason(t) != "UNAUTHENTICATED" {
					t.Errorf("reason = %q", r.reason(t))
				}
			}
		})
	}

	// Logout needs the CSRF header, then the cookie no longer works.
	req, _ := http.NewRequest(http.MethodDelete, g.URL+api+"/session", nil)
	withCookie("")(req)
	if r := do(t, req); r.Status != http.StatusForbidden {
		t.Errorf("logout without CSRF: %d", r.Status)
	}
	req, _ = http.NewRequest(http.MethodDelete, g.URL+api+"/session", nil)
	withCookie(csrf)(req)
	if r := do(t, req); r.Status != http.StatusNoContent {
		t.Errorf("logout: %d %s", r.Status, r.Body)
	}
	req, _ = http.NewRequest(http.MethodGet, g.URL+listAgents, nil)
	withCookie("")(req)
	if r := do(t, req); r.Status != http.StatusUnauthorized {
		t.Errorf("cookie after logout: %d", r.Status)
	}
}

// Trusted-proxy headers count only from the configured CIDRs; from anyone
// else they are stripped (and Bearer auth still works).
func TestTrustedProxy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cidrs   []string
		trusted bool
	}{
		{"inside", []string{"127.0.0.0/8"}, true},
		{"outside", []string{"10.0.0.0/8", "::1/128"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, a, _ := twoFakes(t, gatewaytest.Options{TrustedProxyCIDRs: tc.cidrs})
			send := func(groups string) response {
				req, _ := http.NewRequest(http.MethodPost, g.URL+api+"/agents/codex-a/projects", strings.NewReader(`{"name":"via-proxy-`+tc.name+`"}`))
				req.Header.Set("X-Forwarded-User", "carol")
				req.Header.Set("X-Forwarded-Groups", groups)
				return do(t, req)
			}
			r := send("devs, workspace-admins")
			if tc.trusted {
				if r.Status != http.StatusOK {
					t.Fatalf("trusted proxy admin: %d %s", r.Status, r.Body)
				}
				calls := a.Calls()
				if op := calls[len(calls)-1].MD.Get(rpcmeta.Operator); len(op) != 1 || op[0] != "carol" {
					t.Errorf("operator sent to sidecar = %v, want carol", op)
				}
				if r := send("devs"); r.Status != http.StatusForbidden {
					t.Errorf("trusted proxy non-admin: %d %s", r.Status, r.Body)
				}
			} else if r.Status != http.StatusUnauthorized {
				t.Fatalf("untrusted peer with proxy headers: %d %s (headers must be ignored)", r.Status, r.Body)
			}
			// Proxy headers next to a token never change the operator.
			req, _ := http.NewRequest(http.MethodPost, g.URL+api+"/agents/codex-a/projects", strings.NewReader(`{"name":"token-`+tc.name+`"}`))
			req.Header.Set("Authorization", "Bearer "+g.AdminToken)
			req.Header.Set("X-Forwarded-User", "mallory")
			req.Header.Set("X-Forwarded-Groups", "workspace-admins")
			if r := do(t, req); r.Status != http.StatusOK {
				t.Fatalf("bearer: %d %s", r.Status, r.Body)
			}
			calls := a.Calls()
			if op := calls[len(calls)-1].MD.Get(rpcmeta.Operator); len(op) != 1 || op[0] != gatewaytest.AdminOperator {
				t.Errorf("operator = %v, want %s", op, gatewaytest.AdminOperator)
			}
		})
	}
}
