// Package sidecartest starts real agent-sidecar processes for tests in any
// package (sidecar, gateway, deploy acceptance, portal e2e drivers).
//
// Start builds ./sidecar/cmd/agent-sidecar once per test process (go build
// into $TMPDIR/proctest-bin-UID, content-addressed so processes share one
// file; set AGENT_SIDECAR_BIN to use a prebuilt binary instead),
// creates the two volumes (or takes existing ones), writes a config with
// 127.0.0.1:0 listeners, starts the binary, waits for its three "listening"
// log lines and /readyz, and stops it (SIGTERM) in t.Cleanup.
//
// Its rpc and dav listeners serve only mutual TLS, like every sidecar: Start
// issues its certificate (for Options.AgentID) and a gateway client
// certificate from the test process's CA (internal/pki/pkitest) into
// TLSDir, and Conn, Dial, HTTPClient and PlainDavURL connect as the gateway
// does. A gateway started by gateway/gatewaytest in the same test process
// trusts it.
//
// Running as root, the process runs as UID/GID 1000 (as in production) and
// the volumes are chowned to 1000; files a test writes into a volume as root
// afterwards must be handed over with Chown. Otherwise it runs as the current
// user.
//
// The process mechanics (build cache, start, logs, listening lines, /readyz,
// stop) live in internal/proctest, shared with gateway/gatewaytest.
package sidecartest

import (
	"crypto/tls"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/pki/pkitest"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/internal/rpc"
)

// UID and GID the sidecar runs as when the tests run as root.
const (
	UID = 1000
	GID = 1000
)

// Options configures Start. The zero value is a fresh sidecar with empty
// volumes and the default limits.
type Options struct {
	// ProjectsDir and CodexHome are existing directories to serve; empty
	// means a fresh empty directory. As root they are chowned (recursively)
	// to UID/GID 1000 and their ancestors made traversable.
	ProjectsDir string
	CodexHome   string
	// CheckpointsDir is an existing checkpoint store directory (for a
	// second sidecar over the same store); empty means a fresh one beside
	// the volumes, outside the projects tree (services.checkpoints.dir).
	CheckpointsDir string
	// Configure edits the config before it is written (limits, denylist,
	// log level). The listener addresses are always 127.0.0.1:0.
	Configure func(*sidecar.Config)
	// Env is appended to the process environment (e.g. a PATH with a fake git).
	Env []string
	// ShutdownTimeout is passed as --shutdown-timeout. Default 10s.
	ShutdownTimeout time.Duration
	// StartTimeout bounds waiting for the listeners and /readyz. Default 30s.
	StartTimeout time.Duration
	// Binary is a prebuilt agent-sidecar; default $AGENT_SIDECAR_BIN, else built.
	Binary string
	// UID, when set and running as root, runs the process as UID/GID UID
	// instead of 1000 (and chowns the volumes to it): a test that uses up a
	// per-user kernel resource (inotify instances) does so for a UID no
	// other test shares.
	UID int
	// AgentID is the agent the sidecar's certificate names (the gateway
	// checks it). Default "codex-a".
	AgentID string
}

// Sidecar is one running (or stopped) sidecar process. The address fields
// change on Restart.
type Sidecar struct {
	RPCAddr     string // 127.0.0.1:PORT of the gRPC WorkspaceService (mutual TLS)
	DavURL      string // https://127.0.0.1:PORT (WebDAV root: /projects/, /global/; mutual TLS)
	MetricsURL  string // http://127.0.0.1:PORT (/metrics, /healthz, /readyz)
	ProjectsDir string // projectsRootDir on the host
	CodexHome   string // codexHomeDir on the host
	// CheckpointsDir is the store (services.checkpoints.dir as configured,
	// or projectsRootDir/.agent-checkpoints with onAgentVolume).
	CheckpointsDir string
	ConfigPath     string // the config file written for the process
	AgentID        string // the agent its certificate names
	// TLSDir holds ca.crt, gateway.crt/.key and sidecar-<AgentID>.crt/.key
	// (the sidecar's tls keys point there; a test may rotate them).
	TLSDir string

	t    testing.TB
	opts Options
	bin  string
	logs *proctest.Log

	run proctest.Runner // the current run

	plainMu sync.Mutex
	plain   string // PlainDavURL, once started
}

// Start starts a sidecar and registers its Stop in t.Cleanup. It fails the
// test (never skips) when the binary cannot be built or does not come up.
func Start(t testing.TB, opts Options) *Sidecar {
	t.Helper()
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 10 * time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.AgentID == "" {
		opts.AgentID = "codex-a"
	}
	bin := build.Path(t, opts.Binary)
	base := proctest.TempDir(t, "sidecartest-")
	s := &Sidecar{t: t, opts: opts, bin: bin, logs: &proctest.Log{}, AgentID: opts.AgentID}
	s.TLSDir = pkitest.Dir(t, opts.AgentID)
	files := pki.SidecarFiles(s.TLSDir, opts.AgentID)
	chownTo(t, files.Key, opts.uid()) // 0600, read by the sidecar's UID
	s.ProjectsDir = volume(t, opts.ProjectsDir, filepath.Join(base, "projects"), opts.uid())
	s.CodexHome = volume(t, opts.CodexHome, filepath.Join(base, "codex-home"), opts.uid())

	cfg := sidecar.DefaultConfig()
	cfg.Services.Project.ProjectsRootDir = s.ProjectsDir
	cfg.Services.Project.CodexHomeDir = s.CodexHome
	cfg.Services.Checkpoints.Dir = volume(t, opts.CheckpointsDir, filepath.Join(base, "checkpoints"), opts.uid())
	cfg.Log.Level = "debug"
	cfg.TLS = sidecar.TLSConfig{CertFile: files.Cert, KeyFile: files.Key, ClientCAFile: files.CA}
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	s.CheckpointsDir = cfg.Services.Checkpoints.Dir
	if s.CheckpointsDir == "" && cfg.Services.Checkpoints.OnAgentVolume {
		s.CheckpointsDir = filepath.Join(s.ProjectsDir, sidecar.DefaultCheckpointDirName)
	}
	cfg.RPCServer.Address = "127.0.0.1:0"
	cfg.DavServer.Address = "127.0.0.1:0"
	cfg.MetricsServer.Address = "127.0.0.1:0"
	s.ConfigPath = filepath.Join(base, "config.yaml")
	proctest.WriteYAML(t, s.ConfigPath, cfg, 0o644)
	proctest.Supervise(t, "sidecar", &s.run, s.logs, s.Stop)
	if err := s.start(); err != nil {
		t.Fatalf("sidecartest: %v\nlogs:\n%s", err, s.logs.Tail(100))
	}
	return s
}

// Dial returns a WorkspaceService client for the current RPCAddr, closed in
// t.Cleanup.
func (s *Sidecar) Dial(t testing.TB) workspacev1.WorkspaceServiceClient {
	return workspacev1.NewWorkspaceServiceClient(s.Conn(t))
}

// Conn returns a gRPC client connection to RPCAddr (for the health service),
// closed in t.Cleanup.
func (s *Sidecar) Conn(t testing.TB) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(s.RPCAddr, grpc.WithTransportCredentials(s.GRPCCredentials(t)))
	if err != nil {
		t.Fatalf("sidecartest: dial %s: %v", s.RPCAddr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// GRPCCredentials are the gateway's credentials for this sidecar's rpc
// listener (the gateway's client certificate; the sidecar's name checked).
func (s *Sidecar) GRPCCredentials(t testing.TB) credentials.TransportCredentials {
	return credentials.NewTLS(s.ClientTLS(t, pki.ProtoGRPC))
}

// ClientTLS is the gateway's client config for this sidecar with ALPN
// protos (pki.ProtoGRPC for RPCAddr, pki.ProtoHTTP for DavURL).
func (s *Sidecar) ClientTLS(t testing.TB, protos []string) *tls.Config {
	t.Helper()
	return pkitest.GatewayClient(t, s.TLSDir, s.AgentID, protos)
}

// HTTPClient is an HTTP client for DavURL holding the gateway's client
// certificate. It does not follow redirects.
func (s *Sidecar) HTTPClient(t testing.TB) *http.Client {
	tr := &http.Transport{TLSClientConfig: s.ClientTLS(t, pki.ProtoHTTP), Proxy: nil, MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// PlainDavURL is http://127.0.0.1:PORT of a byte-for-byte forwarder (one
// per Sidecar, closed when the test that started it ends) that carries each
// connection to DavURL over mutual TLS with the gateway's certificate, as
// the gateway does: for clients that present no certificate (litmus,
// rclone, raw sockets, plain http.Client). It dials the DavURL of the moment.
func (s *Sidecar) PlainDavURL() string {
	s.plainMu.Lock()
	defer s.plainMu.Unlock()
	if s.plain == "" {
		s.plain = s.startForwarder(s.t)
	}
	return s.plain
}

func (s *Sidecar) startForwarder(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sidecartest: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg := s.ClientTLS(t, pki.ProtoHTTP)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go forward(c, strings.TrimPrefix(s.DavURL, "https://"), cfg)
		}
	}()
	return "http://" + ln.Addr().String()
}

func forward(c net.Conn, addr string, cfg *tls.Config) {
	defer c.Close()
	up, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		io.Copy(up, c)
		up.CloseWrite()
	}()
	io.Copy(c, up) // then both are closed, which ends the other copy
}

// Logs returns everything the process (all its runs) wrote to stderr.
func (s *Sidecar) Logs() string { return s.logs.String() }

// WaitLog waits up to timeout for substr to appear in Logs and reports
// whether it did. Log lines reach the harness through a pipe, so a line the
// sidecar wrote before answering a call may arrive a moment after the answer.
func (s *Sidecar) WaitLog(substr string, timeout time.Duration) bool {
	return s.logs.WaitFor(substr, timeout)
}

// LogLines returns the JSON log lines of Logs, decoded (other lines skipped).
func (s *Sidecar) LogLines() []map[string]any {
	return s.logs.Lines()
}

// Terminate sends SIGTERM and returns at once (use Wait).
func (s *Sidecar) Terminate() { s.run.Signal(syscall.SIGTERM) }

// Wait waits for the process to exit and returns its exit error (nil for
// status 0). It kills the process if it has not exited after the shutdown
// timeout plus 10 s.
func (s *Sidecar) Wait() error {
	p := s.run.Current()
	if p == nil {
		return errors.New("sidecartest: not started")
	}
	err, killed := p.Wait(s.opts.ShutdownTimeout + 10*time.Second)
	if killed {
		return errors.New("sidecartest: sidecar did not exit in time; killed")
	}
	return err
}

// Stop sends SIGTERM and waits for a drained exit; nil means exit status 0.
func (s *Sidecar) Stop() error {
	s.Terminate()
	return s.Wait()
}

// Kill sends SIGKILL and waits (a crash: nothing is drained).
func (s *Sidecar) Kill() {
	s.run.Signal(syscall.SIGKILL)
	_ = s.Wait()
}

// Restart stops the process (SIGTERM) if it runs and starts it again on the
// same volumes and config; the address fields get the new ports.
func (s *Sidecar) Restart() {
	s.t.Helper()
	s.stopForRestart(false)
	if err := s.start(); err != nil {
		s.t.Fatalf("sidecartest: restart: %v\nlogs:\n%s", err, s.logs.Tail(100))
	}
}

// RestartSamePorts stops the process (SIGKILL when kill, else SIGTERM) and
// starts it again on the same three loopback addresses, so that a gateway
// configured with the old endpoints reaches it again (a pod restart behind
// a Service). It retries while the ports are still being released.
func (s *Sidecar) RestartSamePorts(kill bool) {
	s.t.Helper()
	s.stopForRestart(kill)
	cfg, err := sidecar.LoadConfig(s.ConfigPath)
	if err != nil {
		s.t.Fatalf("sidecartest: %v", err)
	}
	cfg.RPCServer.Address = s.RPCAddr
	cfg.DavServer.Address = strings.TrimPrefix(s.DavURL, "https://")
	cfg.MetricsServer.Address = strings.TrimPrefix(s.MetricsURL, "http://")
	proctest.WriteYAML(s.t, s.ConfigPath, cfg, 0o644)
	for i := 0; ; i++ {
		err := s.start()
		if err == nil {
			return
		}
		if i >= 40 {
			s.t.Fatalf("sidecartest: restart on the same ports: %v\nlogs:\n%s", err, s.logs.Tail(100))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stopForRestart stops a still-running process: SIGKILL when kill, else
// SIGTERM and a drained exit (anything else fails the test).
func (s *Sidecar) stopForRestart(kill bool) {
	s.t.Helper()
	switch {
	case !s.run.Running():
	case kill:
		s.Kill()
	default:
		if err := s.Stop(); err != nil {
			s.t.Fatalf("sidecartest: stop before restart: %v", err)
		}
	}
}

// PID is the process ID of the current run (0 when none), e.g. to read
// its memory from /proc/PID/status.
func (s *Sidecar) PID() int {
	if p := s.run.Current(); p != nil {
		return p.PID()
	}
	return 0
}

// Chown hands path (recursively) to the sidecar's UID/GID when the tests run
// as root, so that files a test prepares as root can be changed by the
// sidecar. It does nothing when not root.
func Chown(t testing.TB, path string) { chownTo(t, path, UID) }

// uid is the UID (and GID) the process runs as when the tests run as root.
func (o Options) uid() int {
	if o.UID > 0 {
		return o.UID
	}
	return UID
}

func chownTo(t testing.TB, path string, uid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatalf("sidecartest: chown %s: %v", path, err)
	}
}

func (s *Sidecar) start() error {
	c := proctest.Command{
		Name:         "sidecar",
		Path:         s.bin,
		Args:         []string{"--config", s.ConfigPath, "--shutdown-timeout", s.opts.ShutdownTimeout.String()},
		Env:          s.opts.Env,
		Dir:          filepath.Dir(s.ConfigPath),
		Servers:      []string{"rpc", "dav", "metrics"},
		ReadyServer:  "metrics",
		StartTimeout: s.opts.StartTimeout,
	}
	if os.Geteuid() == 0 {
		c.Credential = &syscall.Credential{Uid: uint32(s.opts.uid()), Gid: uint32(s.opts.uid())}
	}
	addrs, err := s.run.Start(c, s.logs)
	if err != nil {
		return err
	}
	s.RPCAddr = addrs["rpc"]
	s.DavURL = "https://" + addrs["dav"]
	s.MetricsURL = "http://" + addrs["metrics"]
	return nil
}

// volume returns dir (made usable by UID 1000) or creates fresh.
func volume(t testing.TB, dir, fresh string, uid int) string {
	t.Helper()
	var err error
	if dir == "" {
		err = os.Mkdir(fresh, 0o755)
		dir = fresh
	} else if dir, err = filepath.Abs(dir); err == nil && os.Geteuid() == 0 {
		traversable(t, dir)
	}
	if err != nil {
		t.Fatalf("sidecartest: %v", err)
	}
	chownTo(t, dir, uid)
	return dir
}

// traversable adds o+x to the ancestors of dir below the temp dir (t.TempDir
// parents are 0700 root), so that UID 1000 can reach dir.
func traversable(t testing.TB, dir string) {
	tmp := filepath.Clean(os.TempDir())
	for p := filepath.Dir(dir); strings.HasPrefix(p, tmp+"/"); p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("sidecartest: %v", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o011); err != nil {
				t.Fatalf("sidecartest: %v", err)
			}
		}
	}
}

// build is the once-per-process build cache (the package's only state).
var build = proctest.Builder{Pkg: "./sidecar/cmd/agent-sidecar", EnvVar: "AGENT_SIDECAR_BIN"}

// Binary returns the path of an agent-sidecar binary: $AGENT_SIDECAR_BIN if
// set, else one built (once per test process) from this module's
// ./sidecar/cmd/agent-sidecar into a shared directory readable by UID 1000.
func Binary() (string, error) { return build.Binary() }

// InProcess is the real WorkspaceService for a gRPC server a test runs in
// its own process: davfs over fresh volumes in t.TempDir() (default limits,
// no git init, checkpoints off, closed in t.Cleanup), the unary interceptor
// the sidecar serves it behind (request ID and operator, davfs errors to
// statuses with ErrorInfo; its log is discarded) and the projects volume.
func InProcess(t testing.TB) (workspacev1.WorkspaceServiceServer, grpc.UnaryServerInterceptor, string) {
	t.Helper()
	base := t.TempDir()
	cfg := davfs.Config{ProjectsRoot: filepath.Join(base, "projects"), CodexHome: filepath.Join(base, "codex-home")}
	for _, d := range []string{cfg.ProjectsRoot, cfg.CodexHome} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("sidecartest: %v", err)
		}
	}
	fs, err := davfs.Open(cfg)
	if err != nil {
		t.Fatalf("sidecartest: %v", err)
	}
	t.Cleanup(func() { fs.Close() })
	ck, err := checkpoint.New(fs, checkpoint.Config{}, checkpoint.Options{}) // off: deletes take no checkpoint
	if err != nil {
		t.Fatalf("sidecartest: %v", err)
	}
	return rpc.NewService(fs, ck), rpc.Interceptor(hclog.NewNullLogger(), nil), cfg.ProjectsRoot
}
