package davproxy

import (
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// waitMutations waits until n audit calls have arrived (the hook runs after
// the response is written, so the client may see the answer first).
func (e *env) waitMutations(t *testing.T, n int) []Mutation {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.mu.Lock()
		got := len(e.mutations)
		e.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			m := e.takeMutations()
			if len(m) != n {
				t.Fatalf("got %d OnMutation calls, want %d: %+v", len(m), n, m)
			}
			return m
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type multistatus struct {
	Responses []struct {
		Href     string `xml:"href"`
		Propstat []struct {
			Prop struct {
				ResourceType struct {
					Collection *struct{} `xml:"collection"`
				} `xml:"resourcetype"`
				ETag        string `xml:"getetag"`
				DisplayName string `xml:"displayname"`
			} `xml:"prop"`
			Status string `xml:"status"`
		} `xml:"propstat"`
	} `xml:"response"`
}

func parseMultistatus(t *testing.T, body string) multistatus {
	t.Helper()
	var ms multistatus
	if err := xml.Unmarshal([]byte(body), &ms); err != nil {
		t.Fatalf("multistatus: %v\n%s", err, body)
	}
	return ms
}

func (ms multistatus) hrefs() []string {
	var out []string
	for _, r := range ms.Responses {
		out = append(out, r.Href)
	}
	slices.Sort(out)
	return out
}

func (ms multistatus) etag(href string) string {
	for _, r := range ms.Responses {
		if r.Href == href {
			for _, p := range r.Propstat {
				if p.Prop.ETag != "" {
					return p.Prop.ETag
				}
			}
		}
	}
	return ""
}

func TestReadOnlyAllowsOnlyReads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, false, be)
		for _, c := range []struct{ method, path string }{
			{"OPTIONS", "/dav/a/projects/demo/"},
			{"GET", "/dav/a/projects/demo/README.md"},
			{"HEAD", "/dav/a/projects/demo/README.md"},
			{"PROPFIND", "/dav/a/projects/demo/"},
		} {
			r := e.do(t, c.method, c.path, nil, "Depth", "1")
			if r.status >= 400 {
				t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
			}
		}
		r := e.do(t, "GET", "/dav/a/projects/demo/README.md", nil)
		if r.body != "# demo\n" || r.header.Get("ETag") == "" || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET body %q, ETag %q, Cache-Control %q", r.body, r.header.Get("ETag"), r.header.Get("Cache-Control"))
		}
		if r := e.do(t, "PROPFIND", "/dav/a/projects/demo/", nil, "Depth", "1"); r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("PROPFIND Cache-Control %q", r.header.Get("Cache-Control"))
		}
		// Ranges and conditional GETs pass through (rclone resumes with ranges).
		if rr := e.do(t, "GET", "/dav/a/projects/demo/README.md", nil, "Range", "bytes=2-5"); rr.status != http.StatusPartialContent || rr.body != "demo" {
			t.Errorf("range GET: %d %q", rr.status, rr.body)
		}
		if rr := e.do(t, "GET", "/dav/a/projects/demo/README.md", nil, "If-None-Match", r.header.Get("ETag")); rr.status != http.StatusNotModified {
			t.Errorf("conditional GET: %d", rr.status)
		}
		// The sidecar's Allow lists its write methods; read-only hides them.
		if r := e.do(t, "OPTIONS", "/dav/a/projects/demo/README.md", nil); strings.Contains(r.header.Get("Allow"), "PUT") {
			t.Errorf("read-only OPTIONS Allow = %q", r.header.Get("Allow"))
		}
		writes := []string{"PUT", "DELETE", "MKCOL", "COPY", "MOVE", "PROPPATCH", "LOCK", "UNLOCK", "POST", "PATCH"}
		for _, m := range writes {
			for _, p := range []string{"/dav/a/projects/demo/README.md", "/dav/a/projects/demo/new", "/dav/a/global/AGENTS.md", "/dav/a/", "/dav/"} {
				r := e.do(t, m, p, strings.NewReader("x"),
					"If-Match", "*", "Destination", "/dav/a/projects/demo/moved")
				if r.status != http.StatusMethodNotAllowed {
					t.Errorf("%s %s: status %d, want 405", m, p, r.status)
				}
				if got := r.header.Get("Allow"); got != "OPTIONS, GET, HEAD, PROPFIND" {
					t.Errorf("%s %s: Allow %q", m, p, got)
				}
			}
		}
		if b, _ := os.ReadFile(e.a.path("projects/demo/README.md")); string(b) != "# demo\n" {
			t.Errorf("README changed: %q", b)
		}
		if _, err := os.Stat(e.a.path("projects/demo/new")); err == nil {
			t.Error("a write went through")
		}
		if e.a.fake != nil {
			for _, h := range e.a.fake.Seen() {
				if h.Get("X-Workspace-Read-Only") != "true" {
					t.Errorf("a request reached the sidecar without X-Workspace-Read-Only: true: %v", h)
				}
			}
		}
		muts := e.waitMutations(t, 8*5) // PUT..UNLOCK are audited, POST/PATCH are not
		for _, m := range muts {
			if m.Status != http.StatusMethodNotAllowed || m.Reason != "READ_ONLY" || m.Code != codes.PermissionDenied || m.Operator != "alice" {
				t.Errorf("mutation %+v", m)
			}
		}
	})
}

// The sidecar is the authority for preconditions (it answers 428 and 412
// itself); the proxy passes its statuses through and audits its reasons.
func TestWritablePreconditions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, true, be)
		etagOf := func(p string) string {
			t.Helper()
			r := e.do(t, "PROPFIND", p, nil, "Depth", "0")
			return parseMultistatus(t, r.body).etag(p)
		}
		readme := "/dav/a/projects/demo/README.md"
		steps := []struct {
			name   string
			method string
			path   string
			hdr    []string
			want   int
		}{
			{"create with If-Match", "PUT", "/dav/a/projects/demo/new.txt", []string{"If-Match", `"abc"`}, 412},
			{"create", "PUT", "/dav/a/projects/demo/new.txt", []string{"If-None-Match", "*"}, 201},
			{"create without a precondition", "PUT", "/dav/a/projects/demo/new2.txt", nil, 201},
			{"overwrite without If-Match", "PUT", readme, nil, 428},
			{"overwrite with If-None-Match", "PUT", readme, []string{"If-None-Match", "*"}, 412},
			{"overwrite stale If-Match", "PUT", readme, []string{"If-Match", `"stale"`}, 412},
			{"overwrite current If-Match", "PUT", readme, []string{"If-Match", "{etag}"}, 204},
			{"delete without If-Match", "DELETE", "/dav/a/projects/demo/new.txt", nil, 428},
			{"delete stale", "DELETE", "/dav/a/projects/demo/new.txt", []string{"If-Match", `"stale"`}, 412},
			{"delete missing", "DELETE", "/dav/a/projects/demo/missing.txt", nil, 404},
			{"move without If-Match", "MOVE", "/dav/a/projects/demo/new.txt", []string{"Destination", "/dav/a/projects/demo/src/new.txt"}, 428},
			{"move", "MOVE", "/dav/a/projects/demo/new.txt", []string{"Destination", "http://{host}/dav/a/projects/demo/src/new.txt", "If-Match", "{etag}"}, 201},
			{"mkcol", "MKCOL", "/dav/a/projects/demo/dir", nil, 201},
			{"copy", "COPY", "/dav/a/projects/demo/src/main.go", []string{"Destination", "/dav/a/projects/demo/dir/main.go"}, 201},
			{"delete", "DELETE", "/dav/a/projects/demo/src/new.txt", []string{"If-Match", "{etag}"}, 204},
			{"global skill", "PUT", "/dav/a/global/skills/tool/extra.md", []string{"If-None-Match", "*"}, 201},
		}
		for _, s := range steps {
			hdr := slices.Clone(s.hdr)
			for i := range hdr {
				if hdr[i] == "{etag}" {
					hdr[i] = etagOf(s.path)
					if hdr[i] == "" {
						t.Fatalf("%s: no ETag for %s", s.name, s.path)
					}
				}
			}
			var body io.Reader
			if s.method == "PUT" {
				body = strings.NewReader("body of " + s.name)
			}
			r := e.do(t, s.method, s.path, body, hdr...)
			if r.status != s.want && !(s.want == 204 && r.status == 201) { // overwrite: 204 (sidecar) or 201 (x/net/webdav)
				t.Errorf("%s: %s %s = %d, want %d (%s)", s.name, s.method, s.path, r.status, s.want, strings.TrimSpace(r.body))
			}
		}
		if b, _ := os.ReadFile(e.a.path("projects/demo/README.md")); string(b) != "body of overwrite current If-Match" {
			t.Errorf("README = %q", b)
		}
		if b, _ := os.ReadFile(e.a.path("projects/demo/dir/main.go")); string(b) != "package main\n" {
			t.Errorf("copy = %q", b)
		}
		muts := e.waitMutations(t, len(steps))
		want := map[string]Mutation{
			"move":                       {Action: "webdav.MOVE", Scope: "PROJECT", Project: "demo", SourcePath: "new.txt", DestinationPath: "src/new.txt", Status: 201, Code: codes.OK},
			"global skill":               {Action: "webdav.PUT", Scope: "GLOBAL", SourcePath: "skills/tool/extra.md", Status: 201, Code: codes.OK},
			"overwrite without If-Match": {Action: "webdav.PUT", Scope: "PROJECT", Project: "demo", SourcePath: "README.md", Status: 428, Reason: "PRECONDITION_REQUIRED", Code: codes.FailedPrecondition},
			"overwrite stale If-Match":   {Action: "webdav.PUT", Scope: "PROJECT", Project: "demo", SourcePath: "README.md", Status: 412, Reason: "REVISION_MISMATCH", Code: codes.Aborted},
		}
		for i, s := range steps {
			w, ok := want[s.name]
			if !ok {
				continue
			}
			m := muts[i]
			w.AgentID, w.Operator, w.RequestID = "a", "alice", "rid-"+s.method
			m.Duration = 0
			if m != w {
				t.Errorf("%s: mutation\n got %+v\nwant %+v", s.name, m, w)
			}
		}
	})
}

// Hrefs come from the sidecar already under /dav/{agent}/ (it serves with
// the X-Forwarded-Prefix the proxy sets); the proxy rewrites nothing.
func TestHrefsUnderThePrefix(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, true, be)
		r := e.do(t, "PROPFIND", "/dav/a/projects/demo/", nil, "Depth", "1")
		if r.status != http.StatusMultiStatus {
			t.Fatalf("PROPFIND: %d %s", r.status, r.body)
		}
		got := parseMultistatus(t, r.body).hrefs()
		want := []string{"/dav/a/projects/demo/", "/dav/a/projects/demo/README.md", "/dav/a/projects/demo/a%20b&c.txt", "/dav/a/projects/demo/src/"}
		if !slices.Equal(got, want) {
			t.Errorf("hrefs = %q, want %q", got, want)
		}
		r = e.do(t, "PROPFIND", "/dav/b/global/", nil, "Depth", "1")
		got = parseMultistatus(t, r.body).hrefs()
		want = []string{"/dav/b/global/", "/dav/b/global/AGENTS.md", "/dav/b/global/skills/"}
		if !slices.Equal(got, want) {
			t.Errorf("global hrefs = %q, want %q", got, want)
		}
		r = e.do(t, "PUT", "/dav/a/projects/demo/x%20y.txt", strings.NewReader("x"), "If-None-Match", "*")
		if r.status != http.StatusCreated {
			t.Errorf("PUT: %d %s", r.status, r.body)
		}
		if r.header.Get("Server") != "" || r.header.Get("X-Upstream-Debug") != "" || r.header.Get("X-Workspace-Debug") != "" || r.header.Get("X-Workspace-Error-Reason") != "" {
			t.Errorf("upstream headers leaked: %v", r.header)
		}
		if got := r.header.Values("X-Request-Id"); !slices.Equal(got, []string{"rid-PUT"}) {
			t.Errorf("X-Request-ID = %q", got)
		}
		if r := e.do(t, "PUT", "/dav/a/projects/demo/x%20y.txt", strings.NewReader("x")); r.status != 428 || r.header.Get("X-Workspace-Error-Reason") != "" {
			t.Errorf("PUT without precondition: %d, reason header %q", r.status, r.header.Get("X-Workspace-Error-Reason"))
		}
		// LOCK, then the If header names the gateway URL and the token: it
		// reaches the sidecar unchanged, which matches it against its
		// prefix and the (kept) Host.
		r = e.do(t, "LOCK", "/dav/a/projects/demo/README.md", strings.NewReader(
			`<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>me</D:owner></D:lockinfo>`),
			"Timeout", "Second-60")
		token := r.header.Get("Lock-Token")
		if r.status != http.StatusOK || token == "" {
			t.Fatalf("LOCK: %d %s", r.status, r.body)
		}
		etag := parseMultistatus(t, e.do(t, "PROPFIND", "/dav/a/projects/demo/README.md", nil, "Depth", "0").body).etag("/dav/a/projects/demo/README.md")
		r = e.do(t, "PUT", "/dav/a/projects/demo/README.md", strings.NewReader("locked write"), "If-Match", etag)
		if r.status != http.StatusLocked {
			t.Errorf("PUT on a locked file without token: %d", r.status)
		}
		r = e.do(t, "PUT", "/dav/a/projects/demo/README.md", strings.NewReader("locked write"), "If-Match", etag,
			"If", "<http://{host}/dav/a/projects/demo/README.md> ("+token+")")
		if r.status != http.StatusNoContent && r.status != http.StatusCreated {
			t.Errorf("PUT with lock token: %d %s", r.status, r.body)
		}
		if r = e.do(t, "UNLOCK", "/dav/a/projects/demo/README.md", nil, "Lock-Token", token); r.status != http.StatusNoContent {
			t.Errorf("UNLOCK: %d", r.status)
		}
		muts := e.takeMutations()
		for _, m := range muts {
			if m.Action == "webdav.PUT" && m.Status == http.StatusLocked && (m.Reason != "LOCKED" || m.Code != codes.Aborted) {
				t.Errorf("423 audited as %s %s", m.Code, m.Reason)
			}
		}
	})
}

func TestHeadersTowardsSidecar(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, false, be)
		// X-Forwarded-Prefix would change where the sidecar puts a COPY/MOVE
		// destination (and so make the audit record lie); the CSRF token is
		// the browser session's. Neither may reach the sidecar.
		e.do(t, "GET", "/dav/a/projects/demo/README.md", nil,
			"X-Operator", "mallory", "Authorization", "Bearer secret", "Cookie", "session=secret", "X-Request-ID", "client-rid",
			"X-Forwarded-Prefix", "/dav/b", "X-CSRF-Token", "csrf-secret", "Forwarded", "for=10.0.0.1", "X-Forwarded-Host", "evil.example",
			"X-Workspace-Read-Only", "false", "X-Workspace-Other", "x")
		if e.a.real != nil {
			// The real sidecar logs the operator and request ID it received.
			found := false
			for deadline := time.Now().Add(5 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				for _, l := range e.a.real.LogLines() {
					if l["@message"] == "webdav request" && l["method"] == "GET" {
						found = true
						if l["operator"] != "alice" || l["request_id"] != "rid-GET" {
							t.Errorf("sidecar saw operator %v, request_id %v", l["operator"], l["request_id"])
						}
					}
				}
			}
			if !found {
				t.Errorf("no webdav request log line in the sidecar's logs")
			}
			return
		}
		h := e.a.fake.lastHeaders()
		if h.Get("X-Operator") != "alice" || h.Get("X-Request-ID") != "rid-GET" {
			t.Errorf("X-Operator %q, X-Request-ID %q", h.Get("X-Operator"), h.Get("X-Request-ID"))
		}
		for _, k := range []string{"Authorization", "Cookie", "X-Forwarded-For", "Forwarded", "X-Forwarded-Host", "X-Csrf-Token", "X-Workspace-Other"} {
			if v := h.Get(k); v != "" {
				t.Errorf("%s reached the sidecar: %q", k, v)
			}
		}
		if got := h.Values("X-Forwarded-Prefix"); !slices.Equal(got, []string{"/dav/a"}) {
			t.Errorf("X-Forwarded-Prefix = %q, want the gateway's /dav/a only", got)
		}
		if got := h.Values("X-Workspace-Read-Only"); !slices.Equal(got, []string{"true"}) {
			t.Errorf("X-Workspace-Read-Only = %q", got)
		}
		if got, want := h.Get(testHostHeader), strings.TrimPrefix(e.srv.URL, "http://"); got != want {
			t.Errorf("the sidecar saw Host %q, want the client's %q", got, want)
		}
	})
}

func TestDestinationChecks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, true, be)
		src := "/dav/a/projects/demo/README.md"
		cases := []struct {
			name, dest string
			want       int
		}{
			{"other agent", "/dav/b/projects/demo/README2.md", 403},
			{"other agent absolute", "http://{host}/dav/b/projects/demo/README2.md", 403},
			{"project to global", "/dav/a/global/skills/README.md", 403},
			{"other project", "/dav/a/projects/other/README.md", 403},
			{"projects level", "/dav/a/projects/README.md", 403},
			{"outside dav", "/api/v1/README.md", 403},
			{"agent root", "/dav/a/README.md", 403},
			{"other host", "http://elsewhere.example:8080/dav/a/projects/demo/README2.md", 502},
			{"dot segments", "/dav/a/projects/demo/../other/README.md", 400},
			{"encoded dot segments", "/dav/a/projects/demo/%2e%2e/other/README.md", 400},
			{"missing", "", 400},
		}
		for _, c := range cases {
			for _, m := range []string{"COPY", "MOVE"} {
				r := e.do(t, m, src, nil, "Destination", c.dest, "If-Match", "*")
				if r.status != c.want {
					t.Errorf("%s %s (%s): %d, want %d", m, c.name, c.dest, r.status, c.want)
				}
			}
		}
		for _, p := range []string{"projects/demo/README2.md", "projects/other/README.md", "global/skills/README.md"} {
			if _, err := os.Stat(e.a.path(p)); err == nil {
				t.Errorf("%s was created on a", p)
			}
			if _, err := os.Stat(e.b.path(p)); err == nil {
				t.Errorf("%s was created on b", p)
			}
		}
		// Global stays global: skills -> AGENTS.md level is one workspace.
		r := e.do(t, "COPY", "/dav/a/global/skills/tool/SKILL.md", nil, "Destination", "/dav/a/global/skills/copy.md")
		if r.status != http.StatusCreated {
			t.Errorf("COPY inside global: %d %s", r.status, r.body)
		}
	})
}

func TestVirtualCollections(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, false, be)
		for _, p := range []string{"/", "/dav", "/dav/", "/dav/a/", "/dav/a"} {
			r := e.do(t, "OPTIONS", p, nil)
			if r.status != 200 || r.header.Get("DAV") != "1" || r.header.Get("Allow") != "OPTIONS, GET, HEAD, PROPFIND" {
				t.Errorf("OPTIONS %s: %d DAV %q Allow %q", p, r.status, r.header.Get("DAV"), r.header.Get("Allow"))
			}
		}
		r := e.do(t, "PROPFIND", "/dav/", nil, "Depth", "1")
		if got, want := parseMultistatus(t, r.body).hrefs(), []string{"/dav/", "/dav/a/", "/dav/b/", "/dav/down/"}; r.status != 207 || !slices.Equal(got, want) {
			t.Errorf("PROPFIND /dav/: %d %q, want %q", r.status, got, want)
		}
		if cc := r.header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("PROPFIND /dav/: Cache-Control %q", cc)
		}
		for _, m := range []string{"PROPPATCH", "LOCK", "PUT", "MKCOL"} {
			for _, p := range []string{"/dav/", "/dav/a/"} {
				if r := e.do(t, m, p, strings.NewReader("x")); r.status != http.StatusMethodNotAllowed {
					t.Errorf("%s %s on a virtual level: %d", m, p, r.status)
				}
			}
		}
		r = e.do(t, "PROPFIND", "/dav/a/", nil, "Depth", "1")
		ms := parseMultistatus(t, r.body)
		if got, want := ms.hrefs(), []string{"/dav/a/", "/dav/a/global/", "/dav/a/projects/"}; r.status != 207 || !slices.Equal(got, want) {
			t.Errorf("PROPFIND /dav/a/: %d %q, want %q", r.status, got, want)
		}
		for _, resp := range ms.Responses {
			if resp.Propstat[0].Prop.ResourceType.Collection == nil {
				t.Errorf("%s is not a collection", resp.Href)
			}
		}
		r = e.do(t, "PROPFIND", "/dav/a/", nil, "Depth", "0")
		if got := parseMultistatus(t, r.body).hrefs(); !slices.Equal(got, []string{"/dav/a/"}) {
			t.Errorf("Depth 0: %q", got)
		}
		r = e.do(t, "PROPFIND", "/dav/a/projects/", nil, "Depth", "1")
		if got := parseMultistatus(t, r.body).hrefs(); !slices.Equal(got, []string{"/dav/a/projects/", "/dav/a/projects/demo/", "/dav/a/projects/other/"}) {
			t.Errorf("projects: %q", got)
		}
		if r = e.do(t, "GET", "/dav/a/", nil); r.status != 200 || !strings.Contains(r.body, `href="/dav/a/projects/"`) {
			t.Errorf("GET /dav/a/: %d %s", r.status, r.body)
		}
	})
}

func TestUnknownAgentsAndUnavailableSidecar(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, true, be)
		cases := []struct {
			path, method string
			want         int
			msg          string
		}{
			{"/dav/zzz/projects/", "PROPFIND", 404, `unknown agent "zzz"`},
			{"/dav/zzz/", "PROPFIND", 404, `unknown agent "zzz"`},
			{"/dav/nodav/projects/", "PROPFIND", 404, "no WebDAV view"},
			{"/dav/down/projects/", "PROPFIND", 503, `agent "down" is unavailable`},
			{"/dav/down/projects/demo/x", "PUT", 503, `agent "down" is unavailable`},
			{"/dav/down/projects/demo/x", "GET", 503, `agent "down" is unavailable`},
			{"/dav/a/other/", "PROPFIND", 404, "not found"},
			{"/dav/a/projects/demo/../../global/AGENTS.md", "GET", 400, "dot segment"},
			{"/dav/a/projects/demo/%2e%2e/other/", "GET", 400, "dot segment"},
			{"/dav/a/projects/demo/./README.md", "GET", 400, "dot segment"},
			{"/dav/a/projects//demo/README.md", "GET", 400, "empty segment"},
			{"/dav/a/projects/demo%2Fsrc/main.go", "GET", 400, "encoded separator"},
			{"/dav/a/projects/demo%5csrc/main.go", "GET", 400, "encoded separator"},
			{"/dav/a/projects/demo/%ff.txt", "GET", 400, "UTF-8"},
			{"/dav/a/projects/demo/%ff.txt", "PUT", 400, "UTF-8"},
			{"/dav/a/projects/demo/a%01b", "GET", 400, "control character"},
			{"/dav/a/leak", "GET", 404, ""},
			{"/nothing", "GET", 404, "not found"},
		}
		for _, c := range cases {
			r := e.do(t, c.method, c.path, nil, "Depth", "0", "If-None-Match", "*")
			if r.status != c.want || !strings.Contains(r.body, c.msg) {
				t.Errorf("%s %s: %d %q, want %d %q", c.method, c.path, r.status, r.body, c.want, c.msg)
			}
		}
		// Nothing unsafe reached a sidecar.
		if e.a.fake != nil {
			for _, h := range e.a.fake.Seen() {
				t.Errorf("a refused request reached the sidecar: %v", h)
			}
		}
		// Agent a keeps working while "down" is down.
		if r := e.do(t, "GET", "/dav/a/projects/demo/README.md", nil); r.status != 200 {
			t.Errorf("agent a: %d", r.status)
		}
	})
}

// File content is never rewritten: a user's XML file full of DAV:href
// elements and even the sidecar's address comes back byte for byte.
func TestGetContentIsNotRewritten(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, false, be)
		content := `<?xml version="1.0"?><D:multistatus xmlns:D="DAV:"><D:href>/projects/demo/x</D:href><D:href>http://` + e.a.base.Host + `/global/</D:href></D:multistatus>`
		e.a.writeFile(t, "projects/demo/data.xml", []byte(content))
		req, _ := http.NewRequest("GET", e.srv.URL+"/dav/a/projects/demo/data.xml", nil)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, resp.Body)
		if resp.StatusCode != 200 || got != content {
			t.Errorf("GET data.xml: %d\n got %s\nwant %s", resp.StatusCode, got, content)
		}
		// An agent-written HTML file must not run in the gateway's origin.
		e.a.writeFile(t, "projects/demo/page.html", []byte("<script>fetch('/api/v1/agent-gateway/agents')</script>"))
		r := e.do(t, "GET", "/dav/a/projects/demo/page.html", nil)
		if csp := r.header.Get("Content-Security-Policy"); r.status != 200 || !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") ||
			r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("page.html: %d CSP %q nosniff %q", r.status, csp, r.header.Get("X-Content-Type-Options"))
		}
	})
}
