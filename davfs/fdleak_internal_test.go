package davfs

import (
	"os"
	"strings"
	"testing"
)

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(ents)
}

// TestNoFDLeaks runs every operation on success and error paths and checks
// the process holds no more fds afterwards.
func TestNoFDLeaks(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/a/f.txt", "x")
		e.write("projects/p/a/bin", "\x00")
		e.symlink("outside", "projects/p/lnk")
		e.write("codex/AGENTS.md", "a")
		before := openFDs(t)
		for range 3 {
			for _, p := range []string{"", "a", "a/f.txt", "a/bin", "lnk", "lnk/canary.txt", "missing", "a/f.txt/x"} {
				e.fs.Stat(bg, proj("p"), p)
				e.fs.ReadFile(bg, proj("p"), p)
				e.fs.ListEntries(bg, proj("p"), p, 0, "")
				e.fs.ReadDir(bg, proj("p"), p)
				if f, _, err := e.fs.OpenRead(bg, proj("p"), p); err == nil {
					f.Close()
				}
				if f, _, err := e.fs.OpenReader(bg, proj("p"), p); err == nil {
					f.Close()
				}
				e.fs.UpdateFile(bg, proj("p"), p, []byte("y"), "bad")
				e.fs.WriteStream(bg, proj("p"), p, strings.NewReader("z"), 0, Precondition{IfMatch: "bad"})
				e.fs.DeleteEntry(bg, proj("p"), p, "bad", true)
				e.fs.MoveEntry(bg, proj("p"), p, "moved", "bad")
				e.fs.CreateEntry(bg, proj("p"), p, "new", TypeFile)
			}
			st, _ := e.fs.Stat(bg, proj("p"), "a/f.txt")
			st2, err := e.fs.UpdateFile(bg, proj("p"), "a/f.txt", []byte("y"), st.Revision)
			must(t, err)
			m, err := e.fs.MoveEntry(bg, proj("p"), "a/f.txt", "g.txt", st2.Revision)
			must(t, err)
			_, err = e.fs.MoveEntry(bg, proj("p"), "g.txt", "a/f.txt", m.Revision)
			must(t, err)
			_, _, err = e.fs.WriteStream(bg, proj("p"), "w.txt", strings.NewReader("w"), 0, Precondition{})
			must(t, err)
			w, _ := e.fs.Stat(bg, proj("p"), "w.txt")
			must(t, e.fs.DeleteEntry(bg, proj("p"), "w.txt", w.Revision, false))
			e.fs.Stat(bg, global, "")
			e.fs.ListEntries(bg, global, "", 0, "")
			e.fs.ListProjects(bg, 0, "")
			_, err = e.fs.CreateProject(bg, "tmp")
			must(t, err)
			must(t, e.fs.DeleteProject(bg, "tmp", "tmp"))
			e.fs.DeleteProject(bg, "lnk", "lnk")
		}
		if after := openFDs(t); after != before {
			t.Fatalf("fds: %d before, %d after", before, after)
		}
	})
}
