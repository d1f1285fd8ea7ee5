package auth

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/session"
)

func newAuth(t *testing.T) (*Authenticator, *session.Store) {
	t.Helper()
	store := session.New(nil, time.Hour, 10)
	return New(config.Auth{
		Tokens: []config.Token{
			{Operator: "alice", Role: "admin", SHA256: config.HashToken("admin-token")},
			{Operator: "bob", Role: "viewer", SHA256: config.HashToken("user-token")},
		},
		TrustedProxy: &config.TrustedProxy{CIDRs: []string{"10.0.0.0/8"}, UserHeader: "X-Forwarded-User", GroupsHeader: "X-Forwarded-Groups", AdminGroup: "admins"},
	}, store), store
}

func TestAuthenticate(t *testing.T) {
	a, store := newAuth(t)
	sess, err := store.Create("alice", "admin")
	if err != nil {
		t.Fatal(err)
	}
	// Sessions of operators no longer (or never) configured with that role
	// (#13 review: a removed or demoted admin kept their sessions).
	gone, err := store.Create("carol", "admin")
	if err != nil {
		t.Fatal(err)
	}
	demoted, err := store.Create("bob", "admin")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		remote   string
		headers  map[string]string
		cookie   string
		wantErr  error
		operator string
		admin    bool
		method   Method
	}{
		{name: "nothing", wantErr: ErrNoCredentials},
		{name: "bearer admin", headers: map[string]string{"Authorization": "Bearer admin-token"}, operator: "alice", admin: true, method: MethodBearer},
		{name: "bearer lower-case scheme", headers: map[string]string{"Authorization": "bearer admin-token"}, operator: "alice", admin: true, method: MethodBearer},
		{name: "bearer user", headers: map[string]string{"Authorization": "Bearer user-token"}, operator: "bob", method: MethodBearer},
		{name: "bearer bad", headers: map[string]string{"Authorization": "Bearer nope"}, wantErr: ErrBadCredentials},
		{name: "bearer empty", headers: map[string]string{"Authorization": "Bearer "}, wantErr: ErrBadCredentials},
		{name: "basic admin", headers: map[string]string{"Authorization": "Basic " + b64("whoever:admin-token")}, operator: "alice", admin: true, method: MethodBasic},
		{name: "basic token as user", headers: map[string]string{"Authorization": "Basic " + b64("admin-token:")}, wantErr: ErrBadCredentials},
		{name: "basic garbage", headers: map[string]string{"Authorization": "Basic !!!"}, wantErr: ErrBadCredentials},
		// base64 that decodes a valid-looking prefix before failing: nothing partly decoded counts
		{name: "basic cut-off base64", headers: map[string]string{"Authorization": "Basic " + b64("x:admin-token") + "!"}, wantErr: ErrBadCredentials},
		{name: "basic no colon", headers: map[string]string{"Authorization": "Basic " + b64("admin-token")}, wantErr: ErrBadCredentials},
		{name: "other scheme", headers: map[string]string{"Authorization": "Negotiate x"}, wantErr: ErrBadCredentials},
		{name: "session", cookie: sess.ID, operator: "alice", admin: true, method: MethodSession},
		{name: "forged session", cookie: "forged", wantErr: ErrBadCredentials},
		{name: "session of a removed operator", cookie: gone.ID, wantErr: ErrBadCredentials},
		{name: "session of a demoted operator", cookie: demoted.ID, wantErr: ErrBadCredentials},
		{name: "proxy trusted admin", remote: "10.1.2.3:555", headers: map[string]string{"X-Forwarded-User": "carol", "X-Forwarded-Groups": "devs,admins"}, operator: "carol", admin: true, method: MethodProxy},
		{name: "proxy trusted non-admin", remote: "10.1.2.3:555", headers: map[string]string{"X-Forwarded-User": "carol", "X-Forwarded-Groups": "devs"}, operator: "carol", method: MethodProxy},
		{name: "proxy group substring is not membership", remote: "10.1.2.3:555", headers: map[string]string{"X-Forwarded-User": "carol", "X-Forwarded-Groups": "admins-not"}, operator: "carol", method: MethodProxy},
		{name: "proxy untrusted peer", remote: "192.168.1.1:555", headers: map[string]string{"X-Forwarded-User": "carol", "X-Forwarded-Groups": "admins"}, wantErr: ErrNoCredentials},
		{name: "bearer wins over proxy headers", remote: "10.1.2.3:555", headers: map[string]string{"Authorization": "Bearer user-token", "X-Forwarded-User": "carol", "X-Forwarded-Groups": "admins"}, operator: "bob", method: MethodBearer},
		{name: "X-Operator ignored", headers: map[string]string{"Authorization": "Bearer user-token", "X-Operator": "alice"}, operator: "bob", method: MethodBearer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/agent-gateway/agents", nil)
			r.RemoteAddr = "127.0.0.1:1234"
			if c.remote != "" {
				r.RemoteAddr = c.remote
			}
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			if c.cookie != "" {
				r.AddCookie(&http.Cookie{Name: session.CookieName, Value: c.cookie})
			}
			a.Sanitize(r)
			if r.Header.Get("X-Operator") != "" {
				t.Error("X-Operator survived Sanitize")
			}
			id, err := a.Authenticate(r)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Operator != c.operator || id.Admin() != c.admin || id.Method != c.method {
				t.Errorf("identity = %+v, want operator %s admin %v method %s", id, c.operator, c.admin, c.method)
			}
		})
	}
}

func TestSanitizeStripsProxyHeadersFromUntrustedPeers(t *testing.T) {
	a, _ := newAuth(t)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("X-Forwarded-User", "carol")
	r.Header.Set("X-Forwarded-Groups", "admins")
	a.Sanitize(r)
	if r.Header.Get("X-Forwarded-User") != "" || r.Header.Get("X-Forwarded-Groups") != "" {
		t.Error("proxy headers from an untrusted peer survived")
	}
	r = httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "[::ffff:10.0.0.1]:1"
	r.Header.Set("X-Forwarded-User", "carol")
	a.Sanitize(r)
	if r.Header.Get("X-Forwarded-User") != "carol" {
		t.Error("IPv4-mapped trusted peer lost its headers")
	}
}

func TestCSRF(t *testing.T) {
	a, store := newAuth(t)
	sess, _ := store.Create("alice", "admin")
	for _, c := range []struct {
		method, header string
		ok             bool
	}{
		{"GET", "", true}, {"HEAD", "", true}, {"OPTIONS", "", true}, {"PROPFIND", "", true},
		{"POST", "", false}, {"PUT", "wrong", false}, {"DELETE", sess.CSRFToken, true}, {"MOVE", "", false},
	} {
		r := httptest.NewRequest(c.method, "/", nil)
		r.AddCookie(&http.Cookie{Name: session.CookieName, Value: sess.ID})
		if c.header != "" {
			r.Header.Set(CSRFHeader, c.header)
		}
		id, err := a.Authenticate(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := CheckCSRF(id, r); got != c.ok {
			t.Errorf("%s with %q: %v, want %v", c.method, c.header, got, c.ok)
		}
	}
	// Bearer requests need no CSRF token.
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Authorization", "Bearer admin-token")
	id, _ := a.Authenticate(r)
	if !CheckCSRF(id, r) {
		t.Error("bearer POST refused for CSRF")
	}
}

func TestSecure(t *testing.T) {
	a, _ := newAuth(t)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("X-Forwarded-Proto", "https")
	if a.Secure(r) {
		t.Error("X-Forwarded-Proto from an untrusted peer made the cookie Secure")
	}
	r.RemoteAddr = "10.0.0.5:1"
	if !a.Secure(r) {
		t.Error("X-Forwarded-Proto: https from the trusted proxy ignored")
	}
	r.RemoteAddr = "not-an-address"
	if a.Secure(r) {
		t.Error("X-Forwarded-Proto from an unparsable peer made the cookie Secure")
	}
	noProxy := New(config.Auth{Tokens: []config.Token{{Operator: "alice", Role: "admin", SHA256: config.HashToken("admin-token")}}}, session.New(nil, time.Hour, 10))
	r.RemoteAddr = "10.0.0.5:1"
	if noProxy.Secure(r) {
		t.Error("X-Forwarded-Proto made the cookie Secure with no trusted proxy configured")
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestCrossSiteRefused(t *testing.T) {
	a, store := newAuth(t)
	sess, _ := store.Create("alice", "admin")
	for _, c := range []struct {
		name    string
		remote  string
		headers map[string]string
		cookie  bool
		ok      bool
	}{
		{"session same origin", "", map[string]string{"Origin": "http://gw.example", CSRFHeader: sess.CSRFToken, "Sec-Fetch-Site": "same-origin"}, true, true},
		{"session cross-site with token", "", map[string]string{"Origin": "http://evil.example", CSRFHeader: sess.CSRFToken}, true, false},
		{"session sec-fetch cross-site", "", map[string]string{CSRFHeader: sess.CSRFToken, "Sec-Fetch-Site": "cross-site"}, true, false},
		{"proxy no browser headers", "10.0.0.1:1", map[string]string{"X-Forwarded-User": "carol", "X-Forwarded-Groups": "admins"}, false, true},
		{"proxy same origin via forwarded host", "10.0.0.1:1", map[string]string{"X-Forwarded-User": "carol", "X-Forwarded-Groups": "admins", "Origin": "https://files.example", "X-Forwarded-Host": "files.example"}, false, true},
		{"proxy cross-site", "10.0.0.1:1", map[string]string{"X-Forwarded-User": "carol", "X-Forwarded-Groups": "admins", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, false, false},
		// A browser resends cached Basic credentials (after the /dav/ challenge) on its own.
		{"basic from a WebDAV client", "", map[string]string{"Authorization": "Basic " + b64("any:admin-token")}, false, true},
		{"basic cross-site", "", map[string]string{"Authorization": "Basic " + b64("any:admin-token"), "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://gw.example/api", nil)
			r.RemoteAddr = "127.0.0.1:1"
			if c.remote != "" {
				r.RemoteAddr = c.remote
			}
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			if c.cookie {
				r.AddCookie(&http.Cookie{Name: session.CookieName, Value: sess.ID})
			}
			a.Sanitize(r)
			id, err := a.Authenticate(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := CheckCSRF(id, r); got != c.ok {
				t.Errorf("CheckCSRF = %v, want %v", got, c.ok)
			}
		})
	}
}

// The OpenAPI document is served without credentials (#14), and nothing else is.
func TestPublicPaths(t *testing.T) {
	a := New(config.Auth{}, session.New(nil, 0, 0))
	for _, tc := range []struct {
		method, path string
		public       bool
	}{
		{http.MethodGet, "/api/v1/agent-gateway/openapi.json", true},
		{http.MethodHead, "/api/v1/agent-gateway/openapi.json", true},
		{http.MethodPost, "/api/v1/agent-gateway/openapi.json", false},
		{http.MethodGet, "/api/v1/agent-gateway/openapi.json/", false},
		{http.MethodGet, "/api/v1/agent-gateway/agents", false},
		{http.MethodGet, "/dav/openapi.json", false},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		id, err := a.Authenticate(r)
		if tc.public {
			if err != nil || id.Method != MethodPublic || id.Operator != "" {
				t.Errorf("%s %s: %+v %v, want the public identity", tc.method, tc.path, id, err)
			}
		} else if err == nil {
			t.Errorf("%s %s: authenticated without credentials as %+v", tc.method, tc.path, id)
		}
	}
}

// TestPublicIsExact: only the exact escaped path of the OpenAPI document is
// public (#13 review: "openapi%2Ejson" was authenticated as public and then
// routed elsewhere).
func TestPublicIsExact(t *testing.T) {
	for target, want := range map[string]bool{
		"/api/v1/agent-gateway/openapi.json":   true,
		"/api/v1/agent-gateway/openapi%2Ejson": false,
		"/api/v1/agent-gateway/openapi.json/":  false,
		"/api/v1/agent-gateway//openapi.json":  false,
	} {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if got := Public(r); got != want {
			t.Errorf("Public(GET %s) = %v, want %v", target, got, want)
		}
	}
	if Public(httptest.NewRequest(http.MethodPost, "/api/v1/agent-gateway/openapi.json", nil)) {
		t.Error("a POST is never public")
	}
}

// auth.trustedProxy.adminGroups maps groups to the admin role beside
// adminGroup; a user in none of them (or in no group at all) is not an
// admin, and without any admin group configured nobody is.
func TestProxyAdminGroups(t *testing.T) {
	for _, c := range []struct {
		name       string
		adminGroup string
		groups     []string
		header     string
		admin      bool
	}{
		{"adminGroups member", "", []string{"ops", "files-admins"}, "devs, files-admins", true},
		{"adminGroup still counts beside adminGroups", "admins", []string{"ops"}, "admins", true},
		{"in no admin group", "admins", []string{"ops"}, "devs", false},
		{"no groups header", "admins", []string{"ops"}, "", false},
		{"tab separated", "", []string{"ops"}, "devs\tops", true},
		{"no admin group configured", "", nil, "admins", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := New(config.Auth{TrustedProxy: &config.TrustedProxy{CIDRs: []string{"127.0.0.1/32"},
				UserHeader: "X-Forwarded-User", GroupsHeader: "X-Forwarded-Groups", AdminGroup: c.adminGroup, AdminGroups: c.groups}}, nil)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "127.0.0.1:1"
			r.Header.Set("X-Forwarded-User", "carol")
			if c.header != "" {
				r.Header.Set("X-Forwarded-Groups", c.header)
			}
			id, err := a.Authenticate(r)
			if err != nil || id.Method != MethodProxy || id.Operator != "carol" {
				t.Fatalf("identity %+v, %v", id, err)
			}
			if id.Admin() != c.admin {
				t.Errorf("admin = %v, want %v", id.Admin(), c.admin)
			}
			a.StripIdentity(r)
			if r.Header.Get("X-Forwarded-User") != "" || r.Header.Get("X-Forwarded-Groups") != "" {
				t.Error("StripIdentity left the identity headers")
			}
		})
	}
}
