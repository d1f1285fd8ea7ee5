package davfs

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentworkspace/files/internal/testtree"
	"golang.org/x/sys/unix"
)

// tick is longer than the kernel's timestamp granularity (a few ms): a
// change made this long after a read carries a later ctime.
const tick = 25 * time.Millisecond

// treeLayout is the tree under projects/p/d that the delete tests remove.
func treeLayout(e *env) {
	e.write("projects/p/d/a.txt", "a")
	e.write("projects/p/d/sub/b.txt", "b")
	e.write("projects/p/d/sub/deep/c.txt", "c")
	e.mkdir("projects/p/d/empty")
	e.symlink("outside/canary.txt", "projects/p/d/sub/link")
}

// revReads are the ways a client is handed the revision of projects/p/d.
var revReads = []struct {
	name string
	read func(t *testing.T, e *env) string
}{
	{"Stat", func(t *testing.T, e *env) string {
		st, err := e.fs.Stat(bg, proj("p"), "d")
		must(t, err)
		return st.Revision
	}},
	{"ListEntries/parent", func(t *testing.T, e *env) string {
		pg, err := e.fs.ListEntries(bg, proj("p"), "", 0, "")
		must(t, err)
		return entryRev(t, pg.Entries, "d")
	}},
	{"ListEntries/DirectoryRevision", func(t *testing.T, e *env) string {
		pg, err := e.fs.ListEntries(bg, proj("p"), "d", 0, "")
		must(t, err)
		return pg.DirectoryRevision
	}},
	{"ReadDir", func(t *testing.T, e *env) string {
		es, err := e.fs.ReadDir(bg, proj("p"), "")
		must(t, err)
		return entryRev(t, es, "d")
	}},
	{"ReadDirChunks", func(t *testing.T, e *env) string {
		var all []Entry
		must(t, ReadDirChunks(bg, e.fs, proj("p"), "", func(es []Entry) []Entry { return append([]Entry(nil), es...) },
			func(es []Entry) error { all = append(all, es...); return nil }))
		return entryRev(t, all, "d")
	}},
}

func entryRev(t *testing.T, es []Entry, name string) string {
	t.Helper()
	for _, e := range es {
		if e.Name == name {
			return e.Revision
		}
	}
	t.Fatalf("%q not listed", name)
	return ""
}

// deepChanges are changes deep inside projects/p/d that leave d's own stat
// (and so its revision) as it was.
var deepChanges = []struct {
	name   string
	change func(t *testing.T, e *env)
}{
	{"edit in place", func(t *testing.T, e *env) { e.write("projects/p/d/sub/deep/c.txt", "new work") }},
	{"new file", func(t *testing.T, e *env) { e.write("projects/p/d/sub/deep/new.txt", "new work") }},
	{"new directory", func(t *testing.T, e *env) { e.mkdir("projects/p/d/sub/deep/newdir") }},
	{"chmod", func(t *testing.T, e *env) { must(t, os.Chmod(filepath.Join(e.dir, "projects/p/d/sub/b.txt"), 0o600)) }},
	{"rename inside", func(t *testing.T, e *env) {
		must(t, os.Rename(filepath.Join(e.dir, "projects/p/d/sub/b.txt"), filepath.Join(e.dir, "projects/p/d/sub/b2.txt")))
	}},
	{"edit with an old mtime", func(t *testing.T, e *env) {
		// mtime can be set to anything; ctime cannot.
		e.write("projects/p/d/sub/deep/c.txt", "new work")
		old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		must(t, os.Chtimes(filepath.Join(e.dir, "projects/p/d/sub/deep/c.txt"), old, old))
	}},
	{"in the first level", func(t *testing.T, e *env) { e.write("projects/p/d/empty/new.txt", "new work") }},
}

// TestRecursiveDeleteKeepsNewerWork: a recursive delete carrying d's
// revision refuses (Aborted/REVISION_MISMATCH) when anything inside changed
// after the revision was read, however it was read, and deletes nothing.
func TestRecursiveDeleteKeepsNewerWork(t *testing.T) {
	for _, rr := range revReads {
		for _, c := range deepChanges {
			t.Run(rr.name+"/"+c.name, func(t *testing.T) {
				e := newEnv(t, nil)
				treeLayout(e)
				time.Sleep(tick)
				rev := rr.read(t, e)
				time.Sleep(tick)
				c.change(t, e)
				// (Not through the FS, which would record a new read.)
				var st unix.Stat_t
				must(t, unix.Lstat(filepath.Join(e.dir, "projects/p/d"), &st))
				if dirRevision(&st) != rev {
					t.Fatal("the change moved d's own revision: the test checks nothing")
				}
				before := testtree.Snap(t, filepath.Join(e.dir, "projects/p/d"))
				err := e.fs.DeleteEntry(bg, proj("p"), "d", rev, true)
				wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
				if after := testtree.Snap(t, filepath.Join(e.dir, "projects/p/d")); !maps.Equal(before, after) {
					t.Fatalf("a refused delete changed the tree:\nbefore %v\nafter  %v", before, after)
				}
				e.checkCanaries()
				// Read again: the client has now seen the change.
				rev = rr.read(t, e)
				must(t, e.fs.DeleteEntry(bg, proj("p"), "d", rev, true))
				if e.exists("projects/p/d") {
					t.Fatal("the tree is still there")
				}
				e.checkCanaries()
			})
		}
	}
}

// TestRecursiveDeleteOlderWorkDeletes: work done before the revision was
// read, though newer than d's own last change, does not stop the delete,
// whichever surface handed the revision out (each one records the read).
func TestRecursiveDeleteOlderWorkDeletes(t *testing.T) {
	for _, m := range modes {
		for _, rr := range revReads {
			t.Run(m.name+"/"+rr.name, func(t *testing.T) {
				e := newEnv(t, func(c *Config) { c.DisableOpenat2 = m.disable })
				treeLayout(e)
				time.Sleep(tick)
				e.write("projects/p/d/sub/deep/c.txt", "older work")
				time.Sleep(tick)
				rev := rr.read(t, e)
				must(t, e.fs.DeleteEntry(bg, proj("p"), "d", rev, true))
				if e.exists("projects/p/d") {
					t.Fatal("the tree is still there")
				}
				e.checkCanaries()
			})
		}
	}
}

// TestRecursiveDeleteUnknownRevision: a revision this FS did not hand out
// (another process, a restart) is judged by the directory's own ctime:
// work newer than that refuses the delete, soundly but conservatively, and
// reading the revision again from this FS lets it through.
func TestRecursiveDeleteUnknownRevision(t *testing.T) {
	e := newEnv(t, nil)
	treeLayout(e)
	time.Sleep(tick)
	e.write("projects/p/d/sub/deep/c.txt", "older work")
	time.Sleep(tick)
	st, err := e.fs.Stat(bg, proj("p"), "d")
	must(t, err)
	other, err := Open(e.fs.cfg)
	must(t, err)
	defer other.Close()
	before := testtree.Snap(t, filepath.Join(e.dir, "projects/p/d"))
	wantErr(t, other.DeleteEntry(bg, proj("p"), "d", st.Revision, true), CodeAborted, ReasonRevisionMismatch)
	if !maps.Equal(before, testtree.Snap(t, filepath.Join(e.dir, "projects/p/d"))) {
		t.Fatal("a refused delete changed the tree")
	}
	again, err := other.Stat(bg, proj("p"), "d")
	must(t, err)
	if again.Revision != st.Revision {
		t.Fatal("revisions differ between two FS over the same volume")
	}
	must(t, other.DeleteEntry(bg, proj("p"), "d", again.Revision, true))
	e.checkCanaries()
}

// TestRecursiveDeleteRechecksBeforeUnlink: a change made after the check
// pass (between the passes) is caught by the delete pass's re-check: the
// changed file and the directory survive.
func TestRecursiveDeleteRechecksBeforeUnlink(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		treeLayout(e)
		time.Sleep(tick)
		st, err := e.fs.Stat(bg, proj("p"), "d")
		must(t, err)
		time.Sleep(tick)
		e.fs.hooks.afterCheck = func() { e.write("projects/p/d/sub/deep/c.txt", "new work") }
		err = e.fs.DeleteEntry(bg, proj("p"), "d", st.Revision, true)
		wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
		if e.read("projects/p/d/sub/deep/c.txt") != "new work" {
			t.Fatal("the file changed between the passes was deleted")
		}
		e.checkCanaries()
	})
}

// TestRecursiveDeleteConcurrentWriter: while a recursive delete runs, the
// agent keeps creating files in the tree. Whatever the interleaving, no
// file it created after the revision was read is deleted.
func TestRecursiveDeleteConcurrentWriter(t *testing.T) {
	for i := range 20 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newEnv(t, nil)
			treeLayout(e)
			for j := range 200 {
				e.write(fmt.Sprintf("projects/p/d/sub/f%03d", j), "old")
			}
			time.Sleep(tick)
			st, err := e.fs.Stat(bg, proj("p"), "d")
			must(t, err)
			time.Sleep(tick)
			var (
				wg      sync.WaitGroup
				stop    = make(chan struct{})
				created []string
			)
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					rel := fmt.Sprintf("projects/p/d/sub/new%04d", k)
					if os.WriteFile(filepath.Join(e.dir, rel), []byte("new work"), 0o644) == nil {
						created = append(created, rel)
					}
					time.Sleep(time.Duration(i*10) * time.Microsecond)
				}
			})
			err = e.fs.DeleteEntry(bg, proj("p"), "d", st.Revision, true)
			close(stop)
			wg.Wait()
			if err != nil {
				wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
			}
			for _, rel := range created {
				if !e.exists(rel) {
					t.Fatalf("%s, created after the read, was deleted (delete: %v)", rel, err)
				}
			}
			e.checkCanaries()
		})
	}
}

// TestDirSeenBounded: the record of handed-out revisions keeps at most its
// bound, keeps the latest time of a revision, and forgets the oldest.
func TestDirSeenBounded(t *testing.T) {
	s := newDirSeen(8)
	for i := range 100 {
		s.note(fmt.Sprint(i))
		if s.len() > 8 {
			t.Fatalf("grew to %d", s.len())
		}
	}
	if _, ok := s.last("0"); ok {
		t.Fatal("oldest kept")
	}
	a, ok := s.last("99")
	if !ok {
		t.Fatal("latest missing")
	}
	time.Sleep(time.Millisecond)
	s.note("99")
	if b, _ := s.last("99"); b <= a {
		t.Fatal("a second read did not move the time on")
	}
}

// TestForMutationIsNotARead: a Stat made while serving a mutation (the
// handler's own look before it deletes) does not count as the client's
// read; an ordinary Stat does.
func TestForMutationIsNotARead(t *testing.T) {
	e := newEnv(t, nil)
	treeLayout(e)
	time.Sleep(tick)
	st, err := e.fs.Stat(bg, proj("p"), "d")
	must(t, err)
	time.Sleep(tick)
	e.write("projects/p/d/sub/deep/c.txt", "new work")
	again, err := e.fs.Stat(bg, proj("p"), "d", ForMutation)
	must(t, err)
	if again.Revision != st.Revision {
		t.Fatal("d's revision moved")
	}
	wantErr(t, e.fs.DeleteEntry(bg, proj("p"), "d", st.Revision, true), CodeAborted, ReasonRevisionMismatch)
	if _, err := e.fs.Stat(bg, proj("p"), "d"); err != nil {
		t.Fatal(err)
	}
	must(t, e.fs.DeleteEntry(bg, proj("p"), "d", st.Revision, true))
}
