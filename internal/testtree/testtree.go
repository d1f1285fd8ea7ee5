// Package testtree is a directory of test files: paths are slash-separated
// and relative to the tree's root, parents are made as needed, and every
// failure fails the test. Volumes lays out what davfs serves in tests.
// Symlinks it makes point inside the tree only.
package testtree

import (
	"os"
	"path/filepath"
	"testing"
)

// Tree is a test's directory (under t.TempDir()).
type Tree struct {
	t   testing.TB
	Dir string
}

// New returns an empty tree in a fresh t.TempDir().
func New(t testing.TB) *Tree { return &Tree{t: t, Dir: t.TempDir()} }

// canaries are the files Volumes writes and CheckCanaries checks:
// CODEX_HOME's secrets beside skills/ and one file outside both roots.
func canaries() map[string]string {
	return map[string]string{
		"outside/canary.txt": "CANARY", "codex/auth.json": "SECRET-AUTH", "codex/config.toml": "SECRET-CONFIG"}
}

// Volumes returns the layout davfs is tested on: projects/ (the projects
// root), codex/ (CODEX_HOME, with secrets beside skills/) and outside/
// (a canary), each with its canaries.
func Volumes(t testing.TB) *Tree {
	tr := New(t)
	for _, d := range []string{"projects", "codex", "outside"} {
		tr.Mkdir(d)
	}
	for rel, content := range canaries() {
		tr.Write(rel, content)
	}
	return tr
}

// Path is rel's host path.
func (tr *Tree) Path(rel string) string { return filepath.Join(tr.Dir, filepath.FromSlash(rel)) }

// Write creates rel with content, making parents.
func (tr *Tree) Write(rel, content string) {
	tr.t.Helper()
	p := tr.Path(rel)
	tr.must(os.MkdirAll(filepath.Dir(p), 0o755))
	tr.must(os.WriteFile(p, []byte(content), 0o644))
}

// Mkdir makes the directory rel and its parents.
func (tr *Tree) Mkdir(rel string) {
	tr.t.Helper()
	tr.must(os.MkdirAll(tr.Path(rel), 0o755))
}

// Symlink makes rel a symlink to target (a path in the tree, made
// absolute): a target is always inside the test's temp tree.
func (tr *Tree) Symlink(target, rel string) {
	tr.t.Helper()
	p := tr.Path(rel)
	tr.must(os.MkdirAll(filepath.Dir(p), 0o755))
	tr.must(os.Symlink(tr.Path(target), p))
}

// Read returns rel's content.
func (tr *Tree) Read(rel string) string {
	tr.t.Helper()
	b, err := os.ReadFile(tr.Path(rel))
	tr.must(err)
	return string(b)
}

// Exists reports whether rel exists (not following a final symlink).
func (tr *Tree) Exists(rel string) bool {
	_, err := os.Lstat(tr.Path(rel))
	return err == nil
}

// CheckCanaries fails the test if a canary of Volumes changed.
func (tr *Tree) CheckCanaries() {
	tr.t.Helper()
	for rel, want := range canaries() {
		tr.checkOne(rel, want)
	}
}

// CheckOutside fails the test if the canary outside both roots changed
// (for tests that rewrite CODEX_HOME's secrets themselves).
func (tr *Tree) CheckOutside() {
	tr.t.Helper()
	tr.checkOne("outside/canary.txt", canaries()["outside/canary.txt"])
}

func (tr *Tree) checkOne(rel, want string) {
	tr.t.Helper()
	if got := tr.Read(rel); got != want {
		tr.t.Fatalf("canary %s changed: %q", rel, got)
	}
}

func (tr *Tree) must(err error) {
	tr.t.Helper()
	if err != nil {
		tr.t.Fatal(err)
	}
}

// Of returns a fresh tree holding exactly files (rel → content): what a
// test expects a tree to hold, to compare Snap of both.
func Of(t testing.TB, files map[string]string) *Tree {
	t.Helper()
	tr := New(t)
	for rel, content := range files {
		tr.Write(rel, content)
	}
	return tr
}

// Snap is Snap of the tree's root.
func (tr *Tree) Snap(opts ...Option) Snapshot {
	tr.t.Helper()
	return Snap(tr.t, tr.Dir, opts...)
}
