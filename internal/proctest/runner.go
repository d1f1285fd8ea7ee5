package proctest

import (
	"os"
	"sync"
	"syscall"
	"testing"

	"gopkg.in/yaml.v3"
)

// Runner holds the current run of a binary that a harness may start more
// than once (sidecartest's Restart). The zero value has no run. It is safe
// for concurrent use.
type Runner struct {
	mu   sync.Mutex
	proc *Process
}

// Start starts c as Start does and, when it comes up, makes it the current
// run.
func (r *Runner) Start(c Command, log *Log) (map[string]string, error) {
	p, addrs, err := Start(c, log)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	return addrs, nil
}

// Current is the current run; nil before the first successful Start.
func (r *Runner) Current() *Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc
}

// Running reports whether there is a current run that has not exited.
func (r *Runner) Running() bool {
	p := r.Current()
	return p != nil && p.Running()
}

// Signal sends sig to the current run, if any.
func (r *Runner) Signal(sig syscall.Signal) {
	if p := r.Current(); p != nil {
		p.Signal(sig)
	}
}

// Supervise registers in t.Cleanup what a harness does when the test ends:
// stop the process named name if it still runs (an unclean stop is a test
// error) and, when the test failed, log the last 200 lines of its output.
func Supervise(t testing.TB, name string, r *Runner, log *Log, stop func() error) {
	t.Cleanup(func() {
		if r.Running() {
			if err := stop(); err != nil {
				t.Errorf("proctest: %s did not stop cleanly: %v", name, err)
			}
		}
		if t.Failed() {
			t.Logf("%s logs:\n%s", name, log.Tail(200))
		}
	})
}

// WriteYAML writes v as YAML to path with mode perm, failing the test on
// error.
func WriteYAML(t testing.TB, path string, v any, perm os.FileMode) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatalf("proctest: %v", err)
	}
}
