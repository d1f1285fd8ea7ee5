// Package benchproc is what the benchmark tools (davbench, gatewaybench,
// ckptbench, watchbench) share: starting the real agent-sidecar binary and
// the peers they compare it with, reading a process's memory from /proc,
// their HTTP requests, the order statistics and verdicts they report and
// how they exit on failure. It is bench support, not product code: the
// tests use internal/proctest, which also checks logs and cleans up through
// testing.TB.
package benchproc

import (
	"bufio"
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"gopkg.in/yaml.v3"

	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/sidecar"
)

// Proc is a started process under test.
type Proc struct {
	// Addr is the address it serves on (for a sidecar: of the listener
	// asked for, rpc or dav).
	Addr string
	PID  int
	// Conn is a gRPC connection to Addr when the sidecar's rpc listener
	// was asked for, else nil.
	Conn *grpc.ClientConn
	// TLS is the gateway's client config for a sidecar's Addr (mutual
	// TLS, as the gateway connects), else nil.
	TLS *tls.Config
	// Stop closes Conn, sends the stop signal and waits for the process to
	// end (killing it after 10 s).
	Stop func()
}

// Start starts cmd (killed if this process dies) and returns once addr
// returned the address it serves on, or fails after 30 s or when addr
// fails. Stop sends it stop.
func Start(cmd *exec.Cmd, stop os.Signal, addr func() (string, error)) (*Proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	type result struct {
		addr string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		a, err := addr()
		ch <- result{a, err}
	}()
	exited := make(chan struct{})
	var once sync.Once
	wait := func() { once.Do(func() { _ = cmd.Wait(); close(exited) }) }
	var r result
	select {
	case r = <-ch:
	case <-time.After(30 * time.Second):
		r.err = errors.New("no address within 30s")
	}
	if r.err != nil {
		_ = cmd.Process.Kill()
		wait()
		return nil, r.err
	}
	return &Proc{Addr: r.addr, PID: cmd.Process.Pid, Stop: func() {
		_ = cmd.Process.Signal(stop)
		go wait()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}}, nil
}

// StartChild re-executes this binary with args, env added to its
// environment and its stderr on ours, and returns once it printed its
// address (ServeChild) on stdout. Stop kills it.
func StartChild(env []string, args ...string) (*Proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	return Start(cmd, os.Kill, func() (string, error) {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("child did not report its address: %q %v", line, err)
		}
		return strings.TrimSpace(line), nil
	})
}

// ServeChild is a StartChild child's server: h on 127.0.0.1:0 (over TLS
// when cfg is set), its address printed on stdout first. It returns only
// on an error.
func ServeChild(h http.Handler, cfg *tls.Config) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	return http.Serve(ln, h)
}

// SidecarConfig is the config the tools start from: every listener on
// 127.0.0.1 port 0, the volume under root (projects/ and codex/), the
// checkpoint store beside it (checkpoints/, outside the projects tree, as
// in production), info logs (the "listening" lines are read from them).
// Its mutual-TLS files are
// made (pki.Ensure, agent BenchAgent) in root/pki.
func SidecarConfig(root string) sidecar.Config {
	c := sidecar.DefaultConfig()
	c.RPCServer.Address = "127.0.0.1:0"
	c.DavServer.Address = "127.0.0.1:0"
	c.MetricsServer.Address = "127.0.0.1:0"
	c.Log.Level = "info"
	c.Services.Project.ProjectsRootDir = filepath.Join(root, "projects")
	c.Services.Project.CodexHomeDir = filepath.Join(root, "codex")
	c.Services.Checkpoints.Dir = filepath.Join(root, "checkpoints")
	f := pki.SidecarFiles(filepath.Join(root, "pki"), BenchAgent)
	c.TLS = sidecar.TLSConfig{CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: f.CA}
	return c
}

// BenchAgent is the agent the benchmark sidecars' certificates name.
const BenchAgent = "bench"

// ClientTLS is the gateway's client config for a sidecar of SidecarConfig
// (its pki directory), with ALPN protos.
func ClientTLS(c sidecar.Config, protos []string) (*tls.Config, error) {
	src, err := pki.NewSource(pki.GatewayFiles(filepath.Dir(c.TLS.ClientCAFile)), nil, nil)
	if err != nil {
		return nil, err
	}
	return src.SidecarClientConfig(BenchAgent, protos), nil
}

var sidecarBuild = proctest.Builder{Pkg: "./sidecar/cmd/agent-sidecar", EnvVar: "AGENT_SIDECAR_BIN"}

// StartSidecar writes c to work/sidecar.yaml and starts bin with it (bin
// "": $AGENT_SIDECAR_BIN, else a build of ./sidecar/cmd/agent-sidecar). It
// returns once the server listener ("rpc" or "dav") logged its address;
// Stop sends SIGTERM.
func StartSidecar(work, bin string, c sidecar.Config, server string) (*Proc, error) {
	if bin == "" {
		if v := os.Getenv(sidecarBuild.EnvVar); v != "" {
			fmt.Fprintf(os.Stderr, "bench: sidecar from $%s=%s\n", sidecarBuild.EnvVar, v)
		}
		var err error
		if bin, err = sidecarBuild.Binary(); err != nil {
			return nil, err
		}
	}
	if _, err := pki.Ensure(filepath.Dir(c.TLS.ClientCAFile), []string{BenchAgent}, time.Now()); err != nil {
		return nil, err
	}
	// The sidecar may run as another user (the benchmarks chmod its tree).
	if err := os.Chmod(c.TLS.KeyFile, 0o644); err != nil {
		return nil, err
	}
	protos := pki.ProtoHTTP
	if server == "rpc" {
		protos = pki.ProtoGRPC
	}
	clientTLS, err := ClientTLS(c, protos)
	if err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(work, "sidecar.yaml")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", cfgPath)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p, err := Start(cmd, syscall.SIGTERM, func() (string, error) {
		// The scan reads stderr to its end, so the sidecar never blocks on it.
		lc := make(chan proctest.Listening, 8)
		go func() {
			proctest.ScanListening(stderr, io.Discard, lc)
			close(lc)
		}()
		for l := range lc {
			if l.Server == server {
				return l.Address, nil
			}
		}
		return "", errors.New("no " + server + " listening line")
	})
	if err != nil {
		return p, err
	}
	p.TLS = clientTLS
	if server != "rpc" {
		return p, nil
	}
	if p.Conn, err = grpc.NewClient(p.Addr, grpc.WithTransportCredentials(credentials.NewTLS(clientTLS))); err != nil {
		p.Stop()
		return nil, err
	}
	stop := p.Stop
	p.Stop = func() { p.Conn.Close(); stop() }
	return p, nil
}

// ProcField is the value of the "key:" line of a /proc file (status,
// cpuinfo), trimmed, or "" when the file or the line is not there.
func ProcField(path, key string) string {
	data, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// StatusKB reads the "key:" line (VmRSS, VmHWM, ...) of /proc/PID/status in
// KiB, and -1 when the process or the line is not there.
func StatusKB(pid int, key string) int64 {
	kb, _, _ := strings.Cut(ProcField(fmt.Sprintf("/proc/%d/status", pid), key), " ")
	if n, err := strconv.ParseInt(kb, 10, 64); err == nil {
		return n
	}
	return -1
}

// ResetPeak resets pid's VmHWM to its current RSS (clear_refs 5) and returns
// that RSS in KiB.
func ResetPeak(pid int) int64 {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o644)
	return StatusKB(pid, "VmRSS")
}

// Interleave calls f(round, peer) for rounds rounds, each over the peers in
// turn, so that load from elsewhere on the machine falls on all peers
// alike. A peer whose call fails is left out of the later rounds; errs
// holds each peer's error (nil for none).
func Interleave(rounds, peers int, f func(round, peer int) error) (errs []error) {
	errs = make([]error, peers)
	for r := range rounds {
		for p := range peers {
			if errs[p] == nil {
				errs[p] = f(r, p)
			}
		}
	}
	return errs
}

// Rank is the element at index i (clamped to the valid range) of a sorted
// copy of v, and the zero value for an empty v. Each tool picks its index
// from its own definition of a percentile.
func Rank[T cmp.Ordered](v []T, i int) T {
	if len(v) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(max(i, 0), len(s)-1)]
}

// Median is the upper median of v: Rank(v, len(v)/2).
func Median[T cmp.Ordered](v []T) T { return Rank(v, len(v)/2) }

// Verdict is pass when a figure met its target (ok), else fail: each tool
// words its result lines its own way.
func Verdict(ok bool, pass, fail string) string {
	if ok {
		return pass
	}
	return fail
}

// Exit ends a tool that failed: it prints "prefix: err" on stderr and exits
// with status 1. A nil err does nothing.
func Exit(prefix string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prefix, err)
		os.Exit(1)
	}
}

// Do sends method url through c with the headers hdr and, when body is
// set, size bytes of body, reads the answer and returns its status, the
// size of its body and the time from sending the request to the body's end.
func Do(c *http.Client, method, url string, hdr map[string]string, body io.Reader, size int64) (int, int64, time.Duration, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return 0, 0, 0, err
	}
	if body != nil {
		req.ContentLength = size
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, time.Since(start), err
}

// WriteFileMiB writes mib MiB of a fixed byte pattern to path.
func WriteFileMiB(path string, mib int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for range mib {
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
