package davfs_test

// The adversarial tests of the core alone (internal/sectree's trees):
// uploads that fail or stream, concurrent updates, the projects root and
// initializer rollback. The matrix of layouts against every operation,
// WebDAV's included, is sidecar/internal/dav's security_test.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
)

// secErrReaderAfter yields n bytes of text, then fails like an aborted upload.
func secErrReaderAfter(n int) io.Reader {
	return io.MultiReader(strings.NewReader(strings.Repeat("x", n)), iotest.ErrReader(errors.New("client went away")))
}

// TestSecWriteStreamFailingReader: an upload that fails midway commits
// nothing: the original bytes survive, no temp file remains, a new file is
// not created. Over maxSize: TOO_LARGE and nothing written.
func TestSecWriteStreamFailingReader(t *testing.T) {
	sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
		cases := []struct {
			name  string
			ws    davfs.Workspace
			path  string
			r     func() io.Reader
			max   int64
			codes []davfs.Code
		}{
			{"existing file, reader fails after 64KiB", sectree.Project("p"), "ok.txt", func() io.Reader { return secErrReaderAfter(64 << 10) }, 1 << 20, nil},
			{"existing file, reader fails at once", sectree.Project("p"), "okdir/inner.txt", func() io.Reader { return secErrReaderAfter(0) }, 1 << 20, nil},
			{"new file, reader fails", sectree.Project("p"), "okdir/new.txt", func() io.Reader { return secErrReaderAfter(300 << 10) }, 1 << 20, nil},
			{"global file, reader fails", sectree.Global, "skills/ok.md", func() io.Reader { return secErrReaderAfter(4096) }, 1 << 20, nil},
			{"over maxSize", sectree.Project("p"), "ok.txt", func() io.Reader { return strings.NewReader(strings.Repeat("y", 8192)) }, 4096, []davfs.Code{davfs.CodeResourceExhausted}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := sectree.NewEnv(t, "", nil, tweak)
				ctx := context.Background()
				before := sectree.Snapshot(t, e.Base)
				err := sectree.Try(func() error {
					_, _, err := e.FS.WriteStream(ctx, tc.ws, tc.path, tc.r(), tc.max, davfs.Precondition{})
					return err
				})
				if err == nil {
					t.Fatalf("WriteStream succeeded; want an error")
				}
				sectree.CheckDavErr(t, "WriteStream", err, e.Base)
				if tc.codes != nil && davfs.CodeOf(err) != tc.codes[0] {
					t.Errorf("WriteStream: code %v (%s); want %v", davfs.CodeOf(err), davfs.ReasonOf(err), tc.codes[0])
				}
				if tc.codes != nil && davfs.ReasonOf(err) != davfs.ReasonTooLarge {
					t.Errorf("WriteStream: reason %s; want TOO_LARGE", davfs.ReasonOf(err))
				}
				for _, d := range sectree.Diff(before, sectree.Snapshot(t, e.Base), nil) {
					t.Errorf("failed upload changed the tree: %s", d)
				}
			})
		}
	})
}

// TestSecTempFileNeverListed: while an upload is streaming into its temp
// file, no listing shows the temp file; when the upload aborts, the temp
// file is gone.
func TestSecTempFileNeverListed(t *testing.T) {
	sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
		e := sectree.NewEnv(t, "", nil, tweak)
		ctx := context.Background()
		host := filepath.Join(e.Projects(), "p", "okdir")
		before := sectree.Snapshot(t, e.Base)
		namesBefore := sectree.DirNames(t, host)

		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- sectree.Try(func() error {
				_, _, err := e.FS.WriteStream(ctx, sectree.Project("p"), "okdir/stream.txt", pr, 1<<20, davfs.Precondition{})
				return err
			})
		}()
		go func() { _, _ = pw.Write([]byte(strings.Repeat("z", 40<<10))) }()

		var temp []string
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && len(temp) == 0 {
			for _, n := range sectree.DirNames(t, host) {
				if !slices.Contains(namesBefore, n) {
					temp = append(temp, n)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		if len(temp) == 0 {
			_ = pw.CloseWithError(errors.New("abort"))
			t.Fatalf("no temp file appeared in the target directory within 5s while streaming (or WriteStream returned early: %v)", sectree.Poll(done))
		}
		t.Logf("temp file(s) while streaming: %q", temp)

		ents, err := sectree.ListAll(ctx, e.FS, sectree.Project("p"), "okdir")
		if err != nil {
			t.Errorf("ListEntries: %v", err)
		}
		var rd []davfs.Entry
		if err := sectree.Try(func() (err error) { rd, err = e.FS.ReadDir(ctx, sectree.Project("p"), "okdir"); return err }); err != nil {
			t.Errorf("ReadDir: %v", err)
		}
		for _, en := range append(ents, rd...) {
			if slices.Contains(temp, en.Name) {
				t.Errorf("listing shows davfs temp file %q", en.Name)
			}
		}

		_ = pw.CloseWithError(errors.New("client went away"))
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("WriteStream committed an aborted upload")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("WriteStream did not return after the reader failed")
		}
		for _, d := range sectree.Diff(before, sectree.Snapshot(t, e.Base), nil) {
			t.Errorf("aborted upload left a change: %s", d)
		}
	})
}

// TestSecConcurrentUpdateOneWinner: N goroutines update the same file with
// the same expected revision: exactly one wins, the others get
// Aborted/REVISION_MISMATCH, and the file holds the winner's bytes.
func TestSecConcurrentUpdateOneWinner(t *testing.T) {
	const n = 16
	writers := map[string]func(ctx context.Context, f *davfs.FS, ws davfs.Workspace, p string, body []byte, rev string) error{
		"UpdateFile": func(ctx context.Context, f *davfs.FS, ws davfs.Workspace, p string, body []byte, rev string) error {
			_, err := f.UpdateFile(ctx, ws, p, body, rev)
			return err
		},
		"WriteStream": func(ctx context.Context, f *davfs.FS, ws davfs.Workspace, p string, body []byte, rev string) error {
			_, _, err := f.WriteStream(ctx, ws, p, strings.NewReader(string(body)), 1<<20, davfs.Precondition{IfMatch: rev})
			return err
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			for _, target := range []struct {
				ws   davfs.Workspace
				path string
			}{{sectree.Project("p"), "ok.txt"}, {sectree.Global, "AGENTS.md"}} {
				e := sectree.NewEnv(t, "", nil, nil)
				ctx := context.Background()
				rev := sectree.Rev(ctx, e, target.ws, target.path)
				if rev == "bogus-revision" {
					t.Fatalf("Stat %s failed", target.path)
				}
				start := make(chan struct{})
				errs := make([]error, n)
				bodies := make([][]byte, n)
				var wg sync.WaitGroup
				for i := range n {
					bodies[i] = []byte(fmt.Sprintf("writer %02d wins\n%s", i, strings.Repeat("-", 1000*i)))
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						errs[i] = sectree.Try(func() error { return write(ctx, e.FS, target.ws, target.path, bodies[i], rev) })
					}()
				}
				close(start)
				wg.Wait()
				winner := -1
				for i, err := range errs {
					if err == nil {
						if winner >= 0 {
							t.Errorf("%s: writers %d and %d both succeeded with the same revision", target.path, winner, i)
						}
						winner = i
						continue
					}
					sectree.CheckDavErr(t, name, err, e.Base)
					if c, r := davfs.CodeOf(err), davfs.ReasonOf(err); c != davfs.CodeAborted || r != davfs.ReasonRevisionMismatch {
						t.Errorf("%s writer %d: got %v/%s; want Aborted/REVISION_MISMATCH", target.path, i, c, r)
					}
				}
				if winner < 0 {
					t.Fatalf("%s: no writer succeeded", target.path)
				}
				got, err := os.ReadFile(filepath.Join(e.Base, sectree.HostRel(target.ws, target.path)))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(bodies[winner]) {
					t.Errorf("%s holds %q; want the winner's (%d) bytes", target.path, sectree.Trunc(got), winner)
				}
			}
		})
	}
}

// TestSecProjectsRoot: CreateProject and DeleteProject against the same
// traps. Deleting a project full of links removes the project and nothing
// else; a symlinked or denylisted "project" is never deleted or followed.
func TestSecProjectsRoot(t *testing.T) {
	layout := []string{
		"projects/victim/a.txt",
		"projects/victim/d/b.txt",
		"projects/victim/d/escape => ../../../outside/dir",
		"projects/victim/d/abs => /outside",
		"projects/victim/sib => ../q",
		"projects/victim/root => ..",
		"projects/victim/h.json == codex/auth.json",
		"projects/victim/.git/config",
		"projects/victim/node_modules/x/m.js",
		"projects/victim/pipe |",
		"projects/evil => ../outside/dir",
		"projects/node_modules/m.js",
		"projects/.git/config",
		"projects/file.txt",
	}
	sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
		cases := []struct {
			name, project, confirm string
			wantCode               davfs.Code
			wantReasons            []davfs.Reason
			gone                   string // host path (rel to base) that must disappear
		}{
			{"delete project full of links", "victim", "victim", davfs.CodeOK, nil, "projects/victim"},
			{"confirmation mismatch", "victim", "victim2", davfs.CodeInvalidArgument, []davfs.Reason{davfs.ReasonConfirmationMismatch}, ""},
			{"symlinked project", "evil", "evil", davfs.CodeNotFound, []davfs.Reason{davfs.ReasonProjectNotFound, davfs.ReasonSymlink}, ""},
			{"file, not a project", "file.txt", "file.txt", davfs.CodeNotFound, []davfs.Reason{davfs.ReasonProjectNotFound}, ""},
			{"denylisted project", "node_modules", "node_modules", davfs.CodePermissionDenied, []davfs.Reason{davfs.ReasonDenylisted, davfs.ReasonInvalidName}, ""},
			{".git project", ".git", ".git", davfs.CodePermissionDenied, []davfs.Reason{davfs.ReasonDenylisted, davfs.ReasonInvalidName}, ""},
			{"dot-dot", "..", "..", davfs.CodeInvalidArgument, []davfs.Reason{davfs.ReasonInvalidName}, ""},
			{"slash", "victim/d", "victim/d", davfs.CodeInvalidArgument, []davfs.Reason{davfs.ReasonInvalidName}, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := sectree.NewEnv(t, "", layout, tweak)
				before := sectree.Snapshot(t, e.Base)
				err := sectree.WithTimeout(t, 10*time.Second, func() { sectree.UnblockFIFOs(e.Base, layout) }, func() error {
					return e.FS.DeleteProject(context.Background(), tc.project, tc.confirm)
				})
				sectree.CheckDavErr(t, "DeleteProject", err, e.Base)
				c := davfs.CodeOf(err)
				if davfs.ReasonOf(err) == davfs.ReasonSymlink && slices.Contains(tc.wantReasons, davfs.ReasonSymlink) {
					c = tc.wantCode // PermissionDenied/SYMLINK is as good as NotFound for a symlink
				}
				if c != tc.wantCode {
					t.Errorf("DeleteProject(%q): code %v (%s); want %v", tc.project, c, davfs.ReasonOf(err), tc.wantCode)
				} else if err != nil && len(tc.wantReasons) > 0 && !slices.Contains(tc.wantReasons, davfs.ReasonOf(err)) {
					t.Errorf("DeleteProject(%q): reason %s; want one of %v", tc.project, davfs.ReasonOf(err), tc.wantReasons)
				}
				after := sectree.Snapshot(t, e.Base)
				skip := func(rel string) bool { return tc.gone != "" && sectree.Under(rel, tc.gone) }
				for _, d := range sectree.Diff(before, after, skip) {
					t.Errorf("DeleteProject(%q) changed something else: %s", tc.project, d)
				}
				if tc.gone != "" {
					if _, ok := after[tc.gone]; ok {
						t.Errorf("%s still exists", tc.gone)
					}
				}
			})
		}

		// CreateProject never touches an existing name of any kind.
		for _, name := range []string{"evil", "file.txt", "victim", "node_modules", ".git", "..", "a/b", "", "-x", strings.Repeat("n", 129)} {
			t.Run("create "+name, func(t *testing.T) {
				e := sectree.NewEnv(t, "", layout, tweak)
				before := sectree.Snapshot(t, e.Base)
				err := sectree.Try(func() error { _, err := e.FS.CreateProject(context.Background(), name); return err })
				if err == nil {
					t.Fatalf("CreateProject(%q) succeeded", name)
				}
				sectree.CheckDavErr(t, "CreateProject", err, e.Base)
				for _, d := range sectree.Diff(before, sectree.Snapshot(t, e.Base), nil) {
					t.Errorf("CreateProject(%q) changed the tree: %s", name, d)
				}
			})
		}
	})
}

// TestSecInitializerRollback: a failing initializer that planted links
// (inside the new project, or in place of it) is rolled back without
// following them: nothing outside changes, the project is gone.
func TestSecInitializerRollback(t *testing.T) {
	plants := map[string]func(dir string) error{
		"links inside": func(dir string) error {
			if err := os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755); err != nil {
				return err
			}
			if err := os.Symlink("../../outside/dir", filepath.Join(dir, "link")); err != nil {
				return err
			}
			return os.Symlink("../../../outside", filepath.Join(dir, ".git", "objects", "up"))
		},
		"project replaced by a symlink": func(dir string) error {
			if err := os.Remove(dir); err != nil {
				return err
			}
			return os.Symlink("../outside/dir", dir)
		},
		"project renamed away": func(dir string) error {
			return os.Rename(dir, dir+"-away")
		},
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
				base := t.TempDir()
				initErr := errors.New("git init failed")
				e := sectree.NewEnv(t, base, nil, func(c *davfs.Config) {
					tweak(c)
					c.Initializer = func(ctx context.Context, dir string) error {
						if err := plant(dir); err != nil {
							t.Errorf("planting: %v", err)
						}
						return initErr
					}
				})
				outside := sectree.Snapshot(t, filepath.Join(e.Base, "outside"))
				codex := sectree.Snapshot(t, e.Codex())
				_, err := e.FS.CreateProject(context.Background(), "newproj")
				if err == nil {
					t.Fatal("CreateProject succeeded with a failing initializer")
				}
				sectree.CheckDavErr(t, "CreateProject", err, e.Base)
				if r := davfs.ReasonOf(err); r != davfs.ReasonGitInitFailed {
					t.Errorf("CreateProject: reason %s; want GIT_INIT_FAILED", r)
				}
				for _, d := range sectree.Diff(outside, sectree.Snapshot(t, filepath.Join(e.Base, "outside")), nil) {
					t.Errorf("rollback changed outside the root: %s", d)
				}
				for _, d := range sectree.Diff(codex, sectree.Snapshot(t, e.Codex()), nil) {
					t.Errorf("rollback changed CODEX_HOME: %s", d)
				}
				if fi, err := os.Lstat(filepath.Join(e.Projects(), "newproj")); err == nil && fi.IsDir() {
					t.Errorf("the new project directory survived the rollback")
				}
			})
		})
	}
}
