// Package gatewaytest starts a real agent-gateway process for tests in any
// package (gateway integration tests, portal e2e, deploy acceptance).
//
// Start builds ./gateway/cmd/agent-gateway once per test process (go build
// into a temp dir; set AGENT_GATEWAY_BIN to use a prebuilt binary), writes a
// config for the given agents with an admin and a non-admin token (random,
// stored as SHA-256) and an audit file, starts the binary on 127.0.0.1:0,
// waits for its "listening" line(s) and /readyz, and stops it (SIGTERM) in
// t.Cleanup. It fails the test, never skips, when anything is missing.
package gatewaytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/internal/config"
)

// Operators of the generated tokens.
const (
	AdminOperator = "admin-tester"
	UserOperator  = "user-tester"
)

// Agent is one configured agent. An empty RPCAddr means no sidecar
// (project_management_enabled=false).
type Agent struct {
	ID       string
	Provider string // default codex_app_server
	RPCAddr  string // 127.0.0.1:PORT of the sidecar's gRPC server
	DavURL   string // http://127.0.0.1:PORT of the sidecar's WebDAV server
	Timeout  time.Duration
}

// TrustedProxy configures auth.trustedProxy.
type TrustedProxy struct {
	CIDRs        []string
	UserHeader   string // default X-Forwarded-User
	GroupsHeader string // default X-Forwarded-Groups
	AdminGroup   string // default workspace-admins
}

// Options configures Start.
type Options struct {
	Agents []Agent
	// DefaultAgent defaults to the first agent's ID; "-" sets none.
	DefaultAgent string
	// Writable is webdav.writable.
	Writable     bool
	TrustedProxy *TrustedProxy
	// MetricsServer adds the unauthenticated metrics listener.
	MetricsServer bool
	// Configure edits the config just before it is written.
	Configure    func(*gateway.Config)
	Env          []string
	StartTimeout time.Duration // default 30s
	Binary       string        // default $AGENT_GATEWAY_BIN, else built
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

	t    testing.TB
	opts Options
	bin  string
	logs *lockedBuffer

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
}

func randomToken(t testing.TB) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("gatewaytest: %v", err)
	}
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
		ag := config.Agent{Provider: a.Provider}
		if ag.Provider == "" {
			ag.Provider = "codex_app_server"
		}
		ag.CodexAppServer = &config.CodexAppServer{Endpoint: "ws://" + a.ID + ".invalid:4500"}
		if a.RPCAddr != "" {
			to := a.Timeout
			if to <= 0 {
				to = 5 * time.Second
			}
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
	if p := o.TrustedProxy; p != nil {
		tp := &config.TrustedProxy{CIDRs: p.CIDRs, UserHeader: p.UserHeader, GroupsHeader: p.GroupsHeader, AdminGroup: p.AdminGroup}
		if tp.UserHeader == "" {
			tp.UserHeader = "X-Forwarded-User"
		}
		if tp.GroupsHeader == "" {
			tp.GroupsHeader = "X-Forwarded-Groups"
		}
		if tp.AdminGroup == "" {
			tp.AdminGroup = "workspace-admins"
		}
		cfg.Auth.TrustedProxy = tp
	}
	cfg.WebDAV.Writable = o.Writable
	cfg.Audit.File = auditFile
	return cfg
}

// Start starts a gateway and registers its Stop in t.Cleanup.
func Start(t testing.TB, opts Options) *Gateway {
	t.Helper()
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = Binary(); err != nil {
			t.Fatalf("gatewaytest: %v", err)
		}
	}
	base, err := os.MkdirTemp("", "gatewaytest-")
	if err != nil {
		t.Fatalf("gatewaytest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	g := &Gateway{t: t, opts: opts, bin: bin, logs: &lockedBuffer{},
		AdminToken: randomToken(t), UserToken: randomToken(t),
		AuditFile: filepath.Join(base, "audit.jsonl")}
	cfg := opts.config(g.AdminToken, g.UserToken, g.AuditFile)
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("gatewaytest: %v", err)
	}
	g.ConfigPath = filepath.Join(base, "gateway.yaml")
	if err := os.WriteFile(g.ConfigPath, data, 0o600); err != nil {
		t.Fatalf("gatewaytest: %v", err)
	}
	t.Cleanup(func() {
		if g.running() {
			if err := g.Stop(); err != nil {
				t.Errorf("gatewaytest: gateway did not stop cleanly: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("gateway logs:\n%s", tail(g.Logs(), 200))
		}
	})
	if err := g.start(); err != nil {
		t.Fatalf("gatewaytest: %v\nlogs:\n%s", err, tail(g.Logs(), 100))
	}
	return g
}

// Logs returns everything the process wrote so far.
func (g *Gateway) Logs() string { return g.logs.String() }

// LogLines returns the JSON log lines, parsed.
func (g *Gateway) LogLines() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(g.Logs(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
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
func (g *Gateway) Stop() error {
	g.signal(syscall.SIGTERM)
	select {
	case <-g.doneChan():
	case <-time.After(15 * time.Second):
		g.signal(syscall.SIGKILL)
		<-g.doneChan()
		return errors.New("gateway did not exit within 15s of SIGTERM")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.exitErr
}

func (g *Gateway) doneChan() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.done
}

func (g *Gateway) running() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done == nil {
		return false
	}
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

func (g *Gateway) signal(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd != nil && g.cmd.Process != nil {
		_ = g.cmd.Process.Signal(sig)
	}
}

type listening struct{ server, address string }

func (g *Gateway) start() error {
	cmd := exec.Command(g.bin, "--config", g.ConfigPath)
	cmd.Env = append(os.Environ(), g.opts.Env...)
	cmd.Dir = filepath.Dir(g.ConfigPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = g.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", g.bin, err)
	}
	done := make(chan struct{})
	lc := make(chan listening, 4)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			g.logs.Write(append(append([]byte(nil), line...), '\n'))
			var m struct {
				Message string `json:"@message"`
				Server  string `json:"server"`
				Address string `json:"address"`
			}
			if json.Unmarshal(line, &m) == nil && m.Message == "listening" {
				select {
				case lc <- listening{m.Server, m.Address}:
				default:
				}
			}
		}
		_, _ = io.Copy(g.logs, stderr)
	}()
	g.mu.Lock()
	g.cmd, g.done = cmd, done
	g.mu.Unlock()
	go func() {
		<-readDone
		err := cmd.Wait()
		g.mu.Lock()
		g.exitErr = err
		g.mu.Unlock()
		close(done)
	}()

	want := []string{"http"}
	if g.opts.MetricsServer {
		want = append(want, "metrics")
	}
	deadline := time.After(g.opts.StartTimeout)
	addrs := map[string]string{}
	for len(addrs) < len(want) {
		select {
		case l := <-lc:
			addrs[l.server] = l.address
		case <-done:
			return fmt.Errorf("gateway exited during start-up: %v", g.exitErr)
		case <-deadline:
			g.signal(syscall.SIGKILL)
			return fmt.Errorf("no \"listening\" lines after %s (got %v)", g.opts.StartTimeout, addrs)
		}
	}
	for _, k := range want {
		if addrs[k] == "" {
			g.signal(syscall.SIGKILL)
			return fmt.Errorf("no \"listening\" line for server=%s (got %v)", k, addrs)
		}
	}
	g.Addr = addrs["http"]
	g.URL = "http://" + g.Addr
	if a := addrs["metrics"]; a != "" {
		g.MetricsURL = "http://" + a
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.StartTimeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("gateway exited during start-up: %v", g.exitErr)
		case <-ctx.Done():
			g.signal(syscall.SIGKILL)
			return fmt.Errorf("/readyz not ready after %s", g.opts.StartTimeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// builder builds the binary once per test process.
type builder struct {
	once sync.Once
	bin  string
	err  error
}

var build builder

// Binary returns the path of an agent-gateway binary: $AGENT_GATEWAY_BIN if
// set, else one built once per test process from ./gateway/cmd/agent-gateway.
func Binary() (string, error) {
	if b := os.Getenv("AGENT_GATEWAY_BIN"); b != "" {
		return b, nil
	}
	build.once.Do(func() { build.bin, build.err = buildBinary() })
	return build.bin, build.err
}

func buildBinary() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w (is Go installed? run make setup)", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the module")
	}
	dir, err := os.MkdirTemp("", "gatewaytest-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "agent-gateway")
	cmd := exec.Command("go", "build", "-o", bin, "./gateway/cmd/agent-gateway")
	cmd.Dir = filepath.Dir(gomod)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./gateway/cmd/agent-gateway: %v\n%s", err, buf.String())
	}
	return bin, nil
}

// Cleanup removes the binary Binary built; call from TestMain after m.Run.
func Cleanup() {
	if build.bin != "" && os.Getenv("AGENT_GATEWAY_BIN") == "" {
		os.RemoveAll(filepath.Dir(build.bin))
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
