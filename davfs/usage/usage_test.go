package usage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/usage"
	"github.com/agentworkspace/files/internal/testtree"
)

type env struct {
	tree *testtree.Tree
	fs   *davfs.FS
}

func newEnv(t *testing.T) *env {
	t.Helper()
	tr := testtree.Volumes(t)
	f, err := davfs.Open(davfs.Config{ProjectsRoot: tr.Path("projects"), CodexHome: tr.Path("codex"),
		DeniedNames: []string{"node_modules"}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return &env{tree: tr, fs: f}
}

func proj(name string) davfs.Workspace {
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
}

var global = davfs.Workspace{Scope: davfs.ScopeGlobal}

// The walk counts what a listing shows and nothing else: no denylisted
// name, no symlink (nor what it points at), no secret beside skills/, a
// hard-linked file once; nothing changes.
func TestScanCountsOnlyVisibleNames(t *testing.T) {
	e := newEnv(t)
	tr := e.tree
	tr.Write("projects/p/a.txt", "12345")
	tr.Write("projects/p/sub/b.bin", strings.Repeat("x", 1000))
	tr.Write("projects/p/node_modules/big", strings.Repeat("y", 5000))
	tr.Write("projects/p/.git/config", "[core]\n") // denied by default: not listed, not counted
	tr.Symlink("../../outside/canary.txt", "projects/p/link")
	tr.Symlink("../../outside", "projects/p/dirlink")
	if err := os.Link(tr.Path("projects/p/a.txt"), tr.Path("projects/p/sub/hard.txt")); err != nil {
		t.Fatal(err)
	}
	tr.Write("codex/skills/s/SKILL.md", "---\nname: s\n---\n")
	tr.Write("codex/AGENTS.md", "agents\n")
	before := tr.Snap()

	got, err := usage.Scan(context.Background(), e.fs, proj("p"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (usage.Totals{Bytes: 5 + 1000, Files: 2, Dirs: 1}); got != want {
		t.Errorf("project p: %+v, want %+v", got, want)
	}
	g, err := usage.Scan(context.Background(), e.fs, global)
	if err != nil {
		t.Fatal(err)
	}
	if want := (usage.Totals{Bytes: int64(len("---\nname: s\n---\n") + len("agents\n")), Files: 2, Dirs: 2}); g != want {
		t.Errorf("global: %+v, want %+v (auth.json and config.toml never counted)", g, want)
	}
	if _, err := usage.Scan(context.Background(), e.fs, proj("missing")); davfs.ReasonOf(err) != davfs.ReasonProjectNotFound {
		t.Errorf("missing project: %v", err)
	}
	if _, err := usage.Scan(context.Background(), e.fs, proj("..")); err == nil {
		t.Error("a bad project name was walked")
	}
	testtree.Same(t, "after the scans", before, tr.Snap())
	tr.CheckCanaries()
}

// A mount point inside a project is not crossed.
func TestScanDoesNotCrossMounts(t *testing.T) {
	e := newEnv(t)
	e.tree.Write("projects/p/a.txt", "abc")
	mnt := e.tree.Path("projects/p/mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs (the davfs tests run as root): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(mnt, "inside.txt"), []byte("not counted"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := usage.Scan(context.Background(), e.fs, proj("p"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Files != 1 || got.Bytes != 3 {
		t.Errorf("totals %+v: the mount was crossed", got)
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// The cache answers from what it kept until an event makes a workspace
// stale; other workspaces stay cached; MaxAge bounds what no event saw.
func TestCacheAdjustedByEvents(t *testing.T) {
	e := newEnv(t)
	e.tree.Write("projects/p/a.txt", "12345")
	e.tree.Write("projects/q/b.txt", "1")
	ck := &clock{t: time.Unix(1000, 0)}
	c := usage.NewCache(e.fs, usage.Config{MaxAge: time.Minute, Now: ck.now})
	ctx := context.Background()
	get := func(ws davfs.Workspace) usage.Totals {
		t.Helper()
		v, err := c.Get(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := get(proj("p")); v.Bytes != 5 {
		t.Fatalf("first: %+v", v)
	}
	get(proj("q"))
	e.tree.Write("projects/p/more.txt", "67890")
	if v := get(proj("p")); v.Bytes != 5 {
		t.Errorf("without an event the cached totals answer: %+v", v)
	}
	scans := c.Stats().Scans
	c.Changed(proj("p"))
	if _, ok := c.Cached(proj("p")); ok {
		t.Error("a changed workspace is still cached")
	}
	if v := get(proj("p")); v.Bytes != 10 || v.Files != 2 {
		t.Errorf("after the event: %+v", v)
	}
	get(proj("q"))
	if s := c.Stats(); s.Scans != scans+1 {
		t.Errorf("%d walks after one event, want 1 (q stays cached)", s.Scans-scans)
	}
	e.tree.Write("projects/p/third.txt", "x")
	ck.t = ck.t.Add(2 * time.Minute)
	if v := get(proj("p")); v.Files != 3 {
		t.Errorf("past MaxAge: %+v", v)
	}
}

// After events were lost (overflow) every workspace is walked again, one
// walk each however many ask at once.
func TestCacheRescanOnOverflow(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"a", "b", "c"} {
		e.tree.Write("projects/"+p+"/f.txt", "1")
	}
	c := usage.NewCache(e.fs, usage.Config{})
	ctx := context.Background()
	for _, p := range []string{"a", "b", "c"} {
		if _, err := c.Get(ctx, proj(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"a", "b", "c"} {
		e.tree.Write("projects/"+p+"/g.txt", "22")
	}
	c.Overflow()
	scans := c.Stats().Scans
	done := make(chan usage.Totals, 30)
	for i := 0; i < 30; i++ {
		go func(p string) {
			v, err := c.Get(ctx, proj(p))
			if err != nil {
				t.Error(err)
			}
			done <- v
		}([]string{"a", "b", "c"}[i%3])
	}
	for i := 0; i < 30; i++ {
		if v := <-done; v.Files != 2 || v.Bytes != 3 {
			t.Errorf("after the overflow: %+v", v)
		}
	}
	if n := c.Stats().Scans - scans; n < 3 || n > 6 {
		t.Errorf("%d walks for 3 workspaces asked 10 times each after an overflow", n)
	}
	if s := c.Stats(); s.Overflows != 1 {
		t.Errorf("overflows %d", s.Overflows)
	}
	n := 0
	c.Each(func(davfs.Workspace, usage.Totals) { n++ })
	if n != 3 {
		t.Errorf("Each saw %d fresh workspaces, want 3", n)
	}
}

// A failed walk (a deleted project) is not kept.
func TestCacheKeepsNoError(t *testing.T) {
	e := newEnv(t)
	c := usage.NewCache(e.fs, usage.Config{})
	if _, err := c.Get(context.Background(), proj("later")); davfs.ReasonOf(err) != davfs.ReasonProjectNotFound {
		t.Fatalf("missing: %v", err)
	}
	e.tree.Write("projects/later/x", "abc")
	if v, err := c.Get(context.Background(), proj("later")); err != nil || v.Bytes != 3 {
		t.Errorf("after create: %+v %v", v, err)
	}
}

// The volume's figures are statfs of the root's fd: a 4 MiB tmpfs says so.
func TestVolumeStatfs(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatalf("mount a tmpfs (the davfs tests run as root): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	for _, d := range []string{"projects", "codex"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := davfs.Open(davfs.Config{ProjectsRoot: filepath.Join(dir, "projects"), CodexHome: filepath.Join(dir, "codex")})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := usage.VolumeOf(f, davfs.ScopeProject)
	if err != nil {
		t.Fatal(err)
	}
	if v.Size != 4<<20 || v.Free <= 0 || v.Free > v.Size {
		t.Fatalf("empty 4 MiB tmpfs: %+v", v)
	}
	if err := os.WriteFile(filepath.Join(dir, "projects", "fill"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := usage.VolumeOf(f, davfs.ScopeProject)
	if err != nil {
		t.Fatal(err)
	}
	if d := v.Free - w.Free; d < 1<<20 || d > 1<<20+64<<10 {
		t.Errorf("free space fell by %d after a 1 MiB write: %+v -> %+v", d, v, w)
	}
}
