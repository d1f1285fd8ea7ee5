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
)

func TestRedactGlobalPath(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "",
		"AGENTS.md":           "AGENTS.md",
		"skills":              "skills",
		"skills/":             "skills/",
		"skills/a/b.md":       "skills/a/b.md",
		"auth.json":           Redacted,
		"config.toml":         Redacted,
		"sessions/x.jsonl":    Redacted,
		"skillsX/a":           Redacted,
		"AGENTS.md.bak":       Redacted,
		"skills/../auth.json": Redacted,
		"/skills/x":           "/skills/x",
	} {
		if got := RedactGlobalPath(in); got != want {
			t.Errorf("RedactGlobalPath(%q) = %q, want %q", in, got, want)
		}
	}
}

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
