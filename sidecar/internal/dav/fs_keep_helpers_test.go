package dav_test

// The checkpoint fixtures of the keep tests (fs_keep_test.go).

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
)

// keepEnv is an adversarial tree with checkpoints on (automatic too),
// their store beside the roots; tweak may adjust the Config further.
func keepEnv(t *testing.T, tweak func(*davfs.Config)) *sectree.Env {
	t.Helper()
	return sectree.NewEnv(t, "", nil, func(c *davfs.Config) {
		c.Checkpoints = davfs.CheckpointConfig{Dir: filepath.Join(filepath.Dir(c.ProjectsRoot), "store"), Automatic: true}
		if tweak != nil {
			tweak(c)
		}
	})
}

// keepWrite puts b at the host path p, making its directories.
func keepWrite(t *testing.T, p string, b []byte) {
	t.Helper()
	err := os.MkdirAll(filepath.Dir(p), 0o755)
	if err == nil {
		err = os.WriteFile(p, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// keepCheckpoint creates a checkpoint of ws the test needs.
func keepCheckpoint(t *testing.T, e *sectree.Env, ws davfs.Workspace, opts davfs.CheckpointOptions) davfs.Checkpoint {
	t.Helper()
	c, err := e.FS.CreateCheckpoint(context.Background(), ws, opts)
	if err != nil {
		t.Fatalf("CreateCheckpoint: %v", err)
	}
	return c
}
