package davproxy_test

// WebDAV through the real agent-gateway binary (gateway/gatewaytest) in
// front of real agent-sidecar processes (sidecar/sidecartest): auth in front
// of /dav/, rclone with Basic credentials, the audit trail of WebDAV
// mutations, and a stopped sidecar.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/gateway/internal/davproxy"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// Backends: the real agent-sidecar binary, or davproxy.ContractSidecar
// (x/net/webdav implementing the wire contract, in this process). Both sit
// behind the real agent-gateway binary.
const (
	realBackend     = "sidecar"
	contractBackend = "contract"
)

func forBackends(t *testing.T, f func(t *testing.T, be string)) {
	for _, be := range []string{realBackend, contractBackend} {
		t.Run(be, func(t *testing.T) { f(t, be) })
	}
}

type stack struct {
	gw     *gatewaytest.Gateway
	agents map[string]*stackAgent
}

// stackAgent is one agent's sidecar, of either backend.
type stackAgent struct {
	real        *sidecartest.Sidecar
	fake        *davproxy.ContractSidecar
	ProjectsDir string
	davAddr     string
	rpcAddr     string
}

// Stop stops the agent's WebDAV server.
func (a *stackAgent) Stop() error {
	if a.fake != nil {
		a.fake.Close()
		return nil
	}
	return a.real.Stop()
}

// operatorSeen reports the X-Operator the sidecar got with requestID.
func (a *stackAgent) operatorSeen(t *testing.T, requestID string) (string, bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if a.fake != nil {
			for _, h := range a.fake.Seen() {
				if h.Get("X-Request-Id") == requestID {
					return h.Get("X-Operator"), true
				}
			}
			continue
		}
		for _, l := range a.real.LogLines() {
			if l["@message"] == "webdav request" && l["request_id"] == requestID {
				return fmt.Sprint(l["operator"]), true
			}
		}
	}
	return "", false
}

type stackOptions struct {
	writable bool
	backend  string
	timeout  time.Duration // sidecar.timeout; 0: gatewaytest's default
	maxBody  int64         // upload limit; 0: the sidecar's default
}

// startStack starts one sidecar per agent ID (each with project demo) and a
// gateway in front of them.
func startStack(t *testing.T, o stackOptions, agentIDs ...string) *stack {
	t.Helper()
	st := &stack{agents: map[string]*stackAgent{}}
	var agents []gatewaytest.Agent
	for _, id := range agentIDs {
		a := &stackAgent{}
		if o.backend == contractBackend {
			f := davproxy.NewContractSidecarTLS(t, id)
			if o.maxBody > 0 {
				f.MaxBody = o.maxBody
			}
			a.fake, a.ProjectsDir, a.davAddr, a.rpcAddr = f, filepath.Join(f.Root, "projects"), f.Addr(), davproxy.RefusingAddr(t)
			if err := os.WriteFile(filepath.Join(a.ProjectsDir, "demo/README.md"), []byte("# demo of "+id+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"demo/a b&c.txt", "other"} {
				if err := os.RemoveAll(filepath.Join(a.ProjectsDir, p)); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			base := proctest.TempDir(t, "davproxy-gw-")
			projects, home := filepath.Join(base, "projects"), filepath.Join(base, "home")
			for _, d := range []string{filepath.Join(projects, "demo/src"), filepath.Join(home, "skills")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for p, c := range map[string]string{
				filepath.Join(projects, "demo/README.md"):   "# demo of " + id + "\n",
				filepath.Join(projects, "demo/src/main.go"): "package main\n",
				filepath.Join(home, "AGENTS.md"):            "agents\n",
				filepath.Join(home, "auth.json"):            `{"token":"never-shown"}`,
			} {
				if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			so := sidecartest.Options{ProjectsDir: projects, CodexHome: home, AgentID: id}
			if o.maxBody > 0 {
				so.Configure = func(c *sidecar.Config) { c.Services.Project.MaxUploadSize = o.maxBody }
			}
			s := sidecartest.Start(t, so)
			u, _ := url.Parse(s.DavURL)
			a.real, a.ProjectsDir, a.davAddr, a.rpcAddr = s, s.ProjectsDir, u.Host, s.RPCAddr
		}
		st.agents[id] = a
		agents = append(agents, gatewaytest.Agent{ID: id, RPCAddr: a.rpcAddr, DavURL: "https://" + a.davAddr, Timeout: o.timeout})
	}
	// These stacks test the preconditions themselves: refuse, not the
	// writable view's default keep (keep has its own tests in gateway/).
	refuse := func(c *gateway.Config) { c.WebDAV.UnconditionalWrites = "refuse" }
	st.gw = gatewaytest.Start(t, gatewaytest.Options{Agents: agents, Writable: o.writable, Configure: refuse})
	return st
}

// secrets are strings no response may contain.
func (st *stack) secrets() []string {
	out := []string{st.gw.AdminToken, st.gw.UserToken, "never-shown"}
	for _, a := range st.agents {
		out = append(out, a.davAddr, a.rpcAddr, a.ProjectsDir)
		if a.real != nil {
			out = append(out, a.real.CodexHome)
		}
	}
	return out
}

// assertLogsClean fails when the gateway's log names a sidecar address
// (or just its port) or a host directory.
func (st *stack) assertLogsClean(t *testing.T) {
	t.Helper()
	logs := st.gw.Logs()
	for _, a := range st.agents {
		_, port, _ := net.SplitHostPort(a.davAddr)
		for _, s := range []string{a.davAddr, ":" + port, a.ProjectsDir} {
			if strings.Contains(logs, s) {
				t.Errorf("the gateway log names %q:\n%s", s, logs)
			}
		}
	}
}

type reply struct {
	status int
	header http.Header
	body   string
}

// do sends a request with the given auth ("" none, "bearer", "basic",
// "basic-user", "bad") and checks the reply for leaks.
func (st *stack) do(t *testing.T, authn, method, path string, body io.Reader, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, st.gw.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	switch authn {
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+st.gw.AdminToken)
	case "basic":
		req.SetBasicAuth("whoever", st.gw.AdminToken)
	case "basic-user":
		req.SetBasicAuth("whoever", st.gw.UserToken)
	case "bad":
		req.SetBasicAuth("whoever", "not-a-token")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	var all strings.Builder
	for k, vs := range r.header {
		fmt.Fprintf(&all, "%s: %s\n", k, strings.Join(vs, ", "))
	}
	all.WriteString(r.body)
	for _, s := range st.secrets() {
		if s != "" && strings.Contains(all.String(), s) {
			t.Errorf("%s %s: reply contains %q:\n%s", method, path, s, all.String())
		}
	}
	return r
}

func TestGatewayWebDAVAuthAndReads(t *testing.T) {
	forBackends(t, func(t *testing.T, be string) {
		st := startStack(t, stackOptions{backend: be}, "codex-a", "codex-b")
		for _, c := range []struct {
			authn string
			want  int
		}{{"", 401}, {"bad", 401}, {"basic-user", 403}, {"basic", 207}, {"bearer", 207}} {
			for _, p := range []string{"/dav/", "/dav/codex-a/", "/dav/codex-a/projects/demo/"} {
				r := st.do(t, c.authn, "PROPFIND", p, nil, "Depth", "1")
				if r.status != c.want {
					t.Errorf("PROPFIND %s as %q: %d, want %d", p, c.authn, r.status, c.want)
				}
				if c.want == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
					t.Errorf("PROPFIND %s as %q: WWW-Authenticate %q", p, c.authn, r.header.Get("WWW-Authenticate"))
				}
			}
		}
		r := st.do(t, "basic", "PROPFIND", "/dav/", nil, "Depth", "1")
		for _, want := range []string{"<D:href>/dav/codex-a/</D:href>", "<D:href>/dav/codex-b/</D:href>"} {
			if !strings.Contains(r.body, want) {
				t.Errorf("PROPFIND /dav/ lacks %s:\n%s", want, r.body)
			}
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("PROPFIND /dav/: Cache-Control %q", r.header.Get("Cache-Control"))
		}
		r = st.do(t, "basic", "PROPFIND", "/dav/codex-b/projects/demo/", nil, "Depth", "1")
		if !strings.Contains(r.body, "/dav/codex-b/projects/demo/README.md") || strings.Contains(r.body, "<D:href>/projects/") {
			t.Errorf("hrefs not under the prefix:\n%s", r.body)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("PROPFIND listing: Cache-Control %q", r.header.Get("Cache-Control"))
		}
		r = st.do(t, "basic", "GET", "/dav/codex-b/projects/demo/README.md", nil, "X-Operator", "mallory", "X-Request-ID", "rid-forged-op")
		if r.status != 200 || r.body != "# demo of codex-b\n" || r.header.Get("ETag") == "" || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET: %d %q ETag %q Cache-Control %q", r.status, r.body, r.header.Get("ETag"), r.header.Get("Cache-Control"))
		}
		if got := r.header.Values("X-Request-Id"); !slices.Equal(got, []string{"rid-forged-op"}) {
			t.Errorf("X-Request-ID = %q", got)
		}
		// The sidecar saw the authenticated operator, not the forged header.
		if op, ok := st.agents["codex-b"].operatorSeen(t, "rid-forged-op"); !ok || op != gatewaytest.AdminOperator {
			t.Errorf("sidecar saw operator %q (request seen: %v)", op, ok)
		}
		for _, p := range []string{"/", "/dav/", "/dav/codex-a/"} {
			r = st.do(t, "basic", "OPTIONS", p, nil)
			if r.status != 200 || !strings.Contains(r.header.Get("DAV"), "1") || r.header.Get("Allow") == "" {
				t.Errorf("OPTIONS %s: %d DAV %q Allow %q", p, r.status, r.header.Get("DAV"), r.header.Get("Allow"))
			}
		}
		if r = st.do(t, "basic", "GET", "/dav/codex-a/global/auth.json", nil); r.status != 404 && r.status != 403 {
			t.Errorf("global/auth.json: %d", r.status)
		}
		if r = st.do(t, "basic", "PROPFIND", "/dav/nobody/projects/", nil, "Depth", "0"); r.status != 404 {
			t.Errorf("unknown agent: %d", r.status)
		}
		for _, p := range []string{"/dav/codex-a/projects/demo/%2e%2e/x", "/dav/codex-a/projects/demo%2Fsrc/main.go", "/dav/codex-a/projects//demo/README.md", "/dav/codex-a/projects/demo/%ff"} {
			if r = st.do(t, "basic", "GET", p, nil); r.status != 400 || !strings.Contains(r.body, "invalid WebDAV path") {
				t.Errorf("GET %s: %d %q, want 400 with a reason", p, r.status, r.body)
			}
		}
		st.assertLogsClean(t)
	})
}

func TestGatewayWebDAVReadOnlyAndAudit(t *testing.T) {
	forBackends(t, func(t *testing.T, be string) {
		st := startStack(t, stackOptions{backend: be}, "codex-a")
		for _, m := range []string{"PUT", "DELETE", "MKCOL", "MOVE", "COPY", "PROPPATCH", "LOCK"} {
			r := st.do(t, "basic", m, "/dav/codex-a/projects/demo/README.md", strings.NewReader("x"),
				"If-Match", "*", "Destination", "/dav/codex-a/projects/demo/R2.md", "X-Request-ID", "rid-ro-"+m)
			if r.status != 405 || r.header.Get("Allow") != "OPTIONS, GET, HEAD, PROPFIND" {
				t.Errorf("%s: %d Allow %q", m, r.status, r.header.Get("Allow"))
			}
		}
		b, _ := os.ReadFile(filepath.Join(st.agents["codex-a"].ProjectsDir, "demo/README.md"))
		if string(b) != "# demo of codex-a\n" {
			t.Errorf("README changed: %q", b)
		}
		recs := waitAudit(t, st.gw, func(r map[string]any) bool { return strings.HasPrefix(fmt.Sprint(r["request_id"]), "rid-ro-") }, 7)
		for _, r := range recs {
			if r["operator"] != gatewaytest.AdminOperator || r["agent_id"] != "codex-a" || r["workspace_scope"] != "PROJECT" ||
				r["project_name"] != "demo" || r["source_path"] != "README.md" || r["result"] != "error" || fmt.Sprint(r["http_status"]) != "405" ||
				r["reason"] != "READ_ONLY" || r["grpc_code"] != "PermissionDenied" {
				t.Errorf("audit record %v", r)
			}
			if !strings.HasPrefix(fmt.Sprint(r["action"]), "webdav.") {
				t.Errorf("audit action %v", r["action"])
			}
		}
	})
}

// The sidecar decides preconditions; the gateway passes its statuses on
// and audits the reason it named.
func TestGatewayWebDAVWritablePreconditions(t *testing.T) {
	forBackends(t, func(t *testing.T, be string) {
		st := startStack(t, stackOptions{writable: true, backend: be}, "codex-a")
		r := st.do(t, "basic", "PUT", "/dav/codex-a/projects/demo/README.md", strings.NewReader("x"), "X-Request-ID", "rid-428")
		if r.status != 428 {
			t.Errorf("PUT without If-Match: %d %s", r.status, r.body)
		}
		r = st.do(t, "basic", "PUT", "/dav/codex-a/projects/demo/README.md", strings.NewReader("x"), "If-Match", `"stale"`, "X-Request-ID", "rid-412")
		if r.status != 412 {
			t.Errorf("PUT with a stale If-Match: %d %s", r.status, r.body)
		}
		r = st.do(t, "basic", "MOVE", "/dav/codex-a/projects/demo/README.md", nil, "If-Match", "*", "Destination", "/dav/codex-a/global/skills/README.md")
		if r.status != 403 {
			t.Errorf("MOVE across workspaces: %d", r.status)
		}
		for rid, want := range map[string][2]string{"rid-428": {"FailedPrecondition", "PRECONDITION_REQUIRED"}, "rid-412": {"Aborted", "REVISION_MISMATCH"}} {
			rec := waitAudit(t, st.gw, func(r map[string]any) bool { return r["request_id"] == rid }, 1)[0]
			if rec["action"] != "webdav.PUT" || rec["source_path"] != "README.md" || rec["grpc_code"] != want[0] || rec["reason"] != want[1] {
				t.Errorf("%s: audit %v", rid, rec)
			}
		}

		// A create, then a move with the current ETag, both audited without
		// content.
		const content = "content-that-must-not-be-audited"
		r = st.do(t, "basic", "PUT", "/dav/codex-a/projects/demo/src/new.txt", strings.NewReader(content), "If-None-Match", "*", "X-Request-ID", "rid-create")
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		etag := st.do(t, "basic", "HEAD", "/dav/codex-a/projects/demo/src/new.txt", nil).header.Get("ETag")
		r = st.do(t, "basic", "MOVE", "/dav/codex-a/projects/demo/src/new.txt", nil, "If-Match", etag,
			"Destination", st.gw.URL+"/dav/codex-a/projects/demo/moved.txt", "X-Request-ID", "rid-move")
		if r.status != 201 && r.status != 204 {
			t.Fatalf("move: %d %s", r.status, r.body)
		}
		b, _ := os.ReadFile(filepath.Join(st.agents["codex-a"].ProjectsDir, "demo/moved.txt"))
		if string(b) != content {
			t.Errorf("moved file = %q", b)
		}
		move := waitAudit(t, st.gw, func(r map[string]any) bool { return r["request_id"] == "rid-move" }, 1)[0]
		if move["action"] != "webdav.MOVE" || move["result"] != "ok" || move["grpc_code"] != "OK" || move["source_path"] != "src/new.txt" ||
			move["destination_path"] != "moved.txt" || move["operator"] != gatewaytest.AdminOperator {
			t.Errorf("move audit %v", move)
		}
		waitAudit(t, st.gw, func(r map[string]any) bool { return r["request_id"] == "rid-create" && r["result"] == "ok" }, 1)
		raw, _ := os.ReadFile(st.gw.AuditFile)
		if strings.Contains(string(raw), content) {
			t.Error("the audit file contains file content")
		}
	})
}

func TestGatewayWebDAVStoppedSidecar(t *testing.T) {
	forBackends(t, func(t *testing.T, be string) {
		st := startStack(t, stackOptions{backend: be}, "codex-a", "codex-b")
		if err := st.agents["codex-a"].Stop(); err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"PROPFIND", "GET"} {
			r := st.do(t, "basic", m, "/dav/codex-a/projects/demo/", nil, "Depth", "1")
			if r.status != 503 || !strings.Contains(r.body, `agent "codex-a"`) {
				t.Errorf("%s, stopped sidecar: %d %s", m, r.status, r.body)
			}
		}
		if r := st.do(t, "basic", "GET", "/dav/codex-b/projects/demo/README.md", nil); r.status != 200 {
			t.Errorf("other agent: %d", r.status)
		}
		st.gw.Stop() // flush its log
		if !strings.Contains(st.gw.Logs(), "sidecar WebDAV request failed") {
			t.Errorf("the failure is not logged:\n%s", st.gw.Logs())
		}
		st.assertLogsClean(t)
	})
}

func TestGatewayRclone(t *testing.T) {
	forBackends(t, testGatewayRclone)
}

func testGatewayRclone(t *testing.T, be string) {
	st := startStack(t, stackOptions{backend: be}, "codex-a")
	bin, err := exec.LookPath("rclone")
	if err != nil {
		t.Fatal("rclone is not installed: run `make setup`")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "rclone.conf")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	obscured, err := exec.Command(bin, "--config", conf, "obscure", st.gw.AdminToken).Output()
	if err != nil {
		t.Fatalf("rclone obscure: %v", err)
	}
	run := func(pass string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--config", conf, "--low-level-retries", "1", "--retries", "1"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir,
			"RCLONE_CONFIG_GW_TYPE=webdav", "RCLONE_CONFIG_GW_URL="+st.gw.URL+"/dav/",
			"RCLONE_CONFIG_GW_VENDOR=other", "RCLONE_CONFIG_GW_USER=rclone", "RCLONE_CONFIG_GW_PASS="+pass)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			t.Logf("rclone %v: %v\n%s", args, err, errb.String())
		}
		return out.String(), err
	}
	pass := strings.TrimSpace(string(obscured))
	out, err := run(pass, "lsf", "-R", "gw:codex-a/projects/demo")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out); !slices.Equal(got, []string{"README.md", "src/", "src/main.go"}) {
		t.Errorf("lsf -R = %q", got)
	}
	dst := t.TempDir()
	if _, err := run(pass, "copy", "gw:codex-a/projects/demo", dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "src/main.go")); string(b) != "package main\n" {
		t.Errorf("downloaded main.go = %q", b)
	}
	badPass, _ := exec.Command(bin, "--config", conf, "obscure", "wrong").Output()
	if _, err := run(strings.TrimSpace(string(badPass)), "lsf", "gw:codex-a/projects/demo"); err == nil {
		t.Error("rclone listed with a wrong token")
	}
}

// waitAudit waits for n audit records matching keep (the record is written
// after the response).
func waitAudit(t *testing.T, gw *gatewaytest.Gateway, keep func(map[string]any) bool, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var got []map[string]any
		for _, r := range gw.AuditRecords(t) {
			if keep(r) {
				got = append(got, r)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("%d audit records, want %d: %v", len(got), n, got)
			}
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGatewayLitmusReadOnly runs litmus through the gateway with Basic
// credentials (the token as password). A read-only server passes what a
// read-only server can: init in every suite; begin (MKCOL) gets 405. See
// docs/benchmarks/gateway.md.
func TestGatewayLitmusReadOnly(t *testing.T) {
	forBackends(t, testGatewayLitmusReadOnly)
}

func testGatewayLitmusReadOnly(t *testing.T, be string) {
	st := startStack(t, stackOptions{backend: be}, "codex-a")
	bin, err := exec.LookPath("litmus")
	if err != nil {
		t.Fatal("litmus is not installed: run `make setup`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-k", st.gw.URL+"/dav/codex-a/projects/demo/", "litmus", st.gw.AdminToken)
	cmd.Dir = t.TempDir()
	out, _ := cmd.CombinedOutput()
	t.Logf("litmus:\n%s", out)
	s := string(out)
	if got := strings.Count(s, "init.................. pass"); got != 5 {
		t.Errorf("init passed in %d suites, want 5", got)
	}
	if got := strings.Count(s, "405 Method Not Allowed"); got != 5 {
		t.Errorf("%d suites stopped on 405, want 5", got)
	}
	if strings.Contains(s, "401") || strings.Contains(s, "403") {
		t.Error("litmus was refused: Basic auth with the token did not work")
	}
}
