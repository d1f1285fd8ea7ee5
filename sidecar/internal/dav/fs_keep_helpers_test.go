package dav_test

// The checkpoint fixtures of the keep tests (fs_keep_test.go), as davfs's
// checkpoint tests have them.

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
)

func ckEnv(t *testing.T, layout []string, tweak func(ckConfig)) *secEnv {
	t.Helper()
	return secNewEnvWith(t, "", layout, func(c ckConfig) {
		*c.Checkpoints = checkpoint.Config{Dir: filepath.Join(filepath.Dir(c.ProjectsRoot), "store"), Automatic: true}
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

func ckCreate(t *testing.T, e *secEnv, ws davfs.Workspace, opts checkpoint.CheckpointOptions) checkpoint.Checkpoint {
	t.Helper()
	c, err := e.ck.CreateCheckpoint(context.Background(), ws, opts)
	if err != nil {
		t.Fatalf("CreateCheckpoint: %v", err)
	}
	return c
}
