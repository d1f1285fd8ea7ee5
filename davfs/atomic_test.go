package davfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// tempFiles lists davfs temp files left anywhere under the env dir.
func (e *env) tempFiles() []string {
	var out []string
	filepath.WalkDir(e.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestUpdateFile(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/f.txt", "original")
		must(t, os.Chmod(filepath.Join(e.dir, "projects/p/f.txt"), 0o640))
		st, err := e.fs.Stat(bg, proj("p"), "f.txt")
		must(t, err)
		ne, err := e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("new text ✓"), st.Revision)
		must(t, err)
		if e.read("projects/p/f.txt") != "new text ✓" || ne.Revision == st.Revision || !ne.Editable || ne.Size != int64(len("new text ✓")) {
			t.Fatalf("update %+v", ne)
		}
		fi, err := os.Stat(filepath.Join(e.dir, "projects/p/f.txt"))
		must(t, err)
		if fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode not kept: %v", fi.Mode())
		}
		// The returned revision is what every read reports.
		st2, err := e.fs.Stat(bg, proj("p"), "f.txt")
		must(t, err)
		rf, err := e.fs.ReadFile(bg, proj("p"), "f.txt")
		must(t, err)
		pg, err := e.fs.ListEntries(bg, proj("p"), "", 0, "")
		must(t, err)
		if st2.Revision != ne.Revision || rf.Entry.Revision != ne.Revision || pg.Entries[0].Revision != ne.Revision {
			t.Fatalf("revisions differ: update %s stat %s read %s list %s", ne.Revision, st2.Revision, rf.Entry.Revision, pg.Entries[0].Revision)
		}
		// Stale revision.
		_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("x"), st.Revision)
		wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
		_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("x"), "")
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidArgument)
		// Content rules.
		_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("a\x00b"), ne.Revision)
		wantErr(t, err, CodeInvalidArgument, ReasonNotText)
		_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("caf\xe9"), ne.Revision)
		wantErr(t, err, CodeInvalidArgument, ReasonNotText)
		_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", make([]byte, 1<<20+1), ne.Revision)
		wantErr(t, err, CodeResourceExhausted, ReasonTooLarge)
		big := []byte(strings.Repeat("y", 1<<20))
		_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", big, ne.Revision)
		must(t, err)
		// Targets that are not editable text.
		e.write("projects/p/bin", "\x00\x01")
		b, _ := e.fs.Stat(bg, proj("p"), "bin")
		_, err = e.fs.UpdateFile(bg, proj("p"), "bin", []byte("x"), b.Revision)
		wantErr(t, err, CodeFailedPrecondition, ReasonNotText)
		e.write("outside/hl", "SECRET")
		must(t, os.Link(filepath.Join(e.dir, "outside/hl"), filepath.Join(e.dir, "projects/p/hl")))
		_, err = e.fs.UpdateFile(bg, proj("p"), "hl", []byte("x"), "x")
		wantErr(t, err, CodePermissionDenied, ReasonMultipleLinks)
		e.mkdir("projects/p/d")
		_, err = e.fs.UpdateFile(bg, proj("p"), "d", []byte("x"), "x")
		wantErr(t, err, CodeFailedPrecondition, ReasonNotAFile)
		_, err = e.fs.UpdateFile(bg, proj("p"), "missing", []byte("x"), "x")
		wantErr(t, err, CodeNotFound, ReasonNotFound)
		if e.read("outside/hl") != "SECRET" {
			t.Fatal("hard-linked secret changed")
		}
		// Global AGENTS.md is editable.
		e.write("codex/AGENTS.md", "a")
		a, _ := e.fs.Stat(bg, global, "AGENTS.md")
		_, err = e.fs.UpdateFile(bg, global, "AGENTS.md", []byte("b"), a.Revision)
		must(t, err)
		if e.read("codex/AGENTS.md") != "b" {
			t.Fatal("AGENTS.md")
		}
		if tf := e.tempFiles(); len(tf) != 0 {
			t.Fatalf("temp files left: %v", tf)
		}
		e.checkCanaries()
	})
}

// TestAtomicWriteFailures injects a failure at each step of the atomic
// write: the original bytes survive and no temp file remains.
func TestAtomicWriteFailures(t *testing.T) {
	boom := errors.New("injected")
	for _, tc := range []struct {
		name   string
		set    func(h *hooks)
		code   Code
		reason Reason
	}{
		{"write error", func(h *hooks) { h.write = func(int, []byte) (int, error) { return 0, unix.EIO } }, CodeInternal, ReasonInternal},
		{"short writes then ENOSPC", func(h *hooks) {
			n := 0
			h.write = func(fd int, b []byte) (int, error) {
				if n++; n > 2 {
					return 0, unix.ENOSPC
				}
				return unix.Write(fd, b[:1])
			}
		}, CodeResourceExhausted, ReasonNoSpace},
		{"fsync error", func(h *hooks) { h.fsync = func(int) error { return unix.EIO } }, CodeInternal, ReasonInternal},
		{"rename error", func(h *hooks) { h.beforeRename = func() error { return boom } }, CodeInternal, ReasonInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.write("projects/p/f.txt", "original")
			tc.set(&e.fs.hooks)
			st, err := e.fs.Stat(bg, proj("p"), "f.txt")
			must(t, err)
			_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("replacement"), st.Revision)
			wantErr(t, err, tc.code, tc.reason)
			_, _, err = e.fs.WriteStream(bg, proj("p"), "f.txt", strings.NewReader("stream"), 0, Precondition{})
			wantErr(t, err, tc.code, tc.reason)
			_, _, err = e.fs.WriteStream(bg, proj("p"), "new.txt", strings.NewReader("stream"), 0, Precondition{})
			wantErr(t, err, tc.code, tc.reason)
			if e.read("projects/p/f.txt") != "original" || e.exists("projects/p/new.txt") {
				t.Fatal("original bytes changed")
			}
			if tf := e.tempFiles(); len(tf) != 0 {
				t.Fatalf("temp files left: %v", tf)
			}
			st2, err := e.fs.Stat(bg, proj("p"), "f.txt")
			must(t, err)
			if st2.Revision != st.Revision {
				t.Fatal("revision changed by a failed write")
			}
		})
	}
}

// TestUpdateRecheckUnderLock: the agent rewrites the file after the temp
// file is written but before the commit: the revision re-check under the
// lock refuses to overwrite it.
func TestUpdateRecheckUnderLock(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/f.txt", "original")
	st, err := e.fs.Stat(bg, proj("p"), "f.txt")
	must(t, err)
	e.fs.hooks.beforeLock = func() {
		// Same size, in place: only the content hash (or ctime) tells.
		fh, err := os.OpenFile(filepath.Join(e.dir, "projects/p/f.txt"), os.O_WRONLY, 0)
		must(t, err)
		fh.WriteAt([]byte("AGENT!!!"), 0)
		fh.Close()
	}
	_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("mine"), st.Revision)
	wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
	if e.read("projects/p/f.txt") != "AGENT!!!" || len(e.tempFiles()) != 0 {
		t.Fatal("agent's write lost or temp left")
	}
}

// TestConcurrentUpdates: N goroutines update with the same revision:
// exactly one wins, the others get Aborted, the file holds the winner's bytes.
func TestConcurrentUpdates(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/f.txt", "start")
		st, err := e.fs.Stat(bg, proj("p"), "f.txt")
		must(t, err)
		const n = 16
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte(fmt.Sprintf("writer %d", i)), st.Revision)
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("two winners: %d and %d", winner, i)
				}
				winner = i
			default:
				wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
			}
		}
		if winner < 0 || e.read("projects/p/f.txt") != fmt.Sprintf("writer %d", winner) {
			t.Fatalf("winner %d, file %q", winner, e.read("projects/p/f.txt"))
		}
		if tf := e.tempFiles(); len(tf) != 0 {
			t.Fatalf("temp files left: %v", tf)
		}
	})
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	r.n--
	return copy(p, "partial data"), nil
}

func TestWriteStream(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/f.bin", "old")
		must(t, os.Chmod(filepath.Join(e.dir, "projects/p/f.bin"), 0o600))
		old, _ := e.fs.Stat(bg, proj("p"), "f.bin")
		// Create: 0644, created=true, any bytes.
		ne, created, err := e.fs.WriteStream(bg, proj("p"), "new.bin", strings.NewReader("\x00\xffbinary"), 0, Precondition{IfNoneMatch: true})
		must(t, err)
		fi, _ := os.Stat(filepath.Join(e.dir, "projects/p/new.bin"))
		if !created || fi.Mode().Perm() != 0o644 || e.read("projects/p/new.bin") != "\x00\xffbinary" || ne.Editable || ne.Reason != NotEditableBinary {
			t.Fatalf("create %+v %v %v", ne, created, fi.Mode())
		}
		if s, _ := e.fs.Stat(bg, proj("p"), "new.bin"); s.Revision != ne.Revision {
			t.Fatal("WriteStream revision differs from Stat")
		}
		// If-None-Match on an existing file, If-Match mismatch: 412-style.
		_, _, err = e.fs.WriteStream(bg, proj("p"), "f.bin", strings.NewReader("x"), 0, Precondition{IfNoneMatch: true})
		wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
		_, _, err = e.fs.WriteStream(bg, proj("p"), "f.bin", strings.NewReader("x"), 0, Precondition{IfMatch: "nope"})
		wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
		_, _, err = e.fs.WriteStream(bg, proj("p"), "absent", strings.NewReader("x"), 0, Precondition{IfMatch: old.Revision})
		wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
		// Replace with If-Match: keeps the mode.
		re, created, err := e.fs.WriteStream(bg, proj("p"), "f.bin", strings.NewReader("replaced"), 0, Precondition{IfMatch: old.Revision})
		must(t, err)
		fi, _ = os.Stat(filepath.Join(e.dir, "projects/p/f.bin"))
		if created || fi.Mode().Perm() != 0o600 || e.read("projects/p/f.bin") != "replaced" || !re.Editable {
			t.Fatalf("replace %+v %v", re, fi.Mode())
		}
		// Too large, aborted upload, missing parent: nothing written.
		_, _, err = e.fs.WriteStream(bg, proj("p"), "f.bin", strings.NewReader("0123456789"), 5, Precondition{})
		wantErr(t, err, CodeResourceExhausted, ReasonTooLarge)
		_, _, err = e.fs.WriteStream(bg, proj("p"), "f.bin", &failingReader{n: 3}, 0, Precondition{})
		if !errors.Is(err, io.ErrUnexpectedEOF) || CodeOf(err) == CodeOK {
			t.Fatalf("reader error: %v", err)
		}
		_, _, err = e.fs.WriteStream(bg, proj("p"), "nodir/x", strings.NewReader("x"), 0, Precondition{})
		wantErr(t, err, CodeNotFound, ReasonNotFound)
		_, _, err = e.fs.WriteStream(bg, proj("p"), "", strings.NewReader("x"), 0, Precondition{})
		wantErr(t, err, CodeFailedPrecondition, ReasonNotAFile)
		_, _, err = e.fs.WriteStream(bg, global, "skills", strings.NewReader("x"), 0, Precondition{})
		wantErr(t, err, CodeFailedPrecondition, ReasonNotAFile)
		_, _, err = e.fs.WriteStream(bg, global, "auth.json", strings.NewReader("x"), 0, Precondition{})
		wantErr(t, err, CodePermissionDenied, ReasonOutsideGlobal)
		if e.read("projects/p/f.bin") != "replaced" || e.exists("projects/p/nodir") {
			t.Fatal("failed writes changed something")
		}
		// Large file: stat-only revision, streamed.
		big := strings.Repeat("z", 3<<20)
		be, _, err := e.fs.WriteStream(bg, proj("p"), "big", strings.NewReader(big), 0, Precondition{})
		must(t, err)
		if be.Size != int64(len(big)) || be.Reason != NotEditableTooLarge || be.Revision[0] != 's' {
			t.Fatalf("big %+v", be)
		}
		if tf := e.tempFiles(); len(tf) != 0 {
			t.Fatalf("temp files left: %v", tf)
		}
		e.checkCanaries()
	})
}

// TestWriteStreamCreateRace: the agent creates the target between
// WriteStream's check and its rename: the create is refused as a
// concurrent change, the agent's bytes stay and no temp file is left.
func TestWriteStreamCreateRace(t *testing.T) {
	for _, pre := range []Precondition{{}, {IfNoneMatch: true}} {
		e := newEnv(t, nil)
		e.mkdir("projects/p")
		e.fs.hooks.beforeRename = func() error {
			e.write("projects/p/new.txt", "agent's\x00bytes")
			return nil
		}
		_, _, err := e.fs.WriteStream(bg, proj("p"), "new.txt", strings.NewReader("mine"), 0, pre)
		wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
		if got := e.read("projects/p/new.txt"); got != "agent's\x00bytes" {
			t.Fatalf("%+v: agent's file = %q", pre, got)
		}
		if tf := e.tempFiles(); len(tf) != 0 {
			t.Fatalf("%+v: temp files left: %v", pre, tf)
		}
	}
}

// TestUpdateFileRemovedRace: the target is removed between UpdateFile's
// check and its rename: NotFound, nothing recreated, no temp file left.
func TestUpdateFileRemovedRace(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/f.txt", "original")
	st, err := e.fs.Stat(bg, proj("p"), "f.txt")
	must(t, err)
	e.fs.hooks.beforeRename = func() error {
		return os.Remove(filepath.Join(e.dir, "projects/p/f.txt"))
	}
	_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("mine"), st.Revision)
	wantErr(t, err, CodeNotFound, ReasonNotFound)
	if e.exists("projects/p/f.txt") {
		t.Fatal("the removed file was recreated")
	}
	if tf := e.tempFiles(); len(tf) != 0 {
		t.Fatalf("temp files left: %v", tf)
	}
}
