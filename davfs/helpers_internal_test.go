package davfs

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentworkspace/files/internal/testtree"
)

// env is a test layout: <tmp>/projects (the projects root), <tmp>/codex
// (CODEX_HOME, with secrets beside skills/) and <tmp>/outside (canaries).
type env struct {
	t        *testing.T
	tree     *testtree.Tree
	fs       *FS
	dir      string
	projects string
	codex    string
	outside  string
}

var modes = []struct {
	name    string
	disable bool
}{{"openat2", false}, {"fallback", true}}

// forModes runs fn once with openat2 resolution and once with the
// per-segment O_NOFOLLOW fallback.
func forModes(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.DisableOpenat2 = m.disable })
			if !m.disable && !e.fs.useOpenat2 {
				t.Fatal("openat2 is not available on this kernel; the openat2 mode cannot be tested")
			}
			fn(t, e)
		})
	}
}

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	tr := testtree.Volumes(t)
	e := &env{t: t, tree: tr, dir: tr.Dir,
		projects: tr.Path("projects"), codex: tr.Path("codex"), outside: tr.Path("outside")}
	cfg := Config{ProjectsRoot: e.projects, CodexHome: e.codex,
		DeniedNames: []string{"node_modules", ".venv"}}
	if mod != nil {
		mod(&cfg)
	}
	f, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	e.fs = f
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// write creates rel (relative to the env dir) with content, making parents.
func (e *env) write(rel, content string) { e.t.Helper(); e.tree.Write(rel, content) }

func (e *env) mkdir(rel string) { e.t.Helper(); e.tree.Mkdir(rel) }

// symlink makes rel a symlink to target (relative to the env dir, made
// absolute): targets are always inside the test's temp tree.
func (e *env) symlink(target, rel string) { e.t.Helper(); e.tree.Symlink(target, rel) }

func (e *env) read(rel string) string { e.t.Helper(); return e.tree.Read(rel) }

func (e *env) exists(rel string) bool { return e.tree.Exists(rel) }

// checkCanaries asserts nothing outside the roots changed.
func (e *env) checkCanaries() { e.t.Helper(); e.tree.CheckCanaries() }

func proj(name string) Workspace { return Workspace{Scope: ScopeProject, Project: name} }

var global = Workspace{Scope: ScopeGlobal}

var bg = context.Background()

// wantErr asserts err is a davfs *Error with code and reason.
func wantErr(t *testing.T, err error, code Code, reason Reason) {
	t.Helper()
	var de *Error
	if !errors.As(err, &de) {
		t.Fatalf("want %v/%s, got non-davfs error %v", code, reason, err)
	}
	if de.Code != code || de.Reason != reason {
		t.Fatalf("want %v/%s, got %v/%s (%q)", code, reason, de.Code, de.Reason, de.Message)
	}
	// Messages never carry a host path (every test tree is under TempDir).
	if strings.Contains(de.Message, os.TempDir()+"/") || de.Message == "" {
		t.Fatalf("unsafe or empty message %q", de.Message)
	}
}

// deleteWith is DeleteEntryWith.
func deleteWith(f *FS, ctx context.Context, ws Workspace, path, expectedRevision string, opts DeleteOptions) error {
	return f.DeleteEntryWith(ctx, ws, path, expectedRevision, opts)
}
