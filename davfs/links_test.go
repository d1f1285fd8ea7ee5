package davfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// linkedEnv is an env with skills/x a second name of CODEX_HOME's
// auth.json (the attack of links.go) and projects/p/h a second name of
// outside/canary.txt. Both targets are canaries inside the test's temp tree.
func linkedEnv(t *testing.T, disable bool) *env {
	e := newEnv(t, func(c *Config) { c.DisableOpenat2 = disable })
	e.mkdir("projects/p/d")
	e.write("projects/p/d/plain.txt", "plain")
	must(t, os.Link(filepath.Join(e.dir, "codex/auth.json"), filepath.Join(e.dir, "codex/skills/x")))
	must(t, os.Link(filepath.Join(e.dir, "outside/canary.txt"), filepath.Join(e.dir, "projects/p/h")))
	must(t, os.Link(filepath.Join(e.dir, "outside/canary.txt"), filepath.Join(e.dir, "projects/p/d/h")))
	return e
}

// TestMultipleLinksPolicy walks every FS operation over a file with two
// hard links, in both namespaces and both resolution modes: content
// operations are refused with MULTIPLE_LINKS and change nothing; name
// operations (delete, rename) are allowed and leave the other name's bytes
// as they were.
func TestMultipleLinksPolicy(t *testing.T) {
	type tc struct {
		name    string
		op      func(e *env, ws Workspace, p, rev string) error
		allowed bool // the name may be acted on (links.go)
	}
	cases := []tc{
		{"ReadFile", func(e *env, ws Workspace, p, _ string) error {
			_, err := e.fs.ReadFile(bg, ws, p)
			return err
		}, false},
		{"OpenRead", func(e *env, ws Workspace, p, _ string) error {
			f, _, err := e.fs.OpenRead(bg, ws, p)
			if err == nil {
				f.Close()
			}
			return err
		}, false},
		{"OpenReader", func(e *env, ws Workspace, p, _ string) error {
			r, _, err := e.fs.OpenReader(bg, ws, p)
			if err == nil {
				r.Close()
			}
			return err
		}, false},
		{"UpdateFile", func(e *env, ws Workspace, p, rev string) error {
			_, err := e.fs.UpdateFile(bg, ws, p, []byte("OVERWRITTEN"), rev)
			return err
		}, false},
		{"WriteStream", func(e *env, ws Workspace, p, _ string) error {
			_, _, err := e.fs.WriteStream(bg, ws, p, strings.NewReader("OVERWRITTEN"), 0, Precondition{})
			return err
		}, false},
		{"WriteStream/IfMatch", func(e *env, ws Workspace, p, rev string) error {
			_, _, err := e.fs.WriteStream(bg, ws, p, strings.NewReader("OVERWRITTEN"), 0, Precondition{IfMatch: rev})
			return err
		}, false},
		{"DeleteEntryWith/Replace", func(e *env, ws Workspace, p, rev string) error {
			return deleteWith(e.fs, bg, ws, p, rev, DeleteOptions{Replace: true})
		}, false},
		{"DeleteEntry", func(e *env, ws Workspace, p, rev string) error {
			return e.fs.DeleteEntry(bg, ws, p, rev, false)
		}, true},
		{"MoveEntry", func(e *env, ws Workspace, p, rev string) error {
			_, err := e.fs.MoveEntry(bg, ws, p, p+".moved", rev)
			return err
		}, true},
	}
	targets := []struct {
		ws         Workspace
		path, host string // the linked name, and the same name relative to e.dir
		secret     string // its bytes
	}{
		{global, "skills/x", "codex/skills/x", "SECRET-AUTH"},
		{proj("p"), "h", "projects/p/h", "CANARY"},
		{proj("p"), "d/h", "projects/p/d/h", "CANARY"},
	}
	for _, m := range modes {
		for _, c := range cases {
			for _, tg := range targets {
				t.Run(m.name+"/"+c.name+"/"+tg.path, func(t *testing.T) {
					e := linkedEnv(t, m.disable)
					var before unix.Stat_t
					must(t, unix.Lstat(filepath.Join(e.dir, tg.host), &before))
					st, err := e.fs.Stat(bg, tg.ws, tg.path)
					must(t, err)
					if !st.MultipleLinks || st.Reason != NotEditableMultipleLinks || st.Editable || st.Revision[0] != 's' {
						t.Fatalf("Stat: %+v", st)
					}
					err = c.op(e, tg.ws, tg.path, st.Revision)
					if c.allowed {
						must(t, err)
						if e.exists(tg.host) {
							t.Fatalf("%s: the name is still there", c.name)
						}
					} else {
						wantErr(t, err, CodePermissionDenied, ReasonMultipleLinks)
						if got := e.read(tg.host); got != tg.secret {
							t.Fatalf("the linked name now holds %q", got)
						}
						var now unix.Stat_t
						must(t, unix.Lstat(filepath.Join(e.dir, tg.host), &now))
						if now.Ino != before.Ino || now.Nlink != before.Nlink {
							t.Fatalf("nlink %d: the name was replaced", now.Nlink)
						}
					}
					e.checkCanaries()
					noTempFiles(t, e)
				})
			}
		}
	}
}

// noTempFiles asserts no davfs temp file was left anywhere in the env.
func noTempFiles(t *testing.T, e *env) {
	t.Helper()
	filepath.WalkDir(e.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			t.Errorf("temp file left: %s", p)
		}
		return nil
	})
}

// TestMultipleLinksListed: every listing shows a multi-link file with
// MultipleLinks set, a stat-only revision and not editable, so the
// surfaces can show or hide it; single-link files are not flagged.
func TestMultipleLinksListed(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.mkdir("projects/p/d")
		e.write("projects/p/d/plain.txt", "plain")
		must(t, os.Link(filepath.Join(e.dir, "outside/canary.txt"), filepath.Join(e.dir, "projects/p/d/h")))
		check := func(how string, es []Entry) {
			t.Helper()
			seen := 0
			for _, en := range es {
				switch en.Name {
				case "h":
					seen++
					if !en.MultipleLinks || en.Editable || en.Reason != NotEditableMultipleLinks || en.Revision[0] != 's' {
						t.Errorf("%s: %+v", how, en)
					}
				case "plain.txt":
					seen++
					if en.MultipleLinks || !en.Editable {
						t.Errorf("%s: %+v", how, en)
					}
				}
			}
			if seen != 2 {
				t.Errorf("%s: %d of 2 entries listed", how, seen)
			}
		}
		pg, err := e.fs.ListEntries(bg, proj("p"), "d", 0, "")
		must(t, err)
		check("ListEntries", pg.Entries)
		es, err := e.fs.ReadDir(bg, proj("p"), "d")
		must(t, err)
		check("ReadDir", es)
		var all []Entry
		must(t, ReadDirChunks(bg, e.fs, proj("p"), "d", func(es []Entry) []Entry { return append([]Entry(nil), es...) },
			func(es []Entry) error { all = append(all, es...); return nil }))
		check("ReadDirChunks", all)
	})
}

// TestMultipleLinksCheckedOnFDBeforeRename: a file that gains a second link
// after the revision check, right before the rename (the agent racing the
// commit), is not replaced: the check is the fstat of an fd of the file
// under the mutation lock, not the earlier stat by name.
func TestMultipleLinksCheckedOnFDBeforeRename(t *testing.T) {
	for _, op := range []string{"UpdateFile", "WriteStream"} {
		t.Run(op, func(t *testing.T) {
			e := newEnv(t, nil)
			e.write("projects/p/f.txt", "mine")
			st, err := e.fs.Stat(bg, proj("p"), "f.txt")
			must(t, err)
			e.fs.hooks.beforeRename = func() error {
				return os.Link(filepath.Join(e.dir, "projects/p/f.txt"), filepath.Join(e.dir, "outside/f-link"))
			}
			if op == "UpdateFile" {
				_, err = e.fs.UpdateFile(bg, proj("p"), "f.txt", []byte("new"), st.Revision)
			} else {
				_, _, err = e.fs.WriteStream(bg, proj("p"), "f.txt", strings.NewReader("new"), 0, Precondition{})
			}
			wantErr(t, err, CodePermissionDenied, ReasonMultipleLinks)
			if e.read("projects/p/f.txt") != "mine" || e.read("outside/f-link") != "mine" {
				t.Fatal("the linked file was replaced")
			}
			noTempFiles(t, e)
			e.checkCanaries()
		})
	}
}

// TestReplaceDeleteRefusesLinkedTree: a delete that makes room for a
// replacement refuses a directory holding a multi-link file anywhere below
// it, before deleting anything; a plain recursive delete removes the tree
// (names only: the other name keeps its bytes).
func TestReplaceDeleteRefusesLinkedTree(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/d/a.txt", "a")
		e.write("projects/p/d/sub/b.txt", "b")
		e.mkdir("projects/p/d/sub/deep")
		must(t, os.Link(filepath.Join(e.dir, "outside/canary.txt"), filepath.Join(e.dir, "projects/p/d/sub/deep/h")))
		st, err := e.fs.Stat(bg, proj("p"), "d")
		must(t, err)
		err = deleteWith(e.fs, bg, proj("p"), "d", st.Revision, DeleteOptions{Recursive: true, Replace: true})
		wantErr(t, err, CodePermissionDenied, ReasonMultipleLinks)
		for _, p := range []string{"projects/p/d/a.txt", "projects/p/d/sub/b.txt", "projects/p/d/sub/deep/h"} {
			if !e.exists(p) {
				t.Fatalf("%s deleted by a refused delete", p)
			}
		}
		must(t, e.fs.DeleteEntry(bg, proj("p"), "d", st.Revision, true))
		if e.exists("projects/p/d") {
			t.Fatal("plain recursive delete left the tree")
		}
		e.checkCanaries()
	})
}
