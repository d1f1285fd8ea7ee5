package checkpoint

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/testtree"
)

// testConfig is what a test opens: the core's configuration and the
// store's, opened together as the sidecar does (openTest).
type testConfig struct {
	davfs.Config
	Checkpoints        Config
	CheckpointObserver Observer
}

// testFS is a davfs.FS with its checkpoint store: the store's calls and
// the core's on one value. Where both have a method of one name, the
// store's composition is the one tests mean (a delete with its automatic
// checkpoint).
type testFS struct {
	*Store
	*davfs.FS
}

// openTest opens the core and its store, the store's name denied when it
// sits under the projects root (the sidecar's wiring).
func openTest(c testConfig) (*testFS, error) {
	if n := DeniedName(c.Checkpoints.Dir, c.ProjectsRoot); n != "" {
		c.DeniedNames = append(slices.Clone(c.DeniedNames), n)
	}
	fs, err := davfs.Open(c.Config)
	if err != nil {
		return nil, err
	}
	st, err := New(fs, c.Checkpoints, Options{Logger: c.Logger, Now: c.Now, Observer: c.CheckpointObserver})
	if err != nil {
		fs.Close()
		return nil, err
	}
	return &testFS{Store: st, FS: fs}, nil
}

func (f *testFS) Close() error {
	f.Store.Close()
	return f.FS.Close()
}

// DeleteEntry is the store's delete (automatic checkpoint first).
func (f *testFS) DeleteEntry(ctx context.Context, ws davfs.Workspace, path, expectedRevision string, recursive bool) error {
	_, err := f.Store.DeleteEntry(ctx, ws, path, expectedRevision, DeleteOptions{Delete: davfs.DeleteOptions{Recursive: recursive}})
	return err
}

// DeleteProject is the store's project delete (automatic checkpoint first).
func (f *testFS) DeleteProject(ctx context.Context, name, confirmName string) error {
	_, err := f.Store.DeleteProject(ctx, name, confirmName, DeleteOptions{})
	return err
}

// env is a test layout: <tmp>/projects (the projects root), <tmp>/codex
// (CODEX_HOME, with secrets beside skills/) and <tmp>/outside (canaries).
type env struct {
	t        *testing.T
	tree     *testtree.Tree
	fs       *testFS
	dir      string
	projects string
	codex    string
	outside  string
}

func newEnv(t *testing.T, mod func(*testConfig)) *env {
	t.Helper()
	tr := testtree.Volumes(t)
	e := &env{t: t, tree: tr, dir: tr.Dir,
		projects: tr.Path("projects"), codex: tr.Path("codex"), outside: tr.Path("outside")}
	cfg := testConfig{Config: davfs.Config{ProjectsRoot: e.projects, CodexHome: e.codex,
		DeniedNames: []string{"node_modules", ".venv"}}}
	if mod != nil {
		mod(&cfg)
	}
	f, err := openTest(cfg)
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

func proj(name string) davfs.Workspace {
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
}

var global = davfs.Workspace{Scope: davfs.ScopeGlobal}

var bg = context.Background()

// wantErr asserts err is a davfs *Error with code and reason.
func wantErr(t *testing.T, err error, code davfs.Code, reason davfs.Reason) {
	t.Helper()
	var de *davfs.Error
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
