package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// Waits for events are generous deadlines, never speed targets.
const watchWait = 20 * time.Second

func newWatcher(t *testing.T, e *env, cfg Config) *Watcher {
	t.Helper()
	w, err := New(e.fs, cfg)
	must(t, err)
	t.Cleanup(func() { w.Close() })
	return w
}

func subscribe(t *testing.T, w *Watcher, ws davfs.Workspace, dirs ...string) *Subscription {
	t.Helper()
	s, err := w.Subscribe(bg, ws, dirs, "")
	must(t, err)
	t.Cleanup(s.Close)
	c := next(t, s)
	if c.Kind != ChangeReady {
		t.Fatalf("first change %v, want ready", c.Kind)
	}
	return s
}

func next(t *testing.T, s *Subscription) Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, watchWait)
	defer cancel()
	c, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("no change within %v: %v", watchWait, err)
	}
	return c
}

// until collects changes up to and including the first one for path.
func until(t *testing.T, s *Subscription, path string) []Change {
	t.Helper()
	var got []Change
	for {
		c := next(t, s)
		got = append(got, c)
		if c.Path == path && c.Kind != ChangeReady {
			return got
		}
	}
}

func TestWatchBasicChanges(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.Write("projects/demo/src/a.txt", "one")
		w := newWatcher(t, e, Config{})
		s := subscribe(t, w, proj("demo"), "src")

		e.Write("projects/demo/src/b.txt", "new")
		c := until(t, s, "src/b.txt")
		last := c[len(c)-1]
		st, err := e.fs.Stat(bg, proj("demo"), "src/b.txt")
		must(t, err)
		if last.Kind != ChangeCreated || last.Entry.Revision != st.Revision || last.Directory != "src" {
			t.Fatalf("create: %+v, want created with revision %s", last, st.Revision)
		}

		e.Write("projects/demo/src/a.txt", "two")
		c = until(t, s, "src/a.txt")
		st, _ = e.fs.Stat(bg, proj("demo"), "src/a.txt")
		if last = c[len(c)-1]; last.Kind != ChangeModified || last.Entry.Revision != st.Revision {
			t.Fatalf("modify: %+v", last)
		}

		must(t, os.Rename(filepath.Join(e.projects, "demo/src/a.txt"), filepath.Join(e.projects, "demo/src/c.txt")))
		c = until(t, s, "src/c.txt")
		if last = c[len(c)-1]; last.Kind != ChangeRenamed || last.FromPath != "src/a.txt" {
			t.Fatalf("rename: %+v", last)
		}

		must(t, os.Remove(filepath.Join(e.projects, "demo/src/b.txt")))
		c = until(t, s, "src/b.txt")
		if last = c[len(c)-1]; last.Kind != ChangeRemoved || last.Entry.Revision != "" {
			t.Fatalf("remove: %+v", last)
		}
		// The directory's own new revision comes along.
		e.Write("projects/demo/src/d.txt", "x")
		until(t, s, "src/d.txt")
		c = until(t, s, "src")
		dst, _ := e.fs.Stat(bg, proj("demo"), "src")
		if last = c[len(c)-1]; last.Kind != ChangeModified || last.Entry.Revision != dst.Revision {
			t.Fatalf("directory revision: %+v, want %s", last, dst.Revision)
		}
	})
}

// A davfs write (temp file, rename) is one Modified and never shows the
// temp file.
func TestWatchDavfsWriteNoTempName(t *testing.T) {
	e := newEnv(t, false)
	e.Write("projects/demo/f.txt", "one")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "")
	st, err := e.fs.Stat(bg, proj("demo"), "f.txt")
	must(t, err)
	e2, err := e.fs.UpdateFile(bg, proj("demo"), "f.txt", []byte("two"), st.Revision)
	must(t, err)
	for _, c := range until(t, s, "f.txt") {
		if strings.Contains(c.Path, tempPrefix) {
			t.Fatalf("temp file in a change: %+v", c)
		}
		if c.Path == "f.txt" && (c.Kind != ChangeModified || c.Entry.Revision != e2.Revision) {
			t.Fatalf("write: %+v, want modified %s", c, e2.Revision)
		}
	}
}

// Traps: a symlink (to a canary inside the test tree), a denylisted
// directory, a temp-named file and CODEX_HOME secrets never yield a change;
// a sentinel written afterwards proves the watch was live.
func TestWatchTrapsNeverEmit(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.Mkdir("projects/demo/src")
		w := newWatcher(t, e, Config{})
		s := subscribe(t, w, proj("demo"), "src")
		g := subscribe(t, w, global, "", "skills")

		e.Symlink("outside/canary.txt", "projects/demo/src/link.txt")
		e.Symlink("outside", "projects/demo/src/linkdir")
		e.Mkdir("projects/demo/src/node_modules/pkg")
		e.Write("projects/demo/src/node_modules/pkg/index.js", "x")
		e.Write("projects/demo/src/.git", "gitdir")
		e.Write("projects/demo/src/"+tempPrefix+"123", "partial")
		e.Write("codex/auth.json", "SECRET-AUTH-2")
		e.Write("codex/config.toml", "SECRET-CONFIG-2")
		e.Write("codex/history.jsonl", "h")
		e.Symlink("codex/auth.json", "codex/skills/auth-link")

		e.Write("projects/demo/src/sentinel.txt", "s")
		for _, c := range until(t, s, "src/sentinel.txt") {
			if c.Path != "src/sentinel.txt" && c.Path != "src" {
				t.Fatalf("trap produced a change: %+v", c)
			}
		}
		e.Write("codex/AGENTS.md", "agents")
		for _, c := range until(t, g, "AGENTS.md") {
			if c.Path != "AGENTS.md" {
				t.Fatalf("trap produced a change: %+v", c)
			}
		}
		e.Write("codex/skills/sentinel.md", "s")
		for _, c := range until(t, g, "skills/sentinel.md") {
			// AGENTS.md again: its write can land in two batches on a loaded machine.
			if c.Path != "skills/sentinel.md" && c.Path != "skills" && c.Path != "" && c.Path != "AGENTS.md" {
				t.Fatalf("trap produced a change: %+v", c)
			}
		}
		if w.Stats().Filtered == 0 {
			t.Fatal("filtered counter did not move")
		}
		e.CheckOutside()
	})
}

// A symlink swap of a visible file makes it disappear (Removed), never a
// Created/Modified with the target's revision.
func TestWatchSymlinkSwap(t *testing.T) {
	e := newEnv(t, false)
	e.Write("projects/demo/a.txt", "real")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "")
	tmp := filepath.Join(e.projects, "demo", "x-link")
	must(t, os.Symlink(filepath.Join(e.outside, "canary.txt"), tmp))
	must(t, os.Rename(tmp, filepath.Join(e.projects, "demo", "a.txt")))
	c := until(t, s, "a.txt")
	if last := c[len(c)-1]; last.Kind != ChangeRemoved {
		t.Fatalf("symlink swap: %+v, want removed", last)
	}
	for _, x := range c {
		if x.Path == "x-link" {
			t.Fatalf("symlink name in a change: %+v", x)
		}
	}
}

// A watched directory moved under a denylisted name (or replaced by a
// symlink) ends its watch; nothing from its new place is reported.
func TestWatchDirectoryGone(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/src")
	e.Mkdir("projects/demo/node_modules")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "src")
	must(t, os.Rename(filepath.Join(e.projects, "demo/src"), filepath.Join(e.projects, "demo/node_modules/src")))
	must(t, os.Symlink(filepath.Join(e.outside), filepath.Join(e.projects, "demo/src")))
	e.Write("projects/demo/node_modules/src/hidden.txt", "x")
	c := next(t, s)
	if c.Kind != ChangeResync || c.Reason != ResyncGone || len(c.Directories) != 1 || c.Directories[0] != "src" {
		t.Fatalf("got %+v, want resync gone for src", c)
	}
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	if c, err := s.Next(ctx); err == nil {
		t.Fatalf("change after the directory went: %+v", c)
	}
	if n := w.Stats().WatchedDirs; n != 0 {
		t.Fatalf("watched dirs %d after gone", n)
	}
}

// A 5,000-file burst (a git checkout) is a bounded number of changes, among
// them a "reload this directory".
func TestWatchBurstCoalesced(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/src")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "src")
	start := time.Now()
	for i := range 5000 {
		must(t, os.WriteFile(filepath.Join(e.projects, "demo/src", fmt.Sprintf("f%04d.go", i)), []byte("package x\n"), 0o644))
	}
	// Quiet period, then a sentinel: everything before it belongs to the burst.
	time.Sleep(time.Second)
	e.Write("projects/demo/src/zz-sentinel.txt", "s")
	got := until(t, s, "src/zz-sentinel.txt")
	// For the watcher the burst lasts until it has read it all: on a loaded
	// machine that is well after the writes end.
	took := time.Since(start)
	dirs := 0
	for _, c := range got {
		if c.Kind == ChangeDirectory {
			dirs++
		}
	}
	// The documented bound (not a speed target): at most BurstEntries entry
	// changes, each batch's directory revision, and one reload per BurstHold
	// while the burst lasts.
	def := Config{}.withDefaults()
	bound := 2*def.BurstEntries + 4 + int(took/def.BurstHold) + 2
	if dirs == 0 || len(got) > bound {
		t.Fatalf("burst of 5000 over %v gave %d changes (%d directory reloads); want at most %d with a reload", took, len(got), dirs, bound)
	}
	// After the reload the watch knows every file: a later modify is Modified.
	e.Write("projects/demo/src/f0001.go", "package y\n")
	c := until(t, s, "src/f0001.go")
	if last := c[len(c)-1]; last.Kind != ChangeModified {
		t.Fatalf("after burst: %+v", last)
	}
}

// A burst that slows down (a loaded machine, a throttled writer) is still
// one burst: its entry changes stay within the bound instead of restarting
// every rate period.
func TestWatchSlowBurstStaysOneBurst(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/src")
	cfg := Config{BurstEntries: 8, BurstHold: 100 * time.Millisecond}
	w := newWatcher(t, e, cfg)
	s := subscribe(t, w, proj("demo"), "src")
	for i := range 160 { // 40 names a second for 4 s: 5x the rate, 4 rate periods
		must(t, os.WriteFile(filepath.Join(e.projects, "demo/src", fmt.Sprintf("f%03d.go", i)), []byte("x"), 0o644))
		time.Sleep(25 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	e.Write("projects/demo/src/zz-sentinel.txt", "s")
	entries, dirs := 0, 0
	for _, c := range until(t, s, "src/zz-sentinel.txt") {
		switch c.Kind {
		case ChangeDirectory:
			dirs++
		case ChangeCreated, ChangeModified:
			if c.Path != "src/zz-sentinel.txt" {
				entries++
			}
		}
	}
	if dirs == 0 || entries > 2*cfg.BurstEntries {
		t.Fatalf("slow burst: %d entry changes, %d reloads; want at most %d entry changes and a reload", entries, dirs, 2*cfg.BurstEntries)
	}
}

func TestWatchLimits(t *testing.T) {
	e := newEnv(t, false)
	for _, d := range []string{"a", "b", "c"} {
		e.Mkdir("projects/demo/" + d)
	}
	w := newWatcher(t, e, Config{MaxDirs: 2, MaxDirsPerSubscriber: 2})
	s, err := w.Subscribe(bg, proj("demo"), []string{"a", "b", "c"}, "")
	must(t, err)
	defer s.Close()
	if c := next(t, s); c.Kind != ChangeReady || strings.Join(c.Directories, ",") != "a,b" {
		t.Fatalf("ready %+v", c)
	}
	if c := next(t, s); c.Kind != ChangeResync || c.Reason != ResyncLimit || strings.Join(c.Directories, ",") != "c" {
		t.Fatalf("limit %+v", c)
	}
	// The sidecar-wide cap: a and b are held by s.
	s2, err := w.Subscribe(bg, proj("demo"), []string{"c"}, "")
	must(t, err)
	defer s2.Close()
	next(t, s2)
	if c := next(t, s2); c.Kind != ChangeResync || c.Reason != ResyncLimit {
		t.Fatalf("sidecar cap %+v", c)
	}
	if st := w.Stats(); st.WatchedDirs != 2 || st.Resyncs[ResyncLimit] != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWatchSubscriberOverflow(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/d")
	w := newWatcher(t, e, Config{QueueLen: 4, BurstEntries: 1000})
	s := subscribe(t, w, proj("demo"), "d")
	for i := range 20 {
		e.Write(fmt.Sprintf("projects/demo/d/f%d", i), "x")
	}
	deadline := time.Now().Add(watchWait)
	for w.Stats().Drops == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if c := next(t, s); c.Kind != ChangeResync || c.Reason != ResyncOverflow {
		t.Fatalf("got %+v, want resync overflow", c)
	}
}

func TestWatchResume(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/d")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "d")
	e.Write("projects/demo/d/one", "1")
	got := until(t, s, "d/one")
	pos := got[len(got)-1].ID
	s.Close()
	// Written while nobody is subscribed: the lingering watch records it
	// (in the history: wait for that, not for a while).
	e.Write("projects/demo/d/two", "2")
	waitHistory(t, w, "d/two")
	r, err := w.Subscribe(bg, proj("demo"), []string{"d"}, pos)
	must(t, err)
	defer r.Close()
	if c := next(t, r); c.Kind != ChangeReady {
		t.Fatalf("ready %+v", c)
	}
	got = until(t, r, "d/two")
	for _, c := range got {
		if c.Kind == ChangeResync {
			t.Fatalf("resume gave a resync: %+v", c)
		}
	}
	replayed := got[len(got)-1]
	// A change after the resume is live, and numbered after the replayed one.
	e.Write("projects/demo/d/three", "3")
	got = until(t, r, "d/three")
	if live := got[len(got)-1]; idSeq(t, replayed.ID) >= idSeq(t, live.ID) || idSeq(t, pos) >= idSeq(t, replayed.ID) {
		t.Fatalf("ids out of order: resumed from %s, replayed %s, live %s", pos, replayed.ID, live.ID)
	}

	// Another process's position: an explicit gap.
	g, err := w.Subscribe(bg, proj("demo"), []string{"d"}, "0000-5")
	must(t, err)
	defer g.Close()
	next(t, g)
	if c := next(t, g); c.Kind != ChangeResync || c.Reason != ResyncGap {
		t.Fatalf("foreign epoch: %+v", c)
	}
	// A directory not watched before: a gap for it.
	e.Mkdir("projects/demo/new")
	n, err := w.Subscribe(bg, proj("demo"), []string{"new"}, pos)
	must(t, err)
	defer n.Close()
	next(t, n)
	if c := next(t, n); c.Kind != ChangeResync || c.Reason != ResyncGap || c.Directories[0] != "new" {
		t.Fatalf("fresh watch on resume: %+v", c)
	}
}

// waitHistory waits (generously) until a change for path is in w's resume
// history.
func waitHistory(t *testing.T, w *Watcher, path string) {
	t.Helper()
	deadline := time.Now().Add(watchWait)
	for {
		w.mu.Lock()
		found := false
		for _, c := range w.ring {
			if c.Path == path {
				found = true
			}
		}
		w.mu.Unlock()
		if found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no change for %s in the history within %v", path, watchWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func idSeq(t *testing.T, id string) uint64 {
	t.Helper()
	_, n, ok := strings.Cut(id, "-")
	v, err := strconv.ParseUint(n, 10, 64)
	if !ok || err != nil {
		t.Fatalf("bad change id %q", id)
	}
	return v
}

func TestWatchBadInput(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/a/node_modules")
	e.Symlink("outside", "projects/demo/ln")
	w := newWatcher(t, e, Config{})
	for _, tc := range []struct {
		ws     davfs.Workspace
		dirs   []string
		resume string
		code   davfs.Code
		reason davfs.Reason
	}{
		{proj("demo"), nil, "", davfs.CodeInvalidArgument, davfs.ReasonInvalidArgument},
		{proj("demo"), []string{"a/../a"}, "", davfs.CodeInvalidArgument, davfs.ReasonInvalidPath},
		{proj("demo"), []string{"a/./x"}, "", davfs.CodeInvalidArgument, davfs.ReasonInvalidPath},
		{proj("demo"), []string{"a//x"}, "", davfs.CodeInvalidArgument, davfs.ReasonInvalidPath},
		{proj("demo"), []string{"/a"}, "", davfs.CodeInvalidArgument, davfs.ReasonInvalidPath},
		{proj("demo"), []string{"a/node_modules"}, "", davfs.CodePermissionDenied, davfs.ReasonDenylisted},
		{global, []string{"sessions"}, "", davfs.CodePermissionDenied, davfs.ReasonOutsideGlobal},
		{proj("demo"), []string{"a"}, "garbage", davfs.CodeInvalidArgument, davfs.ReasonInvalidArgument},
		{proj("demo"), []string{"a"}, "ab-01", davfs.CodeInvalidArgument, davfs.ReasonInvalidArgument},
	} {
		_, err := w.Subscribe(bg, tc.ws, tc.dirs, tc.resume)
		wantErr(t, err, tc.code, tc.reason)
	}
	// A symlinked or missing directory is not an error but not live either.
	s, err := w.Subscribe(bg, proj("demo"), []string{"ln", "missing"}, "")
	must(t, err)
	defer s.Close()
	if c := next(t, s); c.Kind != ChangeReady || len(c.Directories) != 0 {
		t.Fatalf("ready %+v", c)
	}
	if c := next(t, s); c.Kind != ChangeResync || c.Reason != ResyncGone || len(c.Directories) != 2 {
		t.Fatalf("gone %+v", c)
	}
	if n := w.Stats().WatchedDirs; n != 0 {
		t.Fatalf("watched %d", n)
	}
}

// A watched directory whose parent is renamed keeps its inode under a new
// path: subscribing to the new path ends the old watch (GONE) and the new
// one reports changes (inotify would give both one descriptor).
func TestWatchSameInodeNewPath(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/a/b")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "a/b")
	must(t, os.Rename(filepath.Join(e.projects, "demo/a"), filepath.Join(e.projects, "demo/c")))
	n := subscribe(t, w, proj("demo"), "c/b")
	if c := next(t, s); c.Kind != ChangeResync || c.Reason != ResyncGone || c.Directories[0] != "a/b" {
		t.Fatalf("old path: %+v", c)
	}
	e.Write("projects/demo/c/b/x.txt", "x")
	if got := until(t, n, "c/b/x.txt"); got[len(got)-1].Kind != ChangeCreated {
		t.Fatalf("new path: %+v", got)
	}
	if st := w.Stats(); st.WatchedDirs != 1 {
		t.Fatalf("watched %d", st.WatchedDirs)
	}
}

// A chmod/chown of the watched directory itself is its new revision, not
// its end (inotify reports it on the directory's own watch).
func TestWatchDirectoryAttributes(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/src")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "src")
	must(t, os.Chmod(filepath.Join(e.projects, "demo/src"), 0o750))
	c := next(t, s)
	st, _ := e.fs.Stat(bg, proj("demo"), "src")
	if c.Kind != ChangeModified || c.Path != "src" || c.Entry.Revision != st.Revision {
		t.Fatalf("chmod of the watched directory: %+v", c)
	}
	e.Write("projects/demo/src/x", "x")
	until(t, s, "src/x")
}

// A kernel queue overflow (IN_Q_OVERFLOW, delivered by fsnotify as
// ErrEventOverflow) gives every subscriber a RESYNC(OVERFLOW); the watches
// re-read their directories and go on reporting, and positions from before
// resume with a gap.
func TestWatchKernelOverflow(t *testing.T) {
	e := newEnv(t, false)
	e.Write("projects/demo/d/a.txt", "a")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "d")
	e.Write("projects/demo/d/b.txt", "b")
	got := until(t, s, "d") // b.txt, then the directory's new revision
	before := got[len(got)-1].ID
	w.overflow() // what loop does on fsnotify.ErrEventOverflow
	if c := next(t, s); c.Kind != ChangeResync || c.Reason != ResyncOverflow || len(c.Directories) != 0 {
		t.Fatalf("overflow: %+v", c)
	}
	e.Write("projects/demo/d/c.txt", "c")
	if got := until(t, s, "d/c.txt"); got[len(got)-1].Kind != ChangeCreated {
		t.Fatalf("after overflow: %+v", got)
	}
	r, err := w.Subscribe(bg, proj("demo"), []string{"d"}, before)
	must(t, err)
	defer r.Close()
	next(t, r)
	if c := next(t, r); c.Kind != ChangeResync || c.Reason != ResyncGap {
		t.Fatalf("resume from before the overflow: %+v", c)
	}
	if n := w.Stats().Resyncs[ResyncOverflow]; n != 1 {
		t.Fatalf("overflow resyncs %d", n)
	}
}

// The watcher's own reads are not a client's: with a watch on d, a
// recursive delete carrying the revision a client read before the agent's
// newer work is still refused (the watcher re-reading d after a change
// must not move the delete's cutoff), and nothing is deleted.
func TestWatchReadsDoNotHandOutRevisions(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.Write("projects/demo/d/existing.txt", "old")
		e.Mkdir("projects/demo/d/sub")
		time.Sleep(tick)
		st, err := e.fs.Stat(bg, proj("demo"), "d")
		must(t, err)
		rev := st.Revision
		w := newWatcher(t, e, Config{})
		s := subscribe(t, w, proj("demo"), "d")
		time.Sleep(tick)
		e.Write("projects/demo/d/sub/new.txt", "agent work")
		e.Write("projects/demo/d/existing.txt", "agent rewrite") // in place: d's revision stays
		if got := until(t, s, "d/existing.txt"); got[len(got)-1].Kind != ChangeModified {
			t.Fatalf("rewrite: %+v", got)
		}
		now, err := e.ownStat(proj("demo"), "d")
		must(t, err)
		if now.Revision != rev {
			t.Fatal("the changes moved d's own revision: the test checks nothing")
		}
		err = e.fs.DeleteEntry(bg, proj("demo"), "d", rev, true)
		wantErr(t, err, davfs.CodeAborted, davfs.ReasonRevisionMismatch)
		if e.Read("projects/demo/d/sub/new.txt") != "agent work" || e.Read("projects/demo/d/existing.txt") != "agent rewrite" {
			t.Fatal("the refused delete removed the agent's work")
		}
	})
}

// A directory revision the watcher publishes is shown to a client, read
// when the batch was: a recursive delete carrying it removes work done
// before that read (here after d's own last change, so d's ctime alone
// would refuse it) and refuses work done after it.
func TestWatchPublishedRevisionHandedOut(t *testing.T) {
	for _, later := range []bool{false, true} {
		t.Run(fmt.Sprintf("later=%v", later), func(t *testing.T) {
			e := newEnv(t, false)
			e.Mkdir("projects/demo/d/sub")
			// A long window: the work in sub lands between d's change and
			// the watcher's read of it.
			w := newWatcher(t, e, Config{Coalesce: 2 * time.Second})
			s := subscribe(t, w, proj("demo"), "d")
			e.Write("projects/demo/d/x.txt", "x") // d's revision moves
			time.Sleep(tick)
			e.Write("projects/demo/d/sub/older.txt", "older work")
			got := until(t, s, "d")
			c := got[len(got)-1]
			if c.Kind != ChangeModified || c.Entry.Revision == "" {
				t.Fatalf("directory revision: %+v", got)
			}
			if later {
				time.Sleep(tick)
				e.Write("projects/demo/d/sub/newer.txt", "newer work")
				wantErr(t, e.fs.DeleteEntry(bg, proj("demo"), "d", c.Entry.Revision, true), davfs.CodeAborted, davfs.ReasonRevisionMismatch)
				if !e.Exists("projects/demo/d/sub/newer.txt") {
					t.Fatal("the refused delete removed newer work")
				}
				return
			}
			must(t, e.fs.DeleteEntry(bg, proj("demo"), "d", c.Entry.Revision, true))
			if e.Exists("projects/demo/d") {
				t.Fatal("the tree is still there")
			}
		})
	}
}

// A watch that ended (it lingered out) and was begun again by another
// subscriber did not see what changed meanwhile: a client resuming from
// its last id — the position current when the old watch ended — gets a
// gap, not silence.
func TestWatchResumeAfterRewatchIsGap(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/d")
	w := newWatcher(t, e, Config{Linger: time.Millisecond, Revalidate: 10 * time.Millisecond})
	s1, err := w.Subscribe(bg, proj("demo"), []string{"d"}, "")
	must(t, err)
	ready := next(t, s1)
	if ready.Kind != ChangeReady {
		t.Fatalf("ready %+v", ready)
	}
	s1.Close()
	deadline := time.Now().Add(watchWait)
	for w.Stats().WatchedDirs != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle watch was not dropped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.Write("projects/demo/d/lost.txt", "written while not watched")
	subscribe(t, w, proj("demo"), "d")
	r, err := w.Subscribe(bg, proj("demo"), []string{"d"}, ready.ID)
	must(t, err)
	defer r.Close()
	if c := next(t, r); c.Kind != ChangeReady {
		t.Fatalf("ready %+v", c)
	}
	if c := next(t, r); c.Kind != ChangeResync || c.Reason != ResyncGap || len(c.Directories) != 1 || c.Directories[0] != "d" {
		t.Fatalf("resume over a re-watch: %+v, want resync gap for d", c)
	}
}

// After a kernel overflow, the position current at the overflow resumes
// with a gap too (what changed around the overflow is not in the history).
func TestWatchResumeAtOverflowIsGap(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/d")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "d")
	e.Write("projects/demo/d/a.txt", "a")
	got := until(t, s, "d")
	last := got[len(got)-1].ID
	w.overflow()
	r, err := w.Subscribe(bg, proj("demo"), []string{"d"}, last)
	must(t, err)
	defer r.Close()
	next(t, r)
	if c := next(t, r); c.Kind != ChangeResync || c.Reason != ResyncGap {
		t.Fatalf("resume from the overflow's position: %+v", c)
	}
}

// A filtered name (denylisted, a temp file) is never published, but the
// directory's own new revision is: mkdir node_modules moves it, and a
// client holding the last published revision could not rename or delete
// the directory otherwise.
func TestWatchFilteredNameMovesDirectoryRevision(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/web")
	w := newWatcher(t, e, Config{})
	s := subscribe(t, w, proj("demo"), "web")
	e.Mkdir("projects/demo/web/node_modules")
	c := next(t, s)
	st, err := e.fs.Stat(bg, proj("demo"), "web")
	must(t, err)
	if c.Kind != ChangeModified || c.Path != "web" || c.Entry.Revision != st.Revision {
		t.Fatalf("after mkdir node_modules: %+v, want web modified with %s", c, st.Revision)
	}
	e.Write("projects/demo/web/sentinel.txt", "s")
	for _, c := range until(t, s, "web/sentinel.txt") {
		if strings.Contains(c.Path, "node_modules") || strings.Contains(c.FromPath, "node_modules") {
			t.Fatalf("a denylisted name was published: %+v", c)
		}
	}
	if w.Stats().Filtered == 0 {
		t.Fatal("nothing was filtered: the test checks nothing")
	}
	// The published revision is the one a move of web needs.
	st, err = e.fs.Stat(bg, proj("demo"), "web")
	must(t, err)
	got := until(t, s, "web")
	if last := got[len(got)-1]; last.Entry.Revision != st.Revision {
		t.Fatalf("last published revision %s, directory is at %s", last.Entry.Revision, st.Revision)
	}
}

// A PARENT of a watched directory renamed away, or swapped for a symlink
// (to the canary directory inside the test tree), ends the watch with
// Resync(GONE): the watched inode now lives at another path (or the path
// leads through a symlink), and nothing written there — nor at the
// symlink's target — is reported. A sentinel in another watched directory
// of the same subscription proves the stream went on.
func TestWatchParentMovedOrSwapped(t *testing.T) {
	for _, swap := range []bool{false, true} {
		t.Run(fmt.Sprintf("symlink=%v", swap), func(t *testing.T) {
			forModes(t, func(t *testing.T, e *env) {
				e.Mkdir("projects/demo/a/b")
				e.Mkdir("projects/demo/other")
				e.Mkdir("outside/b")
				w := newWatcher(t, e, Config{Revalidate: 50 * time.Millisecond})
				s := subscribe(t, w, proj("demo"), "a/b", "other")
				must(t, os.Rename(filepath.Join(e.projects, "demo/a"), filepath.Join(e.projects, "demo/moved")))
				if swap {
					must(t, os.Symlink(e.outside, filepath.Join(e.projects, "demo/a")))
					e.Write("outside/b/target.txt", "at the symlink's target")
				}
				// Under the watched inode's new path.
				e.Write("projects/demo/moved/b/new-place.txt", "x")
				c := next(t, s)
				if c.Kind != ChangeResync || c.Reason != ResyncGone || len(c.Directories) != 1 || c.Directories[0] != "a/b" {
					t.Fatalf("got %+v, want resync gone for a/b", c)
				}
				e.Write("projects/demo/moved/b/later.txt", "x")
				e.Write("outside/b/later.txt", "x")
				e.Write("projects/demo/other/sentinel.txt", "s")
				for _, c := range until(t, s, "other/sentinel.txt") {
					if c.Directory != "other" {
						t.Fatalf("a change from the old watch: %+v", c)
					}
				}
				if n := w.Stats().WatchedDirs; n != 1 {
					t.Fatalf("watched dirs %d, want 1 (other)", n)
				}
				if e.Read("outside/canary.txt") != "CANARY" {
					t.Fatal("canary changed")
				}
			})
		})
	}
}

// A burst in a large directory is applied name by name (issue #23: a
// watched 200,000-entry folder was listed again every BurstHold while the
// agent wrote): no re-list, and afterwards the watch knows each name the
// burst touched. Past MaxPending names before one flush, one re-list.
func TestWatchBurstIsIncremental(t *testing.T) {
	e := newEnv(t, false)
	e.Mkdir("projects/demo/big")
	dir := filepath.Join(e.projects, "demo/big")
	for i := range 3000 {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("old%04d", i)), []byte("x"), 0o644))
	}
	w := newWatcher(t, e, Config{MaxPending: 100})
	s := subscribe(t, w, proj("demo"), "big")
	burst := func(prefix string, n int) {
		for i := range n {
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s%04d", prefix, i)), []byte("y"), 0o644))
		}
		must(t, os.Remove(filepath.Join(dir, "old0000")))
		must(t, os.WriteFile(filepath.Join(dir, "old0000"), []byte("back"), 0o644))
		time.Sleep(time.Second)
	}
	reload := func() {
		t.Helper()
		for c := next(t, s); c.Kind != ChangeDirectory; c = next(t, s) {
		}
	}
	burst("new", 90) // over BurstEntries (64), within MaxPending
	reload()
	if n := w.Stats().Relists; n != 0 {
		t.Fatalf("a burst of 90 (MaxPending 100) listed the directory %d times", n)
	}
	// What the burst touched is known: a write is Modified, a removal Removed.
	time.Sleep(time.Second) // past the burst's hold
	e.Write("projects/demo/big/new0007", "changed")
	if c := until(t, s, "big/new0007"); c[len(c)-1].Kind != ChangeModified {
		t.Fatalf("after the burst, a write of one of its names: %+v", c[len(c)-1])
	}
	must(t, os.Remove(filepath.Join(dir, "new0008")))
	if c := until(t, s, "big/new0008"); c[len(c)-1].Kind != ChangeRemoved {
		t.Fatalf("after the burst, a removal of one of its names: %+v", c[len(c)-1])
	}

	burst("more", 2000) // over MaxPending before a flush: a re-list
	reload()
	if n := w.Stats().Relists; n < 1 {
		t.Fatalf("a burst of 2000 (MaxPending 100): %d re-lists, want one", n)
	}
	time.Sleep(2 * time.Second)
	e.Write("projects/demo/big/more0400", "changed")
	if c := until(t, s, "big/more0400"); c[len(c)-1].Kind != ChangeModified {
		t.Fatalf("after the re-list, a write of one of its names: %+v", c[len(c)-1])
	}
}
