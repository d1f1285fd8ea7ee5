package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentworkspace/files/contracts/errtable"
)

func TestRecordToFileAndLog(t *testing.T) {
	var logBuf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logBuf, JSONFormat: true})
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l, err := Open(log, path, func() time.Time { return fixed })
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Record(context.Background(), Record{RequestID: "r", Operator: "alice", AgentID: "codex-a", WorkspaceScope: "GLOBAL",
				Action: "move_entry", SourcePath: "config.toml", DestinationPath: "skills/x.md", GRPCCode: "OK", DurationMS: 1.5})
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"time": "2026-01-02T03:04:05Z", "request_id": "r", "operator": "alice", "agent_id": "codex-a",
		"workspace_scope": "GLOBAL", "project_name": "", "action": "move_entry", "source_path": Redacted,
		"destination_path": "skills/x.md", "result": "ok", "grpc_code": "OK", "duration_ms": 1.5}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v", k, rec[k], v)
		}
	}
	if strings.Contains(string(data), "config.toml") || strings.Contains(logBuf.String(), "config.toml") {
		t.Error("a CODEX_HOME name outside the allowlist was written")
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if strings.Count(logBuf.String(), `"@message":"audit"`) != 50 {
		t.Error("records missing from the log")
	}
}

func TestOpenFailsForBadPath(t *testing.T) {
	if _, err := Open(nil, filepath.Join(t.TempDir(), "missing", "audit.jsonl"), nil); err == nil || !strings.Contains(err.Error(), "audit.file") {
		t.Errorf("Open = %v", err)
	}
}

// Rotation by renaming (logrotate's default "create" mode) or deleting the
// file: the next record starts a new file at the configured path, and the
// rotated file keeps what it had.
func TestFileRotatedByRename(t *testing.T) {
	var logBuf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logBuf, JSONFormat: true})
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(log, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rec := func(id string) {
		l.Record(context.Background(), Record{RequestID: id, Operator: "alice", AgentID: "codex-a", Action: "delete_project", ProjectName: "p", GRPCCode: "OK"})
	}
	ids := func(p string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: %q is not JSON", p, line)
			}
			out = append(out, m["request_id"].(string))
		}
		return strings.Join(out, ",")
	}
	rec("1")
	rec("2")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	rec("3")
	if got := ids(path + ".1"); got != "1,2" {
		t.Errorf("rotated file has %s, want 1,2", got)
	}
	if got := ids(path); got != "3" {
		t.Errorf("new file has %s, want 3", got)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new file: %v %v", fi, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	rec("4")
	rec("5")
	if got := ids(path); got != "4,5" {
		t.Errorf("file after delete has %s, want 4,5", got)
	}
	if got := ids(path + ".1"); got != "1,2" {
		t.Errorf("rotated file changed: %s", got)
	}
	// A path that cannot be reopened: the record still reaches the log, the
	// failure is logged (without the path), and the next record retries.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	rec("6")
	if !strings.Contains(logBuf.String(), `"request_id":"6"`) {
		t.Error("record 6 missing from the log")
	}
	if !strings.Contains(logBuf.String(), "audit file") || strings.Contains(logBuf.String(), dir) {
		t.Errorf("reopen failure not logged, or logged with the path:\n%s", logBuf.String())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	rec("7")
	if got := ids(path); got != "7" {
		t.Errorf("file after the failed reopen has %s, want 7", got)
	}
}

// CodeForHTTPStatus reads the one error table: every status a reason maps
// to on REST gives a code some reason with that status has.
func TestCodeForHTTPStatusFollowsErrtable(t *testing.T) {
	for _, r := range errtable.Reasons() {
		row := errtable.For(r)
		got := CodeForHTTPStatus(row.REST)
		ok := false
		for _, r2 := range errtable.Reasons() {
			if row2 := errtable.For(r2); (row2.REST == row.REST || row2.WebDAV == row.REST) && row2.Code.String() == got {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: CodeForHTTPStatus(%d) = %s, which no reason with that status has", r, row.REST, got)
		}
	}
	for status, want := range map[int]string{200: "OK", 204: "OK", 400: "InvalidArgument", 401: "Unauthenticated", 403: "PermissionDenied",
		404: "NotFound", 409: "Aborted", 413: "ResourceExhausted", 428: "FailedPrecondition", 503: "Unavailable", 504: "DeadlineExceeded", 500: "Internal"} {
		if got := CodeForHTTPStatus(status); got != want {
			t.Errorf("CodeForHTTPStatus(%d) = %s, want %s", status, got, want)
		}
	}
}
