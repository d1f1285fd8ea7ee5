package checkpoint

import (
	"path/filepath"
	"testing"

	"github.com/agentworkspace/files/internal/sectree"
)

// The adversarial trees of the checkpoint suites are internal/sectree's
// (canaries, traps, the layout notation); secEnv opens the core and its
// checkpoint store over one, as the sidecar does.

// secEnv is one tree plus an FS and its store opened over it.
type secEnv struct {
	base string
	fs   *testFS
}

func (e *secEnv) projects() string { return filepath.Join(e.base, "projects") }
func (e *secEnv) codex() string    { return filepath.Join(e.base, "codex") }

// secNewEnv builds sectree's base layout + layout in a fresh temp dir (or
// base) and opens the core and its store over it. tweak may adjust the
// config (DisableOpenat2, Checkpoints ...).
func secNewEnv(tb testing.TB, base string, layout []string, tweak func(*testConfig)) *secEnv {
	tb.Helper()
	if base == "" {
		base = tb.TempDir()
	}
	sectree.Build(tb, base, sectree.BaseLayout)
	sectree.Build(tb, base, layout)
	cfg := secConfig(base)
	if tweak != nil {
		tweak(&cfg)
	}
	f, err := openTest(cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	return &secEnv{base: base, fs: f}
}

// secConfig is sectree's configuration of the tree at base, no store.
func secConfig(base string) testConfig { return testConfig{Config: sectree.Config(base)} }
