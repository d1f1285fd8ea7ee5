package davfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFileClassification(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/text.md", "héllo\n")
		e.write("projects/p/empty", "")
		e.write("projects/p/nul.bin", "a\x00b")
		e.write("outside/linked", "SECRET")
		e.write("projects/p/latin1.txt", "caf\xe9")
		e.write("projects/p/exact", strings.Repeat("x", 1<<20))
		e.write("projects/p/big", strings.Repeat("x", 1<<20+1))
		must(t, os.Link(filepath.Join(e.dir, "outside/linked"), filepath.Join(e.dir, "projects/p/hard")))
		must(t, syscall.Mkfifo(filepath.Join(e.dir, "projects/p/fifo"), 0o644))
		for _, tc := range []struct {
			path     string
			editable bool
			reason   NonEditableReason
			content  string
		}{
			{"text.md", true, EditableOK, "héllo\n"},
			{"empty", true, EditableOK, ""},
			{"nul.bin", false, NotEditableBinary, ""},
			{"latin1.txt", false, NotEditableNotUTF8, ""},
			{"exact", true, EditableOK, strings.Repeat("x", 1<<20)},
			{"big", false, NotEditableTooLarge, ""},
		} {
			f, err := e.fs.ReadFile(bg, proj("p"), tc.path)
			must(t, err)
			if f.Entry.Editable != tc.editable || f.Entry.Reason != tc.reason || string(f.Content) != tc.content {
				t.Errorf("%s: editable=%v reason=%v len=%d", tc.path, f.Entry.Editable, f.Entry.Reason, len(f.Content))
			}
			if !tc.editable && f.Content != nil {
				t.Errorf("%s: content returned for a non-editable file", tc.path)
			}
			st, err := e.fs.Stat(bg, proj("p"), tc.path)
			must(t, err)
			if st.Revision != f.Entry.Revision || st.Editable != tc.editable || st.Reason != tc.reason {
				t.Errorf("%s: Stat %+v != ReadFile %+v", tc.path, st, f.Entry)
			}
		}
		// A hard-linked file is refused for reading, listed as not editable.
		_, err := e.fs.ReadFile(bg, proj("p"), "hard")
		wantErr(t, err, CodePermissionDenied, ReasonMultipleLinks)
		_, _, err = e.fs.OpenRead(bg, proj("p"), "hard")
		wantErr(t, err, CodePermissionDenied, ReasonMultipleLinks)
		_, _, err = e.fs.OpenReader(bg, proj("p"), "hard")
		wantErr(t, err, CodePermissionDenied, ReasonMultipleLinks)
		// A FIFO is never opened: the call returns at once.
		done := make(chan error, 1)
		go func() { _, err := e.fs.ReadFile(bg, proj("p"), "fifo"); done <- err }()
		select {
		case err := <-done:
			wantErr(t, err, CodeFailedPrecondition, ReasonNotRegular)
		case <-time.After(5 * time.Second):
			t.Fatal("ReadFile hung on a FIFO")
		}
		_, err = e.fs.ReadFile(bg, proj("p"), "")
		wantErr(t, err, CodeFailedPrecondition, ReasonNotAFile)
		_, err = e.fs.ReadFile(bg, proj("p"), "missing")
		wantErr(t, err, CodeNotFound, ReasonNotFound)
		_, err = e.fs.ReadFile(bg, proj("p"), "text.md/x")
		wantErr(t, err, CodeNotFound, ReasonNotFound)

		all, err := e.fs.ReadDir(bg, proj("p"), "")
		must(t, err)
		byName := map[string]Entry{}
		for _, x := range all {
			byName[x.Name] = x
		}
		if _, ok := byName["fifo"]; ok {
			t.Error("FIFO listed")
		}
		if h := byName["hard"]; h.Editable || h.Reason != NotEditableMultipleLinks {
			t.Errorf("hard link listed as %+v", h)
		}
		if x := byName["latin1.txt"]; x.Editable || x.Reason != NotEditableNotUTF8 {
			t.Errorf("latin1 listed as %+v", x)
		}
		if x := byName["text.md"]; !x.Editable {
			t.Errorf("text listed as %+v", x)
		}
	})
}

func TestOpenRead(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/big.bin", strings.Repeat("0123456789", 300000))
	f, ent, err := e.fs.OpenRead(bg, proj("p"), "big.bin")
	must(t, err)
	defer f.Close()
	if f.Name() != "big.bin" || ent.Size != 3000000 || ent.Editable {
		t.Fatalf("got %q %+v", f.Name(), ent)
	}
	if _, err := f.Seek(1000005, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if _, err := io.ReadFull(f, b); err != nil || string(b) != "56789" {
		t.Fatalf("read %q %v", b, err)
	}
	st, err := e.fs.Stat(bg, proj("p"), "big.bin")
	must(t, err)
	if st.Revision != ent.Revision {
		t.Fatal("OpenRead and Stat revisions differ")
	}
}

// TestOpenReader: small files come from memory with the content their
// revision describes (editable or not), larger ones and files whose
// revision does not cover their content are *os.File; both read, seek and
// ReadAt like the file, and report what Stat reports.
func TestOpenReader(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxEditableFileSize = 32 << 10 })
	files := map[string]string{
		"small.txt": "hello, small world\n",
		"empty.txt": "",
		"bin.dat":   "a\x00b\x00c",
		"mid.txt":   strings.Repeat("m", 40<<10), // over the editable limit: stat revision
		"limit.txt": strings.Repeat("l", 32<<10),
		"big.txt":   strings.Repeat("0123456789", 10000),
	}
	for name, content := range files {
		e.write("projects/p/"+name, content)
	}
	for name, content := range files {
		r, ent, err := e.fs.OpenReader(bg, proj("p"), name)
		must(t, err)
		_, isFile := r.(*os.File)
		if wantFile := len(content) > 32<<10; isFile != wantFile {
			t.Errorf("%s: *os.File %v, want %v", name, isFile, wantFile)
		}
		st, err := e.fs.Stat(bg, proj("p"), name)
		must(t, err)
		if ent.Revision != st.Revision || ent.Size != int64(len(content)) || ent.Editable != st.Editable ||
			ent.Reason != st.Reason || !ent.ModTime.Equal(st.ModTime) || ent.Name != name || ent.Path != name {
			t.Errorf("%s: OpenReader %+v, Stat %+v", name, ent, st)
		}
		b, err := io.ReadAll(r)
		must(t, err)
		if string(b) != content {
			t.Errorf("%s: read %d bytes, want %d", name, len(b), len(content))
		}
		if len(content) > 3 {
			if _, err := r.Seek(1, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			p := make([]byte, 2)
			if _, err := io.ReadFull(r, p); err != nil || string(p) != content[1:3] {
				t.Errorf("%s: after Seek read %q %v", name, p, err)
			}
			if n, err := r.ReadAt(p, int64(len(content)-2)); n != 2 || string(p) != content[len(content)-2:] {
				t.Errorf("%s: ReadAt %q %d %v", name, p, n, err)
			}
		}
		must(t, r.Close())
	}
	// The bytes served are those of the revision returned, even when the
	// file is replaced right after.
	r, ent, err := e.fs.OpenReader(bg, proj("p"), "small.txt")
	must(t, err)
	e.write("projects/p/small.txt", "replaced")
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != files["small.txt"] {
		t.Fatalf("read %q after the file was replaced", b)
	}
	if st, _ := e.fs.Stat(bg, proj("p"), "small.txt"); st.Revision == ent.Revision {
		t.Fatal("the replaced file kept its revision")
	}
	for _, p := range []string{"", "missing", "small.txt/x"} {
		if _, _, err := e.fs.OpenReader(bg, proj("p"), p); err == nil {
			t.Errorf("OpenReader(%q) succeeded", p)
		}
	}
	e.checkCanaries()
}

func TestListEntriesOrderAndDenylist(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		for _, n := range []string{"b.txt", "A.txt", "a.txt", "_x"} {
			e.write("projects/p/"+n, n)
		}
		for _, n := range []string{"zdir", "Bdir", "adir", ".git", "node_modules", ".venv"} {
			e.mkdir("projects/p/" + n)
		}
		e.write("projects/p/.davfs-tmp-abc", "temp")
		e.write("projects/p/\xffbad", "invalid name")
		pg, err := e.fs.ListEntries(bg, proj("p"), "", 0, "")
		must(t, err)
		var got []string
		for _, x := range pg.Entries {
			got = append(got, x.Name)
		}
		want := "adir Bdir zdir _x A.txt a.txt b.txt" // natural order (NaturalCompare)
		if strings.Join(got, " ") != want {
			t.Fatalf("order %q, want %q", got, want)
		}
		if pg.NextCursor != "" || pg.DirectoryRevision == "" {
			t.Fatalf("page %+v", pg)
		}
		if pg.Entries[0].Type != TypeDirectory || pg.Entries[0].Path != "adir" || pg.Entries[0].Size != 0 {
			t.Fatalf("entry %+v", pg.Entries[0])
		}
		for _, p := range []string{".git", "node_modules", "a/.venv/x"} {
			_, err := e.fs.ListEntries(bg, proj("p"), p, 0, "")
			wantErr(t, err, CodePermissionDenied, ReasonDenylisted)
		}
		_, err = e.fs.ListEntries(bg, proj("p"), "a.txt", 0, "")
		wantErr(t, err, CodeFailedPrecondition, ReasonNotADirectory)
		_, err = e.fs.ListEntries(bg, proj("p"), "nope", 0, "")
		wantErr(t, err, CodeNotFound, ReasonNotFound)
		st, err := e.fs.Stat(bg, proj("p"), "")
		must(t, err)
		if st.Revision != pg.DirectoryRevision || st.Type != TypeDirectory {
			t.Fatalf("root stat %+v vs page rev %s", st, pg.DirectoryRevision)
		}
	})
}

func TestListEntriesPaging(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 25 {
		e.write(fmt.Sprintf("projects/p/f%02d", i), "x")
	}
	for i := range 5 {
		e.mkdir(fmt.Sprintf("projects/p/d%02d", i))
	}
	var names []string
	cursor := ""
	pages := 0
	for {
		pg, err := e.fs.ListEntries(bg, proj("p"), "", 7, cursor)
		must(t, err)
		pages++
		for _, x := range pg.Entries {
			names = append(names, x.Name)
		}
		if pg.NextCursor == "" {
			break
		}
		cursor = pg.NextCursor
	}
	if pages != 5 || len(names) != 30 || names[0] != "d00" || names[5] != "f00" || names[29] != "f24" {
		t.Fatalf("pages=%d names=%v", pages, names)
	}
	// Page size rules.
	_, err := e.fs.ListEntries(bg, proj("p"), "", 501, "")
	wantErr(t, err, CodeResourceExhausted, ReasonPageSizeTooLarge)
	_, err = e.fs.ListEntries(bg, proj("p"), "", -1, "")
	wantErr(t, err, CodeInvalidArgument, ReasonInvalidArgument)
	pg, err := e.fs.ListEntries(bg, proj("p"), "", 500, "")
	must(t, err)
	if len(pg.Entries) != 30 {
		t.Fatal(len(pg.Entries))
	}
	// Cursor rules: garbage, another path or workspace, a changed directory.
	pg, err = e.fs.ListEntries(bg, proj("p"), "", 10, "")
	must(t, err)
	for _, bad := range []string{"!!!", "e30", "bm90IGpzb24"} {
		_, err = e.fs.ListEntries(bg, proj("p"), "", 10, bad)
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidCursor)
	}
	e.mkdir("projects/q/d00")
	_, err = e.fs.ListEntries(bg, proj("q"), "", 10, pg.NextCursor)
	wantErr(t, err, CodeAborted, ReasonCursorStale)
	_, err = e.fs.ListEntries(bg, proj("p"), "d00", 10, pg.NextCursor)
	wantErr(t, err, CodeAborted, ReasonCursorStale)
	_, err = e.fs.ListEntries(bg, global, "", 10, pg.NextCursor)
	wantErr(t, err, CodeAborted, ReasonCursorStale)
	if _, err = e.fs.ListEntries(bg, proj("p"), "", 10, pg.NextCursor); err != nil {
		t.Fatal(err)
	}
	e.write("projects/p/new", "x")
	_, err = e.fs.ListEntries(bg, proj("p"), "", 10, pg.NextCursor)
	wantErr(t, err, CodeAborted, ReasonCursorStale)
}

func TestGlobalRootListing(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		pg, err := e.fs.ListEntries(bg, global, "", 0, "")
		must(t, err)
		if len(pg.Entries) != 1 || pg.Entries[0].Name != "skills" || pg.Entries[0].Type != TypeDirectory {
			t.Fatalf("global root %+v", pg.Entries)
		}
		e.write("codex/AGENTS.md", "# agents")
		e.write("codex/skills/s/SKILL.md", "x")
		pg2, err := e.fs.ListEntries(bg, global, "", 1, "")
		must(t, err)
		if pg2.DirectoryRevision == pg.DirectoryRevision || len(pg2.Entries) != 1 || pg2.NextCursor == "" {
			t.Fatalf("page %+v", pg2)
		}
		pg3, err := e.fs.ListEntries(bg, global, "", 1, pg2.NextCursor)
		must(t, err)
		if len(pg3.Entries) != 1 || pg3.Entries[0].Name != "AGENTS.md" || !pg3.Entries[0].Editable || pg3.NextCursor != "" {
			t.Fatalf("page %+v", pg3)
		}
		all, err := e.fs.ReadDir(bg, global, "skills")
		must(t, err)
		if len(all) != 1 || all[0].Path != "skills/s" {
			t.Fatalf("skills %+v", all)
		}
		st, err := e.fs.Stat(bg, global, "")
		must(t, err)
		if st.Revision != pg2.DirectoryRevision {
			t.Fatal("global root revision differs between Stat and ListEntries")
		}
	})
}

func TestRevisionsStableAndMoving(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/f.txt", "one")
	a, err := e.fs.Stat(bg, proj("p"), "f.txt")
	must(t, err)
	b, err := e.fs.Stat(bg, proj("p"), "f.txt")
	must(t, err)
	if a.Revision != b.Revision {
		t.Fatal("revision not stable")
	}
	// An in-place rewrite of the same size changes the revision, whatever
	// the timestamp granularity (the content hash covers it).
	p := filepath.Join(e.dir, "projects/p/f.txt")
	fh, err := os.OpenFile(p, os.O_WRONLY, 0)
	must(t, err)
	_, err = fh.WriteAt([]byte("two"), 0)
	must(t, err)
	must(t, fh.Close())
	c, err := e.fs.Stat(bg, proj("p"), "f.txt")
	must(t, err)
	if c.Revision == a.Revision {
		t.Fatal("revision did not change after a rewrite")
	}
	d, err := e.fs.Stat(bg, proj("p"), "")
	must(t, err)
	e.write("projects/p/g.txt", "x")
	d2, err := e.fs.Stat(bg, proj("p"), "")
	must(t, err)
	if d.Revision == d2.Revision {
		t.Fatal("directory revision did not change after adding an entry")
	}
}

// TestCursorDeepPath: a cursor for a long, deep directory still decodes.
func TestCursorDeepPath(t *testing.T) {
	e := newEnv(t, nil)
	seg := strings.Repeat("d", 60)
	var segs []string
	for range 60 {
		segs = append(segs, seg)
	}
	dir := strings.Join(segs, "/")
	for i := range 3 {
		e.write(fmt.Sprintf("projects/p/%s/%s%d", dir, strings.Repeat("n", 200), i), "x")
	}
	pg, err := e.fs.ListEntries(bg, proj("p"), dir, 1, "")
	must(t, err)
	pg2, err := e.fs.ListEntries(bg, proj("p"), dir, 1, pg.NextCursor)
	must(t, err)
	if len(pg2.Entries) != 1 || pg2.Entries[0].Name == pg.Entries[0].Name {
		t.Fatalf("second page %+v", pg2.Entries)
	}
}

// Pages follow the natural order too: burst-1 … burst-120 in pages of 7
// come back each once, in numeric order (the cursor compares the same way).
func TestListEntriesNaturalOrderAcrossPages(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		for i := 120; i >= 1; i-- {
			e.write(fmt.Sprintf("projects/p/burst-%d", i), "x")
		}
		var got []string
		cursor := ""
		for {
			pg, err := e.fs.ListEntries(bg, proj("p"), "", 7, cursor)
			must(t, err)
			for _, x := range pg.Entries {
				got = append(got, x.Name)
			}
			if cursor = pg.NextCursor; cursor == "" {
				break
			}
		}
		if len(got) != 120 {
			t.Fatalf("%d entries over the pages, want 120", len(got))
		}
		for i, n := range got {
			if want := fmt.Sprintf("burst-%d", i+1); n != want {
				t.Fatalf("entry %d is %q, want %q (all: %q)", i, n, want, got)
			}
		}
	})
}
