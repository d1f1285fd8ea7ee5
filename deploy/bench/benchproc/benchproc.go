// Package benchproc starts the real agent-sidecar binary for the benchmark
// tools (davbench, ckptbench, watchbench) and reads a process's memory from
// /proc. It is bench support, not product code: the tests use
// internal/proctest, which also checks logs and cleans up through testing.TB.
package benchproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentworkspace/files/sidecar"
	"gopkg.in/yaml.v3"
)

// Sidecar is a started agent-sidecar process.
type Sidecar struct {
	// Addr is the address of the listener asked for (rpc or dav).
	Addr string
	PID  int
	// Stop sends SIGTERM and waits for the process to end.
	Stop func()
}

// SidecarConfig is the config the tools start from: every listener on
// 127.0.0.1 port 0, the volume under root (projects/ and codex/), info logs
// (the "listening" lines are read from them).
func SidecarConfig(root string) sidecar.Config {
	c := sidecar.DefaultConfig()
	c.RPCServer.Address = "127.0.0.1:0"
	c.DavServer.Address = "127.0.0.1:0"
	c.MetricsServer.Address = "127.0.0.1:0"
	c.Log.Level = "info"
	c.Services.Project.ProjectsRootDir = filepath.Join(root, "projects")
	c.Services.Project.CodexHomeDir = filepath.Join(root, "codex")
	return c
}

// StartSidecar writes c to work/sidecar.yaml, starts bin with it (killed if
// this process dies) and returns once the server listener ("rpc" or "dav")
// logged its address, or fails after 30 s.
func StartSidecar(work, bin string, c sidecar.Config, server string) (*Sidecar, error) {
	data, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(work, "sidecar.yaml")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		sent := false
		for sc.Scan() {
			var m map[string]any
			if !sent && json.Unmarshal(sc.Bytes(), &m) == nil && m["@message"] == "listening" && m["server"] == server {
				addr <- fmt.Sprint(m["address"])
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		return &Sidecar{Addr: a, PID: cmd.Process.Pid, Stop: func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }}, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, errors.New("no " + server + " listening line within 30s")
	}
}

// StatusKB reads the "key:" line (VmRSS, VmHWM, ...) of /proc/PID/status in
// KiB, and -1 when the process or the line is not there.
func StatusKB(pid int, key string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			if f := strings.Fields(v); len(f) >= 1 {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// ResetPeak resets pid's VmHWM to its current RSS (clear_refs 5) and returns
// that RSS in KiB.
func ResetPeak(pid int) int64 {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o644)
	return StatusKB(pid, "VmRSS")
}
