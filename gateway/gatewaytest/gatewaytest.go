// Package gatewaytest starts a real agent-gateway process for tests in any
// package (gateway integration tests, portal e2e, deploy acceptance).
//
// Start builds ./gateway/cmd/agent-gateway once per test process (go build
// into $TMPDIR/proctest-bin-UID, content-addressed so processes share one
// file; set AGENT_GATEWAY_BIN to use a prebuilt binary), writes a
// config for the given agents with an admin and a non-admin token (random,
// stored as SHA-256) and an audit file, starts the binary on 127.0.0.1:0,
// waits for its "listening" line(s) and /readyz, and stops it (SIGTERM) in
// t.Cleanup. It fails the test, never skips, when anything is missing.
//
// The gateway reaches its sidecars over mutual TLS like every gateway:
// agentRuntime.sidecarTLS names a client certificate issued from the test
// process's CA (internal/pki/pkitest), the CA that sidecartest and
// fakesidecar issue their sidecars' certificates from; an Agent's ID must be
// the one its sidecar's certificate names (sidecartest.Options.AgentID).
//
// The process mechanics (build cache, start, logs, listening lines, /readyz,
// stop) live in internal/proctest, shared with sidecar/sidecartest.
package gatewaytest

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/pki/pkitest"
	"github.com/agentworkspace/files/internal/proctest"
)

// Operators of the generated tokens.
const (
	AdminOperator = "admin-tester"
	UserOperator  = "user-tester"
)

// Agent is one configured agent. An empty RPCAddr means no sidecar
// (project_management_enabled=false).
type Agent struct {
	ID      string
	RPCAddr string // 127.0.0.1:PORT of the sidecar's gRPC server
	DavURL  string // https://127.0.0.1:PORT of the sidecar's WebDAV server
	Timeout time.Duration
}

// Options configures Start.
type Options struct {
	Agents []Agent
	// DefaultAgent defaults to the first agent's ID; "-" sets none.
	DefaultAgent string
	// Writable is webdav.writable.
	Writable bool
	// TrustedProxyCIDRs, when set, configure auth.trustedProxy with these
	// CIDRs, X-Forwarded-User, X-Forwarded-Groups and admin group
	// workspace-admins.
	TrustedProxyCIDRs []string
	// MetricsServer adds the unauthenticated metrics listener.
	MetricsServer bool
	// Configure edits the config just before it is written.
	Configure func(*gateway.Config)
	// TLSDir holds the gateway's client certificate (gateway.crt/.key)
	// and ca.crt for agentRuntime.sidecarTLS; default: issued from the
	// test process's CA (internal/pki/pkitest), which sidecartest's and
	// fakesidecar's sidecars are issued from too.
	TLSDir string
	Env    []string
}

// Gateway is one running gateway process.
type Gateway struct {
	URL        string // http://127.0.0.1:PORT
	Addr       string // 127.0.0.1:PORT
	MetricsURL string // set when Options.MetricsServer
	AdminToken string // role admin, operator AdminOperator
	UserToken  string // role user (non-admin), operator UserOperator
	AuditFile  string
	ConfigPath string

	logs *proctest.Log
	run  proctest.Runner
}

// randomToken is 24 random bytes in hex (crypto/rand.Read cannot fail).
func randomToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// config builds the configuration Start writes.
func (o Options) config(adminToken, userToken, auditFile string) *gateway.Config {
	cfg := &gateway.Config{}
	cfg.HTTPServer.Address = "127.0.0.1:0"
	if o.MetricsServer {
		cfg.MetricsServer.Address = "127.0.0.1:0"
	}
	cfg.AgentRuntime.Agents = map[string]config.Agent{}
	for _, a := range o.Agents {
		ag := config.Agent{Provider: "codex_app_server",
			CodexAppServer: &config.CodexAppServer{Endpoint: "ws://" + a.ID + ".invalid:4500"}}
		if a.RPCAddr != "" {
			to := cmp.Or(max(a.Timeout, 0), 5*time.Second)
			ag.Sidecar = &config.Sidecar{Endpoint: a.RPCAddr, DavEndpoint: a.DavURL, Timeout: &to}
		}
		cfg.AgentRuntime.Agents[a.ID] = ag
	}
	switch {
	case o.DefaultAgent == "-":
	case o.DefaultAgent != "":
		cfg.AgentRuntime.DefaultAgent = o.DefaultAgent
	case len(o.Agents) > 0:
		cfg.AgentRuntime.DefaultAgent = o.Agents[0].ID
	}
	cfg.Auth.Tokens = []config.Token{
		{Operator: AdminOperator, Role: config.RoleAdmin, SHA256: config.HashToken(adminToken)},
		{Operator: UserOperator, Role: "user", SHA256: config.HashToken(userToken)},
	}
	if o.TrustedProxyCIDRs != nil {
		cfg.Auth.TrustedProxy = &config.TrustedProxy{CIDRs: o.TrustedProxyCIDRs,
			UserHeader: "X-Forwarded-User", GroupsHeader: "X-Forwarded-Groups", AdminGroup: "workspace-admins"}
	}
	cfg.WebDAV.Writable = o.Writable
	cfg.Audit.File = auditFile
	f := pki.GatewayFiles(o.TLSDir)
	cfg.AgentRuntime.SidecarTLS = &config.SidecarTLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA}
	return cfg
}

// Start starts a gateway and registers its Stop in t.Cleanup.
func Start(t testing.TB, opts Options) *Gateway {
	t.Helper()
	base := t.TempDir() // private (its parent is 0700): the config holds token hashes
	g := &Gateway{logs: &proctest.Log{},
		AdminToken: randomToken(), UserToken: randomToken(),
		AuditFile: filepath.Join(base, "audit.jsonl")}
	if opts.TLSDir == "" {
		opts.TLSDir = pkitest.Dir(t)
	}
	cfg := opts.config(g.AdminToken, g.UserToken, g.AuditFile)
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	g.ConfigPath = filepath.Join(base, "gateway.yaml")
	proctest.WriteYAML(t, g.ConfigPath, cfg, 0o600)
	proctest.Supervise(t, "gateway", &g.run, g.logs, g.Stop)
	servers := []string{"http"}
	if opts.MetricsServer {
		servers = append(servers, "metrics")
	}
	addrs, err := g.run.Start(proctest.Command{
		Name:         "gateway",
		Path:         build.Path(t, ""), // $AGENT_GATEWAY_BIN, else built
		Args:         []string{"--config", g.ConfigPath},
		Env:          opts.Env,
		Dir:          base,
		Servers:      servers,
		ReadyServer:  "http",
		StartTimeout: 30 * time.Second,
	}, g.logs)
	if err != nil {
		t.Fatalf("gatewaytest: %v\nlogs:\n%s", err, g.logs.Tail(100))
	}
	g.Addr = addrs["http"]
	g.URL = "http://" + g.Addr
	if a := addrs["metrics"]; a != "" {
		g.MetricsURL = "http://" + a
	}
	return g
}

// Logs returns everything the process wrote so far.
func (g *Gateway) Logs() string { return g.logs.String() }

// LogLines returns the JSON log lines, parsed.
func (g *Gateway) LogLines() []map[string]any {
	return g.logs.Lines()
}

// AuditRecords returns the records in the audit file, parsed.
func (g *Gateway) AuditRecords(t testing.TB) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(g.AuditFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("gatewaytest: %v", err)
	}
	var out []map[string]any
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("gatewaytest: audit line is not JSON: %v: %q", err, line)
		}
		out = append(out, m)
	}
	return out
}

// NewRequest returns a request to path (relative to URL) authenticated with
// the admin token as Bearer.
func (g *Gateway) NewRequest(t testing.TB, method, path string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, body)
	if err != nil {
		t.Fatalf("gatewaytest: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+g.AdminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// Stop sends SIGTERM and waits (SIGKILL after 15 s).
func (g *Gateway) Stop() error { return g.signal(syscall.SIGTERM) }

// Kill sends SIGKILL (a crash: nothing drained) and waits for the exit.
func (g *Gateway) Kill() { _ = g.signal(syscall.SIGKILL) }

// signal sends sig and waits for the exit (SIGKILL after 15 s).
func (g *Gateway) signal(sig syscall.Signal) error {
	p := g.run.Current()
	if p == nil {
		return errors.New("gatewaytest: not started")
	}
	p.Signal(sig)
	err, killed := p.Wait(15 * time.Second)
	if killed {
		return errors.New("gateway did not exit within 15s of " + unix.SignalName(sig))
	}
	return err
}

// build is the once-per-process build cache (the package's only state).
var build = proctest.Builder{Pkg: "./gateway/cmd/agent-gateway", EnvVar: "AGENT_GATEWAY_BIN"}

// Binary returns the path of an agent-gateway binary: $AGENT_GATEWAY_BIN if
// set, else one built once per test process from ./gateway/cmd/agent-gateway.
func Binary() (string, error) {
	return build.Binary()
}

// PID is the running gateway's process ID (benchmarks read /proc/PID).
func (g *Gateway) PID() int { return g.run.Current().PID() }
