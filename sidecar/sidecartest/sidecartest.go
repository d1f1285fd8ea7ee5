// Package sidecartest starts real agent-sidecar processes for tests in any
// package (sidecar, gateway, deploy acceptance, portal e2e drivers).
//
// Start builds ./sidecar/cmd/agent-sidecar once per test process (go build
// into $TMPDIR/sidecartest-bin-UID, content-addressed so processes share one
// file; set AGENT_SIDECAR_BIN to use a prebuilt binary instead),
// creates the two volumes (or takes existing ones), writes a config with
// 127.0.0.1:0 listeners, starts the binary, waits for its three "listening"
// log lines and /readyz, and stops it (SIGTERM) in t.Cleanup.
//
// Running as root, the process runs as UID/GID 1000 (as in production) and
// the volumes are chowned to 1000; files a test writes into a volume as root
// afterwards must be handed over with Chown. Otherwise it runs as the current
// user.
package sidecartest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"gopkg.in/yaml.v3"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/sidecar"
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
}

// Sidecar is one running (or stopped) sidecar process. The address fields
// change on Restart.
type Sidecar struct {
	RPCAddr     string // 127.0.0.1:PORT of the gRPC WorkspaceService
	DavURL      string // http://127.0.0.1:PORT (WebDAV root: /projects/, /global/)
	MetricsURL  string // http://127.0.0.1:PORT (/metrics, /healthz, /readyz)
	ProjectsDir string // projectsRootDir on the host
	CodexHome   string // codexHomeDir on the host
	ConfigPath  string // the config file written for the process

	t    testing.TB
	opts Options
	bin  string
	logs *lockedBuffer

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
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
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = Binary(); err != nil {
			t.Fatalf("sidecartest: %v", err)
		}
	}
	base, err := os.MkdirTemp("", "sidecartest-")
	if err != nil {
		t.Fatalf("sidecartest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatalf("sidecartest: %v", err)
	}
	s := &Sidecar{t: t, opts: opts, bin: bin, logs: &lockedBuffer{}}
	s.ProjectsDir = volume(t, opts.ProjectsDir, filepath.Join(base, "projects"))
	s.CodexHome = volume(t, opts.CodexHome, filepath.Join(base, "codex-home"))

	cfg := sidecar.DefaultConfig()
	cfg.Services.Project.ProjectsRootDir = s.ProjectsDir
	cfg.Services.Project.CodexHomeDir = s.CodexHome
	cfg.Log.Level = "debug"
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	cfg.RPCServer.Address = "127.0.0.1:0"
	cfg.DavServer.Address = "127.0.0.1:0"
	cfg.MetricsServer.Address = "127.0.0.1:0"
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("sidecartest: %v", err)
	}
	s.ConfigPath = filepath.Join(base, "config.yaml")
	if err := os.WriteFile(s.ConfigPath, data, 0o644); err != nil {
		t.Fatalf("sidecartest: %v", err)
	}
	t.Cleanup(func() {
		if s.running() {
			if err := s.Stop(); err != nil {
				t.Errorf("sidecartest: sidecar did not stop cleanly: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("sidecar logs:\n%s", tail(s.Logs(), 200))
		}
	})
	if err := s.start(); err != nil {
		t.Fatalf("sidecartest: %v\nlogs:\n%s", err, tail(s.Logs(), 100))
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
	conn, err := grpc.NewClient(s.RPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("sidecartest: dial %s: %v", s.RPCAddr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Logs returns everything the process (all its runs) wrote to stderr.
func (s *Sidecar) Logs() string { return s.logs.String() }

// WaitLog waits up to timeout for substr to appear in Logs and reports
// whether it did. Log lines reach the harness through a pipe, so a line the
// sidecar wrote before answering a call may arrive a moment after the answer.
func (s *Sidecar) WaitLog(substr string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if strings.Contains(s.Logs(), substr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// LogLines returns the JSON log lines of Logs, decoded (other lines skipped).
func (s *Sidecar) LogLines() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(s.Logs(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Terminate sends SIGTERM and returns at once (use Wait).
func (s *Sidecar) Terminate() { s.signal(syscall.SIGTERM) }

// Wait waits for the process to exit and returns its exit error (nil for
// status 0). It kills the process if it has not exited after the shutdown
// timeout plus 10 s.
func (s *Sidecar) Wait() error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return errors.New("sidecartest: not started")
	}
	select {
	case <-done:
	case <-time.After(s.opts.ShutdownTimeout + 10*time.Second):
		s.signal(syscall.SIGKILL)
		<-done
		return errors.New("sidecartest: sidecar did not exit in time; killed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitErr
}

// Stop sends SIGTERM and waits for a drained exit; nil means exit status 0.
func (s *Sidecar) Stop() error {
	s.Terminate()
	return s.Wait()
}

// Kill sends SIGKILL and waits (a crash: nothing is drained).
func (s *Sidecar) Kill() {
	s.signal(syscall.SIGKILL)
	_ = s.Wait()
}

// Restart stops the process (SIGTERM) if it runs and starts it again on the
// same volumes and config; the address fields get the new ports.
func (s *Sidecar) Restart() {
	s.t.Helper()
	if s.running() {
		if err := s.Stop(); err != nil {
			s.t.Fatalf("sidecartest: stop before restart: %v", err)
		}
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("sidecartest: restart: %v\nlogs:\n%s", err, tail(s.Logs(), 100))
	}
}

// Chown hands path (recursively) to the sidecar's UID/GID when the tests run
// as root, so that files a test prepares as root can be changed by the
// sidecar. It does nothing when not root.
func Chown(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, UID, GID)
	})
	if err != nil {
		t.Fatalf("sidecartest: chown %s: %v", path, err)
	}
}

func (s *Sidecar) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *Sidecar) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

type listening struct{ server, address string }

func (s *Sidecar) start() error {
	cmd := exec.Command(s.bin, "--config", s.ConfigPath, "--shutdown-timeout", s.opts.ShutdownTimeout.String())
	cmd.Env = append(os.Environ(), s.opts.Env...)
	cmd.Dir = filepath.Dir(s.ConfigPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: UID, Gid: GID}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = s.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	lc := make(chan listening, 3)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			s.logs.Write(append(append([]byte(nil), line...), '\n'))
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
		io.Copy(s.logs, stderr)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	go func() {
		<-readDone
		err := cmd.Wait()
		s.mu.Lock()
		s.exitErr = err
		s.mu.Unlock()
		close(done)
	}()

	deadline := time.After(s.opts.StartTimeout)
	addrs := map[string]string{}
	for len(addrs) < 3 {
		select {
		case l := <-lc:
			addrs[l.server] = l.address
		case <-done:
			return fmt.Errorf("sidecar exited during start-up: %v", s.exitErr)
		case <-deadline:
			s.Kill()
			return fmt.Errorf("no three \"listening\" lines after %s (got %v)", s.opts.StartTimeout, addrs)
		}
	}
	for _, k := range []string{"rpc", "dav", "metrics"} {
		if addrs[k] == "" {
			s.Kill()
			return fmt.Errorf("no \"listening\" line for server=%s (got %v)", k, addrs)
		}
	}
	s.RPCAddr = addrs["rpc"]
	s.DavURL = "http://" + addrs["dav"]
	s.MetricsURL = "http://" + addrs["metrics"]

	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StartTimeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.MetricsURL+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("sidecar exited during start-up: %v", s.exitErr)
		case <-ctx.Done():
			s.Kill()
			return fmt.Errorf("/readyz not ready after %s", s.opts.StartTimeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// volume returns dir (made usable by UID 1000) or creates fresh.
func volume(t testing.TB, dir, fresh string) string {
	t.Helper()
	if dir == "" {
		if err := os.Mkdir(fresh, 0o755); err != nil {
			t.Fatalf("sidecartest: %v", err)
		}
		dir = fresh
	} else {
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatalf("sidecartest: %v", err)
		}
		dir = abs
		if os.Geteuid() == 0 {
			traversable(t, dir)
		}
	}
	Chown(t, dir)
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

// builder builds the binary once per test process.
type builder struct {
	once sync.Once
	bin  string
	err  error
}

var build builder

// Binary returns the path of an agent-sidecar binary: $AGENT_SIDECAR_BIN if
// set, else one built (once per test process) from this module's
// ./sidecar/cmd/agent-sidecar into a shared directory readable by UID 1000.
func Binary() (string, error) {
	if b := os.Getenv("AGENT_SIDECAR_BIN"); b != "" {
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
	// One shared, content-addressed directory per user: identical sources
	// give an identical binary, so test processes reuse one file instead of
	// leaving a copy each. Binaries unused for a day are pruned.
	dir := filepath.Join(os.TempDir(), "sidecartest-bin-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	prune(dir)
	tmp, err := os.CreateTemp(dir, "build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), "./sidecar/cmd/agent-sidecar")
	cmd.Dir = filepath.Dir(gomod)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./sidecar/cmd/agent-sidecar: %v\n%s", err, buf.String())
	}
	sum, err := fileSHA256(tmp.Name())
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "agent-sidecar-"+sum[:16])
	now := time.Now()
	if _, err := os.Stat(bin); err == nil {
		_ = os.Chtimes(bin, now, now) // in use: keep it from being pruned
		return bin, nil
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// prune removes binaries and stale partial builds older than a day.
func prune(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Cleanup is kept for callers' TestMain; binaries now live in a shared,
// content-addressed cache directory (pruned after a day), so there is
// nothing to remove per process.
func Cleanup() {}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"... (" + strconv.Itoa(len(lines)-n) + " lines cut)"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
