package dav_test

// The checkpoint fixtures of the keep tests (fs_keep_test.go), as davfs's
// checkpoint tests have them.

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentworkspace/files/davfs"
)

func ckEnv(t *testing.T, layout []string, tweak func(*davfs.Config)) *secEnv {
	t.Helper()
	return secNewEnv(t, "", layout, func(c *davfs.Config) {
		c.Checkpoints = davfs.CheckpointConfig{Dir: filepath.Join(filepath.Dir(c.ProjectsRoot), "store"), Automatic: true}
		if tweak != nil {
			tweak(c)
		}
	})
}

func ckWrite(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func ckCreate(t *testing.T, e *secEnv, ws davfs.Workspace, opts davfs.CheckpointOptions) davfs.Checkpoint {
	t.Helper()
	c, err := e.fs.CreateCheckpoint(context.Background(), ws, opts)
	if err != nil {
		t.Fatalf("CreateCheckpoint: %v", err)
	}
	return c
}
