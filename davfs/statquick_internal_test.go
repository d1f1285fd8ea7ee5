package davfs

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStatQuickMatchesFullPath: Stat's allocation-free fast path either
// declines (symlinks, special files, cache misses, errors) or returns
// exactly the Entry of the full resolve+stat path, revision included.
func TestStatQuickMatchesFullPath(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxEditableFileSize = 64 })
	if !e.fs.useOpenat2 {
		t.Fatal("openat2 is not available on this kernel; the fast path cannot be tested")
	}
	e.write("projects/p/a.txt", "hello")
	e.write("projects/p/d/e/f.txt", "nested")
	e.write("projects/p/big.txt", strings.Repeat("x", 100))
	e.write("projects/p/bin.dat", "a\x00b")
	e.write("projects/p/linked.txt", "two links")
	must(t, os.Link(filepath.Join(e.dir, "projects/p/linked.txt"), filepath.Join(e.dir, "projects/p/d/hard.txt")))
	e.symlink(filepath.Join(e.outside, "canary.txt"), "projects/p/sym.txt")
	e.symlink(filepath.Join(e.outside), "projects/p/symdir")
	e.symlink(filepath.Join(e.dir, "projects/p"), "projects/q")
	must(t, unix.Mkfifo(filepath.Join(e.dir, "projects/p/fifo"), 0o644))
	time.Sleep(2 * cacheMinAge) // hashes of older files are cacheable

	ctx := context.Background()
	full := func(ws Workspace, p string) (Entry, error) {
		w, err := e.fs.resolve(ws, p)
		if err != nil {
			return Entry{}, err
		}
		return e.fs.stat(w)
	}
	cases := []struct {
		ws      Workspace
		path    string
		quickOK bool // after one full Stat warmed the hash cache
	}{
		{proj("p"), "a.txt", true},
		{proj("p"), "d", true},
		{proj("p"), "d/e", true},
		{proj("p"), "d/e/f.txt", true},
		{proj("p"), "big.txt", true},
		{proj("p"), "bin.dat", true},
		{proj("p"), "linked.txt", true},
		{proj("p"), "d/hard.txt", true},
		{proj("p"), "sym.txt", false},
		{proj("p"), "symdir", false},
		{proj("p"), "symdir/canary.txt", false},
		{proj("p"), "fifo", false},
		{proj("p"), "missing", false},
		{proj("p"), "a.txt/x", false},
		{proj("p"), "", false},
		{proj("p"), "node_modules/x", false},
		{proj("p"), "../p/a.txt", false},
		{proj("q"), "a.txt", false},
		{proj("nope"), "a.txt", false},
		{Workspace{Scope: ScopeGlobal}, "AGENTS.md", false},
	}
	for _, c := range cases {
		want, wantErr := full(c.ws, c.path)
		got, ok := e.fs.statQuick(c.ws, c.path)
		if ok != c.quickOK {
			t.Errorf("statQuick(%v, %q): ok=%v, want %v (full: %+v, %v)", c.ws, c.path, ok, c.quickOK, want, wantErr)
			continue
		}
		if !ok {
			continue
		}
		if wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("statQuick(%v, %q) = %+v; full path = %+v, %v", c.ws, c.path, got, want, wantErr)
		}
		viaStat, err := e.fs.Stat(ctx, c.ws, c.path)
		if err != nil || !reflect.DeepEqual(viaStat, want) {
			t.Errorf("Stat(%v, %q) = %+v, %v; want %+v", c.ws, c.path, viaStat, err, want)
		}
	}

	// A cold hash cache: the fast path declines, Stat reads the file.
	e.write("projects/p/cold.txt", "cold")
	if _, ok := e.fs.statQuick(proj("p"), "cold.txt"); ok {
		t.Error("statQuick of a file whose hash is not cached: ok=true")
	}
	if ent, err := e.fs.Stat(ctx, proj("p"), "cold.txt"); err != nil || ent.Revision == "" {
		t.Errorf("Stat(cold.txt) = %+v, %v", ent, err)
	}

	// The fallback resolution (no openat2) yields the same entries.
	fb2, err := Open(Config{ProjectsRoot: e.projects, CodexHome: e.codex, DisableOpenat2: true, MaxEditableFileSize: 64,
		DeniedNames: []string{"node_modules", ".venv"}})
	must(t, err)
	defer fb2.Close()
	for _, p := range []string{"a.txt", "d", "d/e/f.txt", "big.txt", "bin.dat", "linked.txt"} {
		want, err1 := e.fs.Stat(ctx, proj("p"), p)
		got, err2 := fb2.Stat(ctx, proj("p"), p)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Stat(%q): openat2 %+v, %v; fallback %+v, %v", p, want, err1, got, err2)
		}
	}
}
