package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/prometheus/client_golang/prometheus"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/metrics"
	"github.com/agentworkspace/files/gateway/internal/portal"
	"github.com/agentworkspace/files/gateway/internal/requestid"
	"github.com/agentworkspace/files/gateway/internal/session"
)

// fakeService records what reached it.
type fakeService struct {
	workspacev1.UnimplementedWorkspaceManagementServiceServer
	operator, requestID string
}

func (f *fakeService) ListAgents(ctx context.Context, _ *workspacev1.ListAgentsRequest) (*workspacev1.ListAgentsResponse, error) {
	id, _ := auth.FromContext(ctx)
	f.operator, f.requestID = id.Operator, requestid.From(ctx)
	return &workspacev1.ListAgentsResponse{Agents: []*workspacev1.Agent{{AgentId: "codex-a"}}}, nil
}

func (f *fakeService) UpdateProjectFile(ctx context.Context, req *workspacev1.UpdateProjectFileRequest) (*workspacev1.Entry, error) {
	return &workspacev1.Entry{Path: req.GetPath()}, nil
}

func newServer(t *testing.T) (*Server, *fakeService) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(config.Auth{
		Tokens: []config.Token{{Operator: "alice", Role: "admin", SHA256: config.HashToken("tok")}},
		TrustedProxy: &config.TrustedProxy{CIDRs: []string{"10.0.0.0/8"}, UserHeader: "X-Forwarded-User",
			GroupsHeader: "X-Forwarded-Groups", AdminGroup: "admins"},
	}, session.New(nil, 0, 0))
	f := &fakeService{}
	s, err := New(Options{Auth: a, Service: f, Metrics: m, Gatherer: reg,
		Portal: portal.NewFS(fstest.MapFS{"index.html": {Data: []byte("<html>portal</html>")}})})
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func serve(s http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func TestLoginCookieSecureBehindTLSProxy(t *testing.T) {
	s, _ := newServer(t)
	for _, c := range []struct {
		remote, proto string
		secure        bool
	}{
		{"127.0.0.1:1", "", false},
		{"127.0.0.1:1", "https", false}, // untrusted peer: header ignored
		{"10.0.0.9:1", "https", true},
	} {
		r := httptest.NewRequest(http.MethodPost, APIPrefix+"/session", strings.NewReader(`{"token":"tok"}`))
		r.RemoteAddr = c.remote
		if c.proto != "" {
			r.Header.Set("X-Forwarded-Proto", c.proto)
		}
		w := serve(s, r)
		if w.Code != 200 {
			t.Fatalf("login: %d %s", w.Code, w.Body)
		}
		ck := w.Result().Cookies()
		if len(ck) != 1 || ck[0].Secure != c.secure || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
			t.Errorf("%+v: cookie %+v", c, ck)
		}
		if w.Header().Get("Cache-Control") != "no-store" {
			t.Error("login response cacheable")
		}
	}
	for _, body := range []string{"", "{", `{"token":""}`, `{"tok":"tok"}`} {
		w := serve(s, httptest.NewRequest(http.MethodPost, APIPrefix+"/session", strings.NewReader(body)))
		if w.Code != 400 {
			t.Errorf("login body %q: %d", body, w.Code)
		}
	}
}

func TestRequestIDAndIdentityReachTheService(t *testing.T) {
	s, f := newServer(t)
	r := httptest.NewRequest(http.MethodGet, APIPrefix+"/agents", nil)
	r.Header.Set("Authorization", "Bearer tok")
	r.Header.Set("X-Operator", "mallory")
	w := serve(s, r)
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	id := w.Header().Get("X-Request-ID")
	if len(id) != 32 || f.requestID != id || f.operator != "alice" {
		t.Errorf("request id %q / %q, operator %q", id, f.requestID, f.operator)
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	// EmitUnpopulated + UseProtoNames.
	ag := body["agents"].([]any)[0].(map[string]any)
	for _, k := range []string{"agent_id", "provider", "project_management_enabled", "is_default"} {
		if _, ok := ag[k]; !ok {
			t.Errorf("field %s missing: %s", k, w.Body)
		}
	}
}

func TestOversizedBodyIs413(t *testing.T) {
	s, _ := newServer(t)
	big := `{"path":"a","content":"` + strings.Repeat("x", MaxAPIBody) + `"}`
	r := httptest.NewRequest(http.MethodPut, APIPrefix+"/agents/codex-a/projects/files", strings.NewReader(big))
	r.Header.Set("Authorization", "Bearer tok")
	w := serve(s, r)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "TOO_LARGE") {
		t.Errorf("%d %.200s", w.Code, w.Body)
	}
}

func TestErrorsCarryHeaders(t *testing.T) {
	s, _ := newServer(t)
	for _, p := range []string{APIPrefix + "/agents", "/api/nothing", "/metrics"} {
		w := serve(s, httptest.NewRequest(http.MethodGet, p, nil))
		if p == "/api/nothing" {
			if w.Code != 404 {
				t.Errorf("%s: %d", p, w.Code)
			}
		} else if w.Code != 401 {
			t.Errorf("%s: %d", p, w.Code)
		}
		if w.Header().Get("X-Request-ID") == "" || w.Header().Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(w.Header().Get("Content-Type"), "json") {
			t.Errorf("%s: headers %v", p, w.Header())
		}
	}
}

func TestDAVFallbackWithoutHandler(t *testing.T) {
	s, _ := newServer(t)
	r := httptest.NewRequest("PROPFIND", "/dav/codex-a/", nil)
	r.Header.Set("Authorization", "Bearer tok")
	if w := serve(s, r); w.Code != http.StatusNotImplemented {
		t.Errorf("PROPFIND without a DAV handler: %d", w.Code)
	}
	w := serve(s, httptest.NewRequest(http.MethodOptions, "/", nil))
	if w.Code != 200 || w.Header().Get("DAV") == "" || !strings.Contains(w.Header().Get("Allow"), "PROPFIND") {
		t.Errorf("OPTIONS /: %d %v", w.Code, w.Header())
	}
}

func TestMutationRoute(t *testing.T) {
	p := APIPrefix + "/agents/codex-a/projects"
	for _, c := range []struct{ method, path, action, project string }{
		{"POST", p, "create_project", ""},
		{"GET", p, "", ""},
		{"DELETE", p + "/demo", "delete_project", "demo"},
		{"DELETE", p + "/demo?confirm_name=demo", "delete_project", "demo"},
		{"DELETE", p + "/files", "delete_project", "files"},
		{"DELETE", p + "/entries?confirm_name=entries", "delete_project", "entries"},
		{"DELETE", p + "/entries?confirm_name=", "delete_project", "entries"},
		{"DELETE", p + "/entries?confirm_name=entries&path=x", "delete_entry", ""},
		{"DELETE", p + "/entries?workspace.scope=GLOBAL&path=x", "delete_entry", ""},
		{"POST", p + "/entries", "create_entry", ""},
		{"POST", p + "/entries:move", "move_entry", ""},
		{"PUT", p + "/files", "update_file", ""},
		{"DELETE", p + "/entries", "delete_entry", ""},
		{"GET", p + "/entries", "", ""},
		{"POST", APIPrefix + "/session", "", ""},
		{"POST", APIPrefix + "/agents/x/other", "", ""},
		{"POST", APIPrefix + "/agents/codex-a/checkpoints", "create_checkpoint", ""},
		{"POST", APIPrefix + "/agents/codex-a/checkpoints/c1:restore", "restore_checkpoint", ""},
		{"DELETE", APIPrefix + "/agents/codex-a/checkpoints/c1", "delete_checkpoint", ""},
		{"GET", APIPrefix + "/agents/codex-a/checkpoints", "", ""},
		{"GET", APIPrefix + "/agents/codex-a/checkpoints/c1", "", ""},
		{"POST", APIPrefix + "/agents/codex-a/checkpoints/c1", "", ""},
		{"POST", APIPrefix + "/agents/codex-a/deleted-projects/demo:restore", "restore_deleted_project", "demo"},
		{"GET", APIPrefix + "/agents/codex-a/deleted-projects", "", ""},
		{"POST", APIPrefix + "/agents/codex-a/deleted-projects", "", ""},
	} {
		path, query, _ := strings.Cut(c.path, "?")
		action, agent, project := mutationRoute(c.method, path, query)
		if action != c.action || project != c.project || (action != "" && agent != "codex-a") {
			t.Errorf("%s %s = %q %q %q", c.method, c.path, action, agent, project)
		}
	}
}

// A file served by the WebDAV view runs sandboxed, without scripts, so an
// HTML file an agent wrote cannot act as the portal's origin.
func TestDAVResponsesAreSandboxed(t *testing.T) {
	s, _ := newServer(t)
	r := httptest.NewRequest(http.MethodGet, "/dav/codex-a/projects/x/evil.html", nil)
	r.Header.Set("Authorization", "Bearer tok")
	w := serve(s, r)
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP on /dav/: %q", csp)
	}
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/", nil)); strings.Contains(w.Header().Get("Content-Security-Policy"), "sandbox") {
		t.Error("portal sandboxed")
	}
}

type recordSignOut struct {
	values []string
	err    error
}

func (r *recordSignOut) SignOut(_ context.Context, v string) error {
	r.values = append(r.values, v)
	return r.err
}

// Issues 14 and 26: sign-out goes through the shared list (every replica)
// when the gateway has one, /readyz waits for its first listing, and a
// sign-out the list could not record fails clearly and keeps the cookie.
func TestSignOutHookAndReadiness(t *testing.T) {
	store := session.New(nil, 0, 0)
	a := auth.New(config.Auth{Tokens: []config.Token{{Operator: "alice", Role: "admin", SHA256: config.HashToken("tok")}}}, store)
	rec := &recordSignOut{}
	ready := false
	s, err := New(Options{Auth: a, Service: &fakeService{}, Gatherer: prometheus.NewRegistry(),
		Portal: portal.NewFS(fstest.MapFS{}), SignOut: rec, Ready: func() bool { return ready }})
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/readyz", nil)); w.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before sync: %d", w.Code)
	}
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/healthz", nil)); w.Code != http.StatusOK {
		t.Errorf("/healthz before sync: %d (liveness must not wait)", w.Code)
	}
	ready = true
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/readyz", nil)); w.Code != http.StatusOK {
		t.Errorf("/readyz after sync: %d", w.Code)
	}

	sess, _ := store.Create("alice", "admin")
	r := httptest.NewRequest(http.MethodDelete, APIPrefix+"/session", nil)
	r.AddCookie(&http.Cookie{Name: session.CookieName, Value: sess.ID})
	r.Header.Set(auth.CSRFHeader, sess.CSRFToken)
	if w := serve(s, r); w.Code != http.StatusNoContent {
		t.Fatalf("sign-out: %d %s", w.Code, w.Body)
	}
	if len(rec.values) != 1 || rec.values[0] != sess.ID {
		t.Errorf("SignOut hook got %d values", len(rec.values))
	}

	rec.err = errors.New("the API server is down")
	live, _ := store.Create("alice", "admin")
	r = httptest.NewRequest(http.MethodDelete, APIPrefix+"/session", nil)
	r.AddCookie(&http.Cookie{Name: session.CookieName, Value: live.ID})
	r.Header.Set(auth.CSRFHeader, live.CSRFToken)
	w := serve(s, r)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "the session is still valid") {
		t.Errorf("failed sign-out: %d %s, want 503 saying the session is still valid", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "API server is down") {
		t.Errorf("the failure's detail reached the client: %s", w.Body)
	}
	if ck := w.Result().Cookies(); len(ck) != 0 {
		t.Errorf("a failed sign-out cleared the cookie: %v", ck)
	}
	if _, ok := store.Get(live.ID); !ok {
		t.Error("a failed sign-out ended the session here")
	}
}
