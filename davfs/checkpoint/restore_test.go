package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
	"golang.org/x/sys/unix"
)

// A restore verifies every object it will use before its first change
// (issue #23: a restore over one damaged object rewrote the first file,
// then answered 500 "nothing was written to it").

// ckrEnv: a project p holding a.txt and m.txt (packed) and z/big.bin (a
// loose object), checkpointed with automatic checkpoints on, then
// changed so that a restore rewrites all three (a.txt first) and removes
// new.txt.
func ckrEnv(t *testing.T) (*env, Checkpoint, *ckManifest) {
	t.Helper()
	e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.Automatic = true })
	e.write("projects/p/a.txt", "A1")
	e.write("projects/p/m.txt", "M1")
	e.write("projects/p/z/big.bin", strings.Repeat("Z", 64<<10))
	c, err := e.fs.CreateCheckpoint(bg, proj("p"), CheckpointOptions{})
	must(t, err)
	m, err := e.fs.ck.readManifest(proj("p"), c.ID)
	must(t, err)
	e.write("projects/p/a.txt", "A2")
	e.write("projects/p/m.txt", "M2")
	e.write("projects/p/z/big.bin", "small now")
	e.write("projects/p/new.txt", "N")
	return e, c, m
}

func ckrEntry(t *testing.T, m *ckManifest, path string) ckEntry {
	t.Helper()
	for _, e := range m.Entries {
		if e.Path == path {
			return e
		}
	}
	t.Fatalf("no entry %s", path)
	return ckEntry{}
}

// ckrObject is the host path of the loose object of big.bin; ckrPack the
// pack of the small files.
func ckrObject(e *env, m *ckManifest) string {
	h := ""
	for _, x := range m.Entries {
		if x.Path == "z/big.bin" {
			h = x.Hash
		}
	}
	return filepath.Join(e.dir, "store", "objects", h[:2], h)
}

func ckrPack(e *env, m *ckManifest) string {
	for _, x := range m.Entries {
		if x.Pack != "" {
			return filepath.Join(e.dir, "store", "packs", x.Pack+".pack")
		}
	}
	return ""
}

// ckrLastPacked is the small file stored last in the pack.
func ckrLastPacked(t *testing.T, m *ckManifest) ckEntry {
	a, mt := ckrEntry(t, m, "a.txt"), ckrEntry(t, m, "m.txt")
	if a.Off > mt.Off {
		return a
	}
	return mt
}

// flipAt changes one byte of the file p at off, keeping its size.
func flipAt(t *testing.T, p string, off int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	must(t, err)
	b[0] ^= 0xff
	_, err = f.WriteAt(b, off)
	must(t, err)
}

func TestCheckpointRestoreVerifiesObjectsFirst(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, e *env, m *ckManifest)
		path   string // named in the error
	}{
		{"loose object: one byte changed", func(t *testing.T, e *env, m *ckManifest) { flipAt(t, ckrObject(e, m), 4096) }, "z/big.bin"},
		{"loose object: truncated", func(t *testing.T, e *env, m *ckManifest) { must(t, os.Truncate(ckrObject(e, m), 10)) }, "z/big.bin"},
		{"loose object: longer", func(t *testing.T, e *env, m *ckManifest) {
			f, err := os.OpenFile(ckrObject(e, m), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			f.WriteString("more")
			f.Close()
		}, "z/big.bin"},
		{"loose object: missing", func(t *testing.T, e *env, m *ckManifest) { must(t, os.Remove(ckrObject(e, m))) }, "z/big.bin"},
		{"loose object: a symlink to a canary", func(t *testing.T, e *env, m *ckManifest) {
			p := ckrObject(e, m)
			must(t, os.Remove(p))
			must(t, os.Symlink(filepath.Join(e.outside, "canary.txt"), p))
		}, "z/big.bin"},
		{"loose object: hard-linked", func(t *testing.T, e *env, m *ckManifest) {
			must(t, os.Link(ckrObject(e, m), filepath.Join(e.dir, "store", "extra-link")))
		}, "z/big.bin"},
		{"pack: the second file's byte changed", func(t *testing.T, e *env, m *ckManifest) {
			flipAt(t, ckrPack(e, m), ckrEntry(t, m, "m.txt").Off)
		}, "m.txt"},
		{"pack: truncated inside its last file", func(t *testing.T, e *env, m *ckManifest) {
			must(t, os.Truncate(ckrPack(e, m), ckrLastPacked(t, m).Off+1))
		}, "last packed"},
		{"pack: missing", func(t *testing.T, e *env, m *ckManifest) { must(t, os.Remove(ckrPack(e, m))) }, "a.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, c, m := ckrEnv(t)
			ws := proj("p")
			tc.damage(t, e, m)
			if tc.path == "last packed" {
				tc.path = ckrLastPacked(t, m).Path
			}
			before := ckfTree(t, e.projects)
			listed, err := e.fs.ListCheckpoints(bg, ws)
			must(t, err)
			for _, path := range []string{"", tc.path} {
				_, err := e.fs.RestoreCheckpoint(bg, ws, c.ID, path, RestoreOptions{})
				wantErr(t, err, davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged)
				if !strings.Contains(err.Error(), `"`+tc.path+`"`) || !strings.Contains(err.Error(), "nothing was restored") {
					t.Fatalf("restore %q: %v, want %s named", path, err, tc.path)
				}
				ckfSame(t, "after a refused restore", before, ckfTree(t, e.projects))
			}
			// The undo checkpoints it took are gone again.
			after, err := e.fs.ListCheckpoints(bg, ws)
			must(t, err)
			if len(after) != len(listed) {
				t.Fatalf("checkpoints %d → %d: a refused restore left its undo checkpoint", len(listed), len(after))
			}
			e.checkCanaries()
			// A restore of a part whose objects are intact still works.
			if intact := map[string]string{"a.txt": "m.txt", "m.txt": "a.txt", "z/big.bin": "a.txt"}[tc.path]; !strings.Contains(tc.name, "pack: missing") {
				if _, err := e.fs.RestoreCheckpoint(bg, ws, c.ID, intact, RestoreOptions{}); err != nil {
					t.Fatalf("restore of an intact file: %v", err)
				}
				if got := e.read("projects/p/" + intact); !strings.HasSuffix(got, "1") {
					t.Fatalf("%s = %q", intact, got)
				}
			}
		})
	}
}

// An object that changes in the store after the verification (the agent
// writes it while the restore runs) is caught while it is copied: that
// file keeps what it held, no temp file is left, and the restore stops.
func TestCheckpointRestoreObjectChangedAfterVerify(t *testing.T) {
	e, c, m := ckrEnv(t)
	obj := ckrObject(e, m)
	restoreTestHook = func(stage string) {
		if stage == "verified" {
			flipAt(t, obj, 100)
		}
	}
	t.Cleanup(func() { restoreTestHook = nil })
	_, err := e.fs.RestoreCheckpoint(bg, proj("p"), c.ID, "", RestoreOptions{})
	wantErr(t, err, davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged)
	if !strings.Contains(err.Error(), "changed in the store during the restore") {
		t.Fatalf("error: %v", err)
	}
	if got := e.read("projects/p/z/big.bin"); got != "small now" {
		t.Fatalf("big.bin = %q: wrong bytes committed", got[:min(len(got), 20)])
	}
	ents, err := os.ReadDir(filepath.Join(e.projects, "p", "z"))
	must(t, err)
	if len(ents) != 1 {
		t.Fatalf("z/ holds %v: a temp file was left", ents)
	}
	e.checkCanaries()
}

// Checkpoint restore and compare: a write landing between the undo
// checkpoint and the restore is never lost; an in-place write after the
// live comparison is never overwritten or removed.

// ckAutoEnv is an env with automatic checkpoints and a store beside the
// roots (<tmp>/store).
func ckAutoEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, func(c *testConfig) {
		c.Checkpoints = Config{Dir: filepath.Join(filepath.Dir(c.ProjectsRoot), "store"), Automatic: true}
	})
}

// setRestoreHook runs fn once at stage of the next restore. Not parallel:
// the hook is a package variable.
func setRestoreHook(t *testing.T, stage string, fn func()) {
	t.Helper()
	done := false
	restoreTestHook = func(s string) {
		if s == stage && !done {
			done = true
			fn()
		}
	}
	t.Cleanup(func() { restoreTestHook = nil })
}

// inPlace rewrites an existing file without replacing its inode.
func inPlace(t *testing.T, p, content string) {
	t.Helper()
	before, err := os.Stat(p)
	must(t, err)
	must(t, os.WriteFile(p, []byte(content), 0o644))
	after, err := os.Stat(p)
	must(t, err)
	if !os.SameFile(before, after) {
		t.Fatal("the write replaced the file; it must be in place")
	}
}

func TestCheckpointRestoreWriteAfterUndo(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"replaced", "a.txt"}, // modified since the checkpoint: a restore rewrites it
		{"removed", "n.txt"},  // added since the checkpoint: a restore removes it
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ckAutoEnv(t)
			ws := proj("p")
			e.write("projects/p/a.txt", "v1\n")
			e.write("projects/p/b.txt", "keep\n")
			c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
			must(t, err)
			e.write("projects/p/a.txt", "v2 of the agent\n")
			e.write("projects/p/n.txt", "new\n")
			p := filepath.Join(e.projects, "p", tc.file)
			// After the undo checkpoint was taken, before the restore
			// looks: the agent writes again, in place.
			setRestoreHook(t, "undo-taken", func() { inPlace(t, p, "v3, written after the undo checkpoint\n") })
			_, err = e.fs.RestoreCheckpoint(bg, ws, c.ID, "", RestoreOptions{})
			wantErr(t, err, davfs.CodeAborted, davfs.ReasonRevisionMismatch)
			if got := e.read("projects/p/" + tc.file); got != "v3, written after the undo checkpoint\n" {
				t.Fatalf("%s was changed by the refused restore", tc.file)
			}
			other := map[string]string{"a.txt": "v2 of the agent\n", "n.txt": "new\n", "b.txt": "keep\n"}
			delete(other, tc.file)
			for name, want := range other {
				if got := e.read("projects/p/" + name); got != want {
					t.Fatalf("%s was changed by the refused restore", name)
				}
			}
			// The refused restore's undo checkpoint is gone again.
			cs, err := e.fs.ListCheckpoints(bg, ws)
			must(t, err)
			if len(cs) != 1 {
				t.Fatalf("%d checkpoints after a refused restore, want 1", len(cs))
			}
			e.checkCanaries()
		})
	}
}

func TestCheckpointRestoreInPlaceWriteBeforeApply(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"replaced", "a.txt"},
		{"removed", "n.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ckAutoEnv(t)
			ws := proj("p")
			e.write("projects/p/a.txt", "v1\n")
			c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
			must(t, err)
			if tc.file == "a.txt" {
				e.write("projects/p/a.txt", "v2 of the agent\n")
			} else {
				e.write("projects/p/n.txt", "new\n")
			}
			cmp, err := e.fs.CompareCheckpoint(bg, ws, c.ID, "", "", false)
			must(t, err)
			if len(cmp.Changes) != 1 {
				t.Fatalf("%d changes, want 1", len(cmp.Changes))
			}
			p := filepath.Join(e.projects, "p", tc.file)
			// Under the lock, after every check: the agent (which takes no
			// lock) writes the file in place.
			setRestoreHook(t, "verified", func() { inPlace(t, p, "v3, written during the restore\n") })
			_, err = e.fs.RestoreCheckpoint(bg, ws, c.ID, "", RestoreOptions{PlanToken: cmp.PlanToken})
			wantErr(t, err, davfs.CodeAborted, davfs.ReasonRevisionMismatch)
			if got := e.read("projects/p/" + tc.file); got != "v3, written during the restore\n" {
				t.Fatalf("the in-place write to %s was lost", tc.file)
			}
			e.checkCanaries()
		})
	}
}

// textOf is size bytes of numbered lines, each ending in tag.
func textOf(size int, tag string) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "line %07d %s\n", i, tag)
	}
	return b.String()[:size]
}

// TestCheckpointWriterRunning's in-place variant: the writer rewrites each
// file in place (one pwrite at offset 0, no rename, no truncation), every
// version longer than the last, so the file is one whole version at every
// moment outside the write itself and every write changes the size (the
// case the capture's fstat check covers; docs/checkpoints.md names the
// limit of same-size writes within one time stamp tick). Every captured
// file must be one whole version, never a mix of two.
func TestCheckpointWriterRunningInPlace(t *testing.T) {
	e := ckAutoEnv(t)
	ws := proj("w")
	dir := filepath.Join(e.projects, "w")
	must(t, os.MkdirAll(dir, 0o755))
	const files = 20
	const maxSize = 4000 // one page: a write is one copy into the page cache
	size := func(n int) int { return 64 + n/files }
	version := func(n int) []byte {
		head := fmt.Sprintf("v%d:", n)
		return []byte(head + strings.Repeat(string(rune('a'+n%26)), size(n)-len(head)-1) + "\n")
	}
	for i := range files {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), version(i), 0o644))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := files; !stop.Load() && size(n) <= maxSize; n++ {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%02d", n%files)), os.O_WRONLY, 0)
			if err != nil {
				continue
			}
			f.WriteAt(version(n), 0)
			f.Close()
			writes.Add(1)
		}
	}()
	var ids []string
	for range 8 {
		c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	stop.Store(true)
	wg.Wait()
	if writes.Load() == 0 {
		t.Fatal("the writer wrote nothing")
	}
	whole := regexp.MustCompile(`^v(\d+):([a-z])+\n$`)
	captured := 0
	for _, id := range ids {
		e.fs.ck.gc.RLock()
		man, err := e.fs.ck.readManifest(ws, id)
		e.fs.ck.gc.RUnlock()
		must(t, err)
		for i := range man.Entries {
			en := &man.Entries[i]
			if en.Dir {
				continue
			}
			r, err := e.fs.ck.openObject(en)
			must(t, err)
			b, err := io.ReadAll(r)
			r.Close()
			must(t, err)
			// A torn capture names its ends and the stat it was taken
			// with: a version missing its last byte, say, is one whose
			// data landed before its size did.
			m := whole.FindSubmatch(b)
			if m == nil {
				t.Fatalf("checkpoint %s: %s is not one whole version (%s)", id, en.Path, tornDetail(b, en))
			}
			n, _ := strconv.Atoi(string(m[1]))
			if n%files != atoiSuffix(en.Path) || !bytes.Equal(b, version(n)) {
				t.Fatalf("checkpoint %s: %s is torn (v%d, %s)", id, en.Path, n, tornDetail(b, en))
			}
			captured++
		}
	}
	if captured == 0 {
		t.Fatal("no file was captured")
	}
}

// tornDetail describes captured bytes b that are not one whole version:
// their length, first and last bytes, and the stat en recorded.
func tornDetail(b []byte, en *ckEntry) string {
	return fmt.Sprintf("%d bytes %q...%q; stat size %d, mtime %d, ctime %d", len(b), b[:min(12, len(b))], b[max(0, len(b)-12):], en.Size, en.Mtime, en.Ctime)
}

// atoiSuffix is the number in a name "fNN".
func atoiSuffix(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "f"))
	return n
}

// A restore that fails after changing something still names its undo
// checkpoint (the sidecar passes it on in a trailer, the gateway audits it):
// that is exactly when it is needed.
func TestCheckpointRestoreFailureNamesUndo(t *testing.T) {
	e := ckAutoEnv(t)
	ws := proj("p")
	e.write("projects/p/a.txt", "v1\n")
	e.write("projects/p/d/x.txt", "x1\n")
	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	e.write("projects/p/a.txt", "v2 of the agent\n")
	e.write("projects/p/d/x.txt", "x2 of the agent\n")
	// After every check, before the first change: d becomes a file, so
	// a.txt is restored and d/x.txt cannot be.
	d := filepath.Join(e.projects, "p", "d")
	setRestoreHook(t, "verified", func() {
		must(t, os.RemoveAll(d))
		must(t, os.WriteFile(d, []byte("now a file\n"), 0o644))
	})
	res, err := e.fs.RestoreCheckpoint(bg, ws, c.ID, "", RestoreOptions{})
	if err == nil {
		t.Fatal("the restore went through a file where its folder was")
	}
	if res.AutoCheckpoint == "" {
		t.Fatalf("the failed restore does not name its undo checkpoint (%v)", err)
	}
	cs, err := e.fs.ListCheckpoints(bg, ws)
	must(t, err)
	found := false
	for _, x := range cs {
		found = found || x.ID == res.AutoCheckpoint
	}
	if !found {
		t.Fatalf("the undo checkpoint %s named is not in the store", res.AutoCheckpoint)
	}
	e.checkCanaries()
}

// A restore's object check tells damage apart from a store that could not
// be read just now, and stops with its context.
func TestTransientErrno(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{unix.EMFILE, true},
		{fmt.Errorf("open: %w", unix.ENFILE), true},
		{unix.ENOMEM, true},
		{unix.ENOENT, false},
		{unix.ELOOP, false},
		{unix.EIO, false},
		{errors.New("object hash differs"), false},
	} {
		if got := transientErrno(tc.err); got != tc.want {
			t.Errorf("transientErrno(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestCtxReaderStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := ctxReader{ctx, strings.NewReader(strings.Repeat("x", 1<<20))}
	buf := make([]byte, 1024)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v, want context.Canceled", err)
	}
}

// Restores and their caller's deadline (issue #23).

// A restore too close to its deadline to finish changes nothing, and its
// undo checkpoint, which undoes nothing, goes too.
func TestRestoreAbandonedAtItsDeadline(t *testing.T) {
	e := ckEnv(t, nil, nil)
	ws := sectree.Project("p")
	c := ckCreate(t, e, ws, CheckpointOptions{})
	ok := filepath.Join(e.projects(), "p", "ok.txt")
	ckWrite(t, ok, []byte("changed\n"), 0o644)
	// The undo checkpoint is abandoned first (its capture commits within
	// the margin), so the restore stops before anything.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := e.fs.RestoreCheckpoint(ctx, ws, c.ID, "", RestoreOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a restore within a second of its deadline: %v", err)
	}
	if b, _ := os.ReadFile(ok); string(b) != "changed\n" {
		t.Fatalf("an abandoned restore changed ok.txt: %q", b)
	}
	if cs, _ := e.fs.ListCheckpoints(context.Background(), ws); len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("checkpoints after the abandoned restore: %+v", cs)
	}
}

// A restore whose undo checkpoint was kept, but whose caller's deadline
// then comes within commitMargin before its first change, changes nothing
// and drops the undo checkpoint (it undoes nothing).
func TestRestoreAbandonedBeforeItsFirstChange(t *testing.T) {
	e := ckAutoEnv(t)
	ws := proj("p")
	e.write("projects/p/a.txt", "v1\n")
	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	e.write("projects/p/a.txt", "v2\n")
	ctx, cancel := context.WithTimeout(bg, commitMargin+2*time.Second)
	defer cancel()
	setRestoreHook(t, "undo-taken", func() {
		d, _ := ctx.Deadline()
		time.Sleep(time.Until(d) - commitMargin/2)
	})
	_, err = e.fs.RestoreCheckpoint(ctx, ws, c.ID, "", RestoreOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("restore at its deadline: %v", err)
	}
	if got := e.read("projects/p/a.txt"); got != "v2\n" {
		t.Fatalf("a.txt = %q after the abandoned restore", got)
	}
	cs, err := e.fs.ListCheckpoints(bg, ws)
	if err != nil || len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("checkpoints after the abandoned restore: %+v %v (the undo checkpoint must go)", cs, err)
	}
}
