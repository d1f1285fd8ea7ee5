package dav_test

// The checkpoint fixtures of the keep tests (fs_keep_test.go).

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/sectree"
)

// keepTree is an adversarial tree with its checkpoint store beside the
// core, as the sidecar builds them.
type keepTree struct {
	*sectree.Env
	ck *checkpoint.Store
}

// keepConfig is what a keep test adjusts: the core's config and the
// store's config and options.
type keepConfig struct {
	*davfs.Config
	Checkpoints *checkpoint.Config
	Options     *checkpoint.Options
}

// keepEnv is an adversarial tree with checkpoints on (automatic too),
// their store beside the roots; tweak may adjust the configs further.
func keepEnv(t *testing.T, tweak func(keepConfig)) *keepTree {
	t.Helper()
	var ck checkpoint.Config
	var opts checkpoint.Options
	var core davfs.Config
	e := sectree.NewEnv(t, "", nil, func(c *davfs.Config) {
		ck = checkpoint.Config{Dir: filepath.Join(filepath.Dir(c.ProjectsRoot), "store"), Automatic: true}
		if tweak != nil {
			tweak(keepConfig{c, &ck, &opts})
		}
		if n := checkpoint.DeniedName(ck.Dir, c.ProjectsRoot); n != "" {
			c.DeniedNames = append(c.DeniedNames, n)
		}
		core = *c
	})
	opts.Logger, opts.Now = cmp.Or(opts.Logger, core.Logger), core.Now
	st, err := checkpoint.New(e.FS, ck, opts)
	if err != nil {
		t.Fatalf("checkpoint.New: %v", err)
	}
	t.Cleanup(st.Close)
	return &keepTree{Env: e, ck: st}
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
func keepCheckpoint(t *testing.T, e *keepTree, ws davfs.Workspace, opts checkpoint.CheckpointOptions) checkpoint.Checkpoint {
	t.Helper()
	c, err := e.ck.CreateCheckpoint(context.Background(), ws, opts)
	if err != nil {
		t.Fatalf("CreateCheckpoint: %v", err)
	}
	return c
}
