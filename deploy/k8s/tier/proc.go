//go:build k8stier

package tier

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is one daemon a tier started. Its output goes to a log file in the
// tier's work directory; it runs in its own process group, and stop (run by
// t.Cleanup, on success and failure) signals that group by PID: SIGTERM,
// then SIGKILL after a grace period.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs name (a path) with args, logging into dir/<base>.log.
func start(t *testing.T, dir, name string, args ...string) *proc {
	t.Helper()
	base := filepath.Base(name)
	logPath := filepath.Join(dir, base+".log")
	for i := 2; fileExists(logPath); i++ {
		logPath = filepath.Join(dir, fmt.Sprintf("%s.%d.log", base, i))
	}
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", base, err)
	}
	p := &proc{name: base, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t, 20*time.Second) })
	return p
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process group, waiting at most grace before SIGKILL.
func (p *proc) stop(t *testing.T, grace time.Duration) {
	if p.exited() {
		return
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		t.Logf("%s (pid %d) ignored SIGTERM for %s: SIGKILL", p.name, pid, grace)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) survived SIGKILL", p.name, pid)
		}
	}
	// Children that left the group (none expected) are found by the
	// callers' own checks; the group itself is gone.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls check every 200 ms until it returns nil, failing the test
// after timeout with the last error. Any of procs exiting fails it at once
// with the tail of its log.
func waitFor(t *testing.T, what string, timeout time.Duration, check func() error, procs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	start := time.Now()
	var last error
	for {
		if last = check(); last == nil {
			t.Logf("%s after %.1f s", what, time.Since(start).Seconds())
			return
		}
		for _, p := range procs {
			if p.exited() {
				t.Fatalf("waiting for %s: %s exited (%v):\n%s", what, p.name, p.err, p.tail(30))
			}
		}
		if time.Now().After(deadline) {
			msg := ""
			for _, p := range procs {
				msg += fmt.Sprintf("\n--- %s:\n%s", p.name, p.tail(15))
			}
			t.Fatalf("%s: not after %s: %v%s", what, timeout, last, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run runs a command to completion within timeout and returns its combined
// output.
func run(timeout time.Duration, name string, args ...string) ([]byte, error) {
	return runEnv(timeout, nil, name, args...)
}

// runEnv is run with env added to the command's environment.
func runEnv(timeout time.Duration, env []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: timed out after %s: %w", filepath.Base(name), strings.Join(args, " "), timeout, ctx.Err())
	}
	return out, err
}

// mustRun is run that fails the test on error.
func mustRun(t *testing.T, timeout time.Duration, name string, args ...string) []byte {
	t.Helper()
	out, err := run(timeout, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

// need fails the test (never skips) when a host command is missing.
func need(t *testing.T, cmd, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(cmd)
	if err != nil {
		t.Fatalf("%s is missing: install %s (make setup)", cmd, pkg)
	}
	return p
}

// statOwner returns "uid:gid" of a file.
func statOwner(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "?"
	}
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
}

// sidecarCerts makes the mutual-TLS files of agents in dir/pki with the
// operator's command, agent-gateway certs (built from this repository), and
// returns the directory: ca.crt, gateway.crt/.key, sidecar-<id>.crt/.key.
func sidecarCerts(t *testing.T, dir string, agents ...string) string {
	t.Helper()
	gw := filepath.Join(dir, "agent-gateway-certs")
	if out, err := run(3*time.Minute, "go", "-C", "../../..", "build", "-o", gw, "./gateway/cmd/agent-gateway"); err != nil {
		t.Fatalf("go build agent-gateway: %v\n%s", err, out)
	}
	pki := filepath.Join(dir, "pki")
	args := []string{"certs", "--dir", pki}
	for _, a := range agents {
		args = append(args, "--agent", a)
	}
	mustRun(t, time.Minute, gw, args...)
	return pki
}
