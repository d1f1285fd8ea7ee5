package gitinit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
)

func TestInit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: run make setup (apt-get install git)")
	}
	// A hostile global config must not reach the new repository.
	t.Setenv("HOME", t.TempDir())
	os.WriteFile(filepath.Join(os.Getenv("HOME"), ".gitconfig"), []byte("[init]\n\tdefaultBranch = evil\n\ttemplateDir = /nonexistent\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "p")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := New(Options{})(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD"))
	if err != nil || strings.TrimSpace(string(head)) != "ref: refs/heads/main" {
		t.Errorf("HEAD = %q, %v", head, err)
	}
}

func TestFailures(t *testing.T) {
	bin := t.TempDir()
	write := func(name, script string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"missing git", Options{Git: filepath.Join(bin, "nope")}},
		{"git fails", Options{Git: write("fail", "#!/bin/sh\necho boom >&2\nexit 1\n")}},
		{"git hangs", Options{Git: write("hang", "#!/bin/sh\nexec sleep 30\n"), Timeout: 200 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := New(tc.opts)(context.Background(), t.TempDir())
			var de *davfs.Error
			if !errors.As(err, &de) || de.Reason != davfs.ReasonGitInitFailed || de.Code != davfs.CodeInternal {
				t.Fatalf("err = %#v", err)
			}
			// Each failure is counted once by the sidecar's wrapper
			// (sidecar_git_init_failures_total, TestGitInitRollback).
			if strings.Contains(de.Message, bin) {
				t.Errorf("message %q", de.Message)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
