package proctest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Log collects a process's output, or any log written and read by several
// goroutines (an in-process logger's sink); it is safe for concurrent use.
// The zero value is ready to use.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Lines returns the JSON lines of the log, decoded (other lines skipped).
func (l *Log) Lines() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// WaitFor waits up to timeout for substr to appear and reports whether it
// did. Output reaches the log through a pipe, so a line the process wrote
// before answering a call may arrive a moment after the answer.
func (l *Log) WaitFor(substr string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if strings.Contains(l.String(), substr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Tail returns the last n lines of the log, saying how many were cut.
func (l *Log) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"... (" + strconv.Itoa(len(lines)-n) + " lines cut)"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
