package davfs_test

// The adversarial fixtures (internal/sectree) under the names davfs's
// benchmarks and checkpoint tests use. The security, race and fuzz suites,
// which drive the WebDAV adapter too, live in sidecar/internal/dav.

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
)

// secEnv is one tree plus an FS opened over it.
type secEnv struct {
	base string
	fs   *davfs.FS
}

func (e *secEnv) projects() string { return filepath.Join(e.base, "projects") }
func (e *secEnv) codex() string    { return filepath.Join(e.base, "codex") }

// secNewEnv is sectree.NewEnv.
func secNewEnv(tb testing.TB, base string, layout []string, tweak func(*davfs.Config)) *secEnv {
	tb.Helper()
	e := sectree.NewEnv(tb, base, layout, tweak)
	return &secEnv{base: e.Base, fs: e.FS}
}

// secRev is sectree.Rev.
func secRev(ctx context.Context, e *secEnv, ws davfs.Workspace, p string) string {
	return sectree.Rev(ctx, &sectree.Env{Base: e.base, FS: e.fs}, ws, p)
}

type secNode = sectree.Node

var (
	secBaseLayout  = sectree.BaseLayout
	secBuild       = sectree.Build
	secCheckDavErr = sectree.CheckDavErr
	secConfig      = sectree.Config
	secContent     = sectree.Content
	secDiff        = sectree.Diff
	secNoSecret    = sectree.NoSecret
	secProject     = sectree.Project
	secSnapshot    = sectree.Snapshot
	secTrunc       = sectree.Trunc
	secTry         = sectree.Try
	secUnder       = sectree.Under
)
