// Package proctest holds the process mechanics shared by the test harnesses
// that start real binaries (sidecar/sidecartest, gateway/gatewaytest): build
// a ./cmd package once per test process, start it, collect its output, find
// its ports from its "listening" log lines, wait for /readyz, and stop it.
// A harness keeps one Builder (its only package-level state), one Log and
// one Runner per started binary, writes the config with WriteYAML into a
// TempDir, and registers Supervise.
//
// It guarantees that:
//   - a started process gets SIGKILL when the test process dies (Pdeathsig),
//     so a crashed test leaves no server behind;
//   - everything the process writes to stdout and stderr, over all its runs,
//     is kept in its Log (stderr a line at a time), safe for concurrent use;
//   - Start returns only once every wanted server has logged
//     {"@message":"listening","server":NAME,"address":"127.0.0.1:PORT"} and
//     GET /readyz on the ready server answered 200; when that does not
//     happen in time, or the process exits first, it returns an error and
//     the process is killed and reaped;
//   - Wait never blocks longer than its timeout plus the time the kernel
//     takes to deliver SIGKILL;
//   - Supervise stops a still-running process when the test ends and logs
//     its last lines when the test failed;
//   - TempDir is traversable by the other user a process may run as (a
//     sidecar as UID 1000), unlike t.TempDir().
//
// It does not choose users, volumes or config files (the harnesses do), and
// it does not retry: a binary that does not come up is a test failure.
package proctest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Command describes a process to Start.
type Command struct {
	// Name names the process in errors ("sidecar", "gateway").
	Name string
	// Path and Args are the binary and its arguments (without argv[0]).
	Path string
	Args []string
	// Env is appended to the test process's environment.
	Env []string
	// Dir is the working directory.
	Dir string
	// Credential, when set, runs the process as another user.
	Credential *syscall.Credential
	// Servers are the "server" values of the listening lines to wait for.
	Servers []string
	// ReadyServer is the server (one of Servers) whose /readyz must
	// answer 200 before Start returns.
	ReadyServer string
	// StartTimeout bounds each of the two waits (listening lines, /readyz).
	StartTimeout time.Duration
}

// Process is one run of a started binary.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}

	mu      sync.Mutex
	exitErr error
}

// Start starts c, writing its output to log, and waits until it is ready.
// It returns the process and the address of each server in c.Servers. On
// error the process, if it was started, has been killed and reaped.
func Start(c Command, log *Log) (*Process, map[string]string, error) {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: c.Credential}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdout = log
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	lc := make(chan Listening, len(c.Servers)+1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		ScanListening(stderr, log, lc)
	}()
	go func() {
		<-readDone
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	addrs, err := p.awaitReady(c, lc)
	if err != nil {
		return nil, nil, err
	}
	return p, addrs, nil
}

// Listening is a "listening" log line: a server's name and address.
type Listening struct{ Server, Address string }

// ScanListening copies r to log line by line and sends each "listening"
// line to lc (dropping it when lc is full: only the first ones matter).
func ScanListening(r io.Reader, log io.Writer, lc chan<- Listening) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		log.Write(append(append([]byte(nil), line...), '\n'))
		var m struct {
			Message string `json:"@message"`
			Server  string `json:"server"`
			Address string `json:"address"`
		}
		// Only a line naming "listening" is decoded: a benchmark's client
		// would otherwise pay a JSON decode per access-log line.
		if bytes.Contains(line, []byte(`"listening"`)) && json.Unmarshal(line, &m) == nil && m.Message == "listening" {
			select {
			case lc <- Listening{m.Server, m.Address}:
			default:
			}
		}
	}
	// A line longer than the scanner's limit ends the scan: keep the rest.
	_, _ = io.Copy(log, r)
}

func (p *Process) awaitReady(c Command, lc <-chan Listening) (map[string]string, error) {
	deadline := time.After(c.StartTimeout)
	addrs := map[string]string{}
	for len(addrs) < len(c.Servers) {
		select {
		case l := <-lc:
			addrs[l.Server] = l.Address
		case <-p.done:
			return nil, fmt.Errorf("%s exited during start-up: %v", c.Name, p.ExitErr())
		case <-deadline:
			p.kill()
			return nil, fmt.Errorf("no \"listening\" lines after %s (got %v)", c.StartTimeout, addrs)
		}
	}
	for _, k := range c.Servers {
		if addrs[k] == "" {
			p.kill()
			return nil, fmt.Errorf("no \"listening\" line for server=%s (got %v)", k, addrs)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.StartTimeout)
	defer cancel()
	url := "http://" + addrs[c.ReadyServer] + "/readyz"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addrs, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited during start-up: %v", c.Name, p.ExitErr())
		case <-ctx.Done():
			p.kill()
			return nil, fmt.Errorf("/readyz not ready after %s", c.StartTimeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *Process) kill() {
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// PID is the process ID of the run (for tests that read /proc/PID).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Signal sends sig to the process (nothing if it has exited).
func (p *Process) Signal(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
}

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// ExitErr is the process's exit error (nil for status 0 or while running).
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Wait waits up to timeout for the process to exit and returns its exit
// error. When it has not exited by then, Wait sends SIGKILL, waits for the
// exit and reports killed=true.
func (p *Process) Wait(timeout time.Duration) (exitErr error, killed bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.ExitErr(), false
	case <-t.C:
		p.kill()
		return p.ExitErr(), true
	}
}
