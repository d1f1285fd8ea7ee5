package davfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestCreateEntry(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.mkdir("projects/p/dir")
		e.write("projects/p/f.txt", "keep")
		old := syscall.Umask(0o077) // fchmod must defeat the umask
		fe, err := e.fs.CreateEntry(bg, proj("p"), "dir", "new.md", TypeFile)
		de, err2 := e.fs.CreateEntry(bg, proj("p"), "", "sub", TypeDirectory)
		syscall.Umask(old)
		must(t, err)
		must(t, err2)
		if fe.Path != "dir/new.md" || fe.Type != TypeFile || !fe.Editable || fe.Size != 0 || de.Type != TypeDirectory || de.Path != "sub" {
			t.Fatalf("entries %+v %+v", fe, de)
		}
		for rel, mode := range map[string]os.FileMode{"projects/p/dir/new.md": 0o644, "projects/p/sub": 0o755} {
			fi, err := os.Stat(filepath.Join(e.dir, rel))
			must(t, err)
			if fi.Mode().Perm() != mode {
				t.Errorf("%s mode %v", rel, fi.Mode())
			}
		}
		// Existing names of any type: AlreadyExists, untouched.
		for _, n := range []string{"f.txt", "dir"} {
			for _, typ := range []EntryType{TypeFile, TypeDirectory} {
				_, err := e.fs.CreateEntry(bg, proj("p"), "", n, typ)
				wantErr(t, err, CodeAlreadyExists, ReasonAlreadyExists)
			}
		}
		e.symlink("outside/canary.txt", "projects/p/lnk")
		_, err = e.fs.CreateEntry(bg, proj("p"), "", "lnk", TypeFile)
		wantErr(t, err, CodeAlreadyExists, ReasonAlreadyExists)
		if e.read("projects/p/f.txt") != "keep" {
			t.Fatal("existing file touched")
		}
		// Names.
		for _, n := range []string{"", ".", "..", "a/b", "a\x00", "\xff"} {
			_, err := e.fs.CreateEntry(bg, proj("p"), "", n, TypeFile)
			wantErr(t, err, CodeInvalidArgument, ReasonInvalidName)
		}
		for _, n := range []string{".git", "node_modules"} {
			_, err := e.fs.CreateEntry(bg, proj("p"), "", n, TypeDirectory)
			wantErr(t, err, CodePermissionDenied, ReasonDenylisted)
		}
		_, err = e.fs.CreateEntry(bg, proj("p"), "", "x", EntryType(9))
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidArgument)
		_, err = e.fs.CreateEntry(bg, proj("p"), "missing", "x", TypeFile)
		wantErr(t, err, CodeNotFound, ReasonNotFound)
		_, err = e.fs.CreateEntry(bg, proj("p"), "f.txt", "x", TypeFile)
		wantErr(t, err, CodeFailedPrecondition, ReasonNotADirectory)
		e.symlink("outside", "projects/p/ldir")
		_, err = e.fs.CreateEntry(bg, proj("p"), "ldir", "x", TypeFile)
		wantErr(t, err, CodePermissionDenied, ReasonSymlink)
		_, err = e.fs.CreateEntry(bg, proj("nope"), "", "x", TypeFile)
		wantErr(t, err, CodeNotFound, ReasonProjectNotFound)

		// Global: only AGENTS.md (a file) at the root; anything in skills/.
		_, err = e.fs.CreateEntry(bg, global, "", "auth.json", TypeFile)
		wantErr(t, err, CodePermissionDenied, ReasonOutsideGlobal)
		_, err = e.fs.CreateEntry(bg, global, "", "third", TypeDirectory)
		wantErr(t, err, CodePermissionDenied, ReasonOutsideGlobal)
		_, err = e.fs.CreateEntry(bg, global, "", "skills", TypeDirectory)
		wantErr(t, err, CodeAlreadyExists, ReasonAlreadyExists)
		_, err = e.fs.CreateEntry(bg, global, "", "AGENTS.md", TypeDirectory)
		wantErr(t, err, CodePermissionDenied, ReasonProtected)
		a, err := e.fs.CreateEntry(bg, global, "", "AGENTS.md", TypeFile)
		must(t, err)
		if a.Path != "AGENTS.md" || !e.exists("codex/AGENTS.md") {
			t.Fatalf("AGENTS.md %+v", a)
		}
		_, err = e.fs.CreateEntry(bg, global, "", "AGENTS.md", TypeFile)
		wantErr(t, err, CodeAlreadyExists, ReasonAlreadyExists)
		_, err = e.fs.CreateEntry(bg, global, "skills", "my-skill", TypeDirectory)
		must(t, err)
		_, err = e.fs.CreateEntry(bg, global, "skills/my-skill", "SKILL.md", TypeFile)
		must(t, err)
		e.checkCanaries()
	})
}

func TestMoveEntry(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/a/f.txt", "content")
		e.write("projects/p/b/taken.txt", "taken")
		e.mkdir("projects/p/a/inner")
		rev := func(ws Workspace, p string) string {
			t.Helper()
			st, err := e.fs.Stat(bg, ws, p)
			must(t, err)
			return st.Revision
		}
		_, err := e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "b/g.txt", "")
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidArgument)
		_, err = e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "b/g.txt", "stale")
		wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
		_, err = e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "b/taken.txt", rev(proj("p"), "a/f.txt"))
		wantErr(t, err, CodeAlreadyExists, ReasonAlreadyExists)
		_, err = e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "nope/g.txt", rev(proj("p"), "a/f.txt"))
		wantErr(t, err, CodeNotFound, ReasonNotFound)
		_, err = e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "b/taken.txt/x", rev(proj("p"), "a/f.txt"))
		wantErr(t, err, CodeFailedPrecondition, ReasonNotADirectory)
		_, err = e.fs.MoveEntry(bg, proj("p"), "a", "a/inner/a", rev(proj("p"), "a"))
		wantErr(t, err, CodeFailedPrecondition, ReasonMoveIntoSelf)
		_, err = e.fs.MoveEntry(bg, proj("p"), "a", "a", rev(proj("p"), "a"))
		wantErr(t, err, CodeAlreadyExists, ReasonAlreadyExists)
		_, err = e.fs.MoveEntry(bg, proj("p"), "", "x", rev(proj("p"), ""))
		wantErr(t, err, CodePermissionDenied, ReasonProtected)
		_, err = e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "node_modules", rev(proj("p"), "a/f.txt"))
		wantErr(t, err, CodePermissionDenied, ReasonDenylisted)
		e.symlink("outside", "projects/p/out")
		_, err = e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "out/f.txt", rev(proj("p"), "a/f.txt"))
		wantErr(t, err, CodePermissionDenied, ReasonSymlink)
		_, err = e.fs.MoveEntry(bg, proj("p"), "out", "out2", "x")
		wantErr(t, err, CodePermissionDenied, ReasonSymlink)
		if e.read("projects/p/b/taken.txt") != "taken" || e.read("projects/p/a/f.txt") != "content" {
			t.Fatal("refused moves changed files")
		}
		before := rev(proj("p"), "a/f.txt")
		m, err := e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "b/g.txt", before)
		must(t, err)
		if m.Path != "b/g.txt" || e.exists("projects/p/a/f.txt") || e.read("projects/p/b/g.txt") != "content" {
			t.Fatalf("moved %+v", m)
		}
		if m.Revision != rev(proj("p"), "b/g.txt") {
			t.Fatal("MoveEntry's revision differs from Stat")
		}
		// A directory moves with its content.
		_, err = e.fs.MoveEntry(bg, proj("p"), "a", "b/a2", rev(proj("p"), "a"))
		must(t, err)
		if !e.exists("projects/p/b/a2/inner") {
			t.Fatal("directory not moved")
		}

		// Global.
		e.write("codex/AGENTS.md", "agents")
		e.write("codex/skills/s1/SKILL.md", "s")
		for _, c := range []struct {
			src, dst string
			reason   Reason
		}{
			{"skills", "skills2", ReasonOutsideGlobal}, {"skills", "skills/x", ReasonProtected},
			{"AGENTS.md", "skills/AGENTS.md", ReasonProtected}, {"AGENTS.md", "AGENTS2.md", ReasonOutsideGlobal},
			{"skills/s1", "AGENTS.md", ReasonProtected}, {"skills/s1", "s1", ReasonOutsideGlobal},
			{"skills/s1", "skills", ReasonProtected},
		} {
			r := "x"
			if st, err := e.fs.Stat(bg, global, c.src); err == nil {
				r = st.Revision
			}
			_, err := e.fs.MoveEntry(bg, global, c.src, c.dst, r)
			wantErr(t, err, CodePermissionDenied, c.reason)
		}
		_, err = e.fs.MoveEntry(bg, global, "skills/s1", "skills/s2", rev(global, "skills/s1"))
		must(t, err)
		if !e.exists("codex/skills/s2/SKILL.md") || e.read("codex/AGENTS.md") != "agents" {
			t.Fatal("global move")
		}
		e.checkCanaries()
	})
}

func TestDeleteEntry(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/f.txt", "f")
		e.mkdir("projects/p/empty")
		e.write("projects/p/full/sub/x.txt", "x")
		e.write("projects/p/full/.git/HEAD", "h")
		e.symlink("outside", "projects/p/full/escape")
		e.symlink("outside/canary.txt", "projects/p/full/sub/c")
		rev := func(ws Workspace, p string) string {
			t.Helper()
			st, err := e.fs.Stat(bg, ws, p)
			must(t, err)
			return st.Revision
		}
		err := e.fs.DeleteEntry(bg, proj("p"), "f.txt", "", false)
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidArgument)
		err = e.fs.DeleteEntry(bg, proj("p"), "f.txt", "stale", false)
		wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
		if !e.exists("projects/p/f.txt") {
			t.Fatal("deleted on a stale revision")
		}
		must(t, e.fs.DeleteEntry(bg, proj("p"), "f.txt", rev(proj("p"), "f.txt"), false))
		must(t, e.fs.DeleteEntry(bg, proj("p"), "empty", rev(proj("p"), "empty"), false))
		err = e.fs.DeleteEntry(bg, proj("p"), "full", rev(proj("p"), "full"), false)
		wantErr(t, err, CodeFailedPrecondition, ReasonDirectoryNotEmpty)
		must(t, e.fs.DeleteEntry(bg, proj("p"), "full", rev(proj("p"), "full"), true))
		if e.exists("projects/p/f.txt") || e.exists("projects/p/empty") || e.exists("projects/p/full") {
			t.Fatal("not deleted")
		}
		e.checkCanaries()
		err = e.fs.DeleteEntry(bg, proj("p"), "", rev(proj("p"), ""), true)
		wantErr(t, err, CodePermissionDenied, ReasonProtected)
		err = e.fs.DeleteEntry(bg, proj("p"), "missing", "x", false)
		wantErr(t, err, CodeNotFound, ReasonNotFound)
		e.symlink("outside", "projects/p/lnk")
		err = e.fs.DeleteEntry(bg, proj("p"), "lnk", "x", true)
		wantErr(t, err, CodePermissionDenied, ReasonSymlink)
		if !e.exists("projects/p/lnk") {
			t.Fatal("symlink removed")
		}
		e.mkdir("projects/p/node_modules")
		err = e.fs.DeleteEntry(bg, proj("p"), "node_modules", "x", true)
		wantErr(t, err, CodePermissionDenied, ReasonDenylisted)

		// Global: skills root protected, AGENTS.md deletable.
		e.write("codex/AGENTS.md", "a")
		err = e.fs.DeleteEntry(bg, global, "skills", rev(global, "skills"), true)
		wantErr(t, err, CodePermissionDenied, ReasonProtected)
		err = e.fs.DeleteEntry(bg, global, "", rev(global, ""), true)
		wantErr(t, err, CodePermissionDenied, ReasonProtected)
		err = e.fs.DeleteEntry(bg, global, "auth.json", "x", false)
		wantErr(t, err, CodePermissionDenied, ReasonOutsideGlobal)
		must(t, e.fs.DeleteEntry(bg, global, "AGENTS.md", rev(global, "AGENTS.md"), false))
		if e.exists("codex/AGENTS.md") || !e.exists("codex/skills") {
			t.Fatal("global delete")
		}
		e.checkCanaries()
	})
}
