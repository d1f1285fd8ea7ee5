package davfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitInit is the test initializer: it makes <dir>/.git like git init would.
func gitInit(ctx context.Context, dir string) error {
	return os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755)
}

func TestCreateProject(t *testing.T) {
	var got []string
	e := newEnv(t, func(c *Config) {
		c.Initializer = func(ctx context.Context, dir string) error {
			got = append(got, dir)
			return gitInit(ctx, dir)
		}
	})
	p, err := e.fs.CreateProject(bg, "demo-1.x_y")
	must(t, err)
	if p.Name != "demo-1.x_y" || !p.GitInitialized || p.Revision == "" {
		t.Fatalf("project %+v", p)
	}
	if len(got) != 1 || got[0] != filepath.Join(e.projects, "demo-1.x_y") {
		t.Fatalf("initializer got %q", got)
	}
	fi, err := os.Stat(filepath.Join(e.projects, "demo-1.x_y"))
	must(t, err)
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(e.projects, "demo-1.x_y/.git")); err != nil {
		t.Fatal(".git missing")
	}
	for _, bad := range []string{"", ".", "..", "-a", "_a", ".hidden", "a/b", "a b", "é", "a\x00",
		strings.Repeat("a", 129), ".davfs-tmp-x"} {
		_, err := e.fs.CreateProject(bg, bad)
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidName)
	}
	if _, err := e.fs.CreateProject(bg, strings.Repeat("a", 128)); err != nil {
		t.Fatalf("128-char name: %v", err)
	}
	e.fs.deny["build"] = struct{}{}
	_, err = e.fs.CreateProject(bg, "build")
	wantErr(t, err, CodePermissionDenied, ReasonDenylisted)
	_, err = e.fs.CreateProject(bg, "node_modules")
	wantErr(t, err, CodePermissionDenied, ReasonDenylisted)

	// Existing names of any kind: AlreadyExists, untouched.
	e.write("projects/existing/keep.txt", "keep")
	e.write("projects/afile", "file")
	e.symlink("outside", "projects/alink")
	n := len(got)
	for _, name := range []string{"existing", "afile", "alink", "demo-1.x_y"} {
		_, err := e.fs.CreateProject(bg, name)
		wantErr(t, err, CodeAlreadyExists, ReasonAlreadyExists)
	}
	if len(got) != n {
		t.Fatal("initializer ran for an existing name")
	}
	if e.read("projects/existing/keep.txt") != "keep" || e.read("projects/afile") != "file" || e.exists("projects/existing/.git") {
		t.Fatal("existing content touched")
	}
	e.checkCanaries()
}

func TestCreateProjectRollback(t *testing.T) {
	boom := errors.New("git init exploded at /secret/host/path")
	e := newEnv(t, func(c *Config) {
		c.Initializer = func(ctx context.Context, dir string) error {
			// A half-done init: files and a read-only directory.
			must(t, os.MkdirAll(filepath.Join(dir, ".git/objects/pack"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, ".git/HEAD"), []byte("x"), 0o644))
			must(t, os.Symlink(filepath.Join(dir, "../../outside"), filepath.Join(dir, ".git/link")))
			must(t, os.Chmod(filepath.Join(dir, ".git/objects"), 0o555))
			return boom
		}
	})
	_, err := e.fs.CreateProject(bg, "demo")
	wantErr(t, err, CodeInternal, ReasonGitInitFailed)
	if !errors.Is(err, boom) {
		t.Fatal("cause not kept for logs")
	}
	if strings.Contains(err.Error(), "/") {
		t.Fatalf("message leaks a path: %q", err.Error())
	}
	if e.exists("projects/demo") {
		t.Fatal("half-initialised project left behind")
	}
	e.checkCanaries()
	// A context cancelled by the initializer still rolls back.
	e2 := newEnv(t, func(c *Config) {
		c.Initializer = func(ctx context.Context, dir string) error { return context.Canceled }
	})
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err = e2.fs.CreateProject(ctx, "demo")
	wantErr(t, err, CodeInternal, ReasonGitInitFailed)
	if e2.exists("projects/demo") {
		t.Fatal("project left after cancelled init")
	}
}

func TestListProjects(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.mkdir("projects/b-plain")           // existing non-git directory
		e.mkdir("projects/a-git/.git")        // git initialised
		e.mkdir("projects/C")                 // upper case sorts first
		e.mkdir("projects/node_modules")      // denylisted
		e.mkdir("projects/.git")              // denylisted
		e.write("projects/file.txt", "x")     // a file is not a project
		e.symlink("outside", "projects/link") // a symlink is not a project
		e.mkdir("projects/fake-git")          // .git is a symlink: not initialised
		e.symlink("outside", "projects/fake-git/.git")
		e.mkdir("projects/\xffbad") // invalid UTF-8 name
		pg, err := e.fs.ListProjects(bg, 0, "")
		must(t, err)
		var names []string
		for _, p := range pg.Projects {
			names = append(names, fmt.Sprintf("%s:%v", p.Name, p.GitInitialized))
		}
		if strings.Join(names, " ") != "a-git:true b-plain:false C:false fake-git:false" || pg.NextCursor != "" {
			t.Fatalf("projects %v cursor %q", names, pg.NextCursor)
		}
		// Paging.
		var all []string
		cursor := ""
		for {
			pg, err := e.fs.ListProjects(bg, 3, cursor)
			must(t, err)
			for _, p := range pg.Projects {
				all = append(all, p.Name)
			}
			if pg.NextCursor == "" {
				break
			}
			cursor = pg.NextCursor
		}
		if strings.Join(all, " ") != "a-git b-plain C fake-git" {
			t.Fatalf("paged %v", all)
		}
		_, err = e.fs.ListProjects(bg, 501, "")
		wantErr(t, err, CodeResourceExhausted, ReasonPageSizeTooLarge)
		_, err = e.fs.ListProjects(bg, 0, "garbage!")
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidCursor)
		ep, err := e.fs.ListEntries(bg, proj("C"), "", 0, "")
		must(t, err)
		_ = ep
	})
}

func TestDeleteProject(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/src/main.go", "package main")
		e.write("projects/p/.git/HEAD", "ref")
		e.write("projects/p/node_modules/x/y.js", "y")
		e.symlink("outside", "projects/p/escape")           // must be unlinked, not followed
		e.symlink("outside/canary.txt", "projects/p/src/c") // same
		e.write("projects/p/ro/sub/f", "f")
		must(t, os.Chmod(filepath.Join(e.dir, "projects/p/ro"), 0o555))
		e.write("projects/other/keep", "keep")

		err := e.fs.DeleteProject(bg, "p", "P")
		wantErr(t, err, CodeInvalidArgument, ReasonConfirmationMismatch)
		if !e.exists("projects/p/src/main.go") {
			t.Fatal("deleted despite confirmation mismatch")
		}
		must(t, e.fs.DeleteProject(bg, "p", "p"))
		if e.exists("projects/p") {
			t.Fatal("project still there")
		}
		if e.read("projects/other/keep") != "keep" {
			t.Fatal("other project touched")
		}
		e.checkCanaries()
		if !e.exists("outside") {
			t.Fatal("symlink target removed")
		}

		err = e.fs.DeleteProject(bg, "p", "p")
		wantErr(t, err, CodeNotFound, ReasonProjectNotFound)
		e.symlink("projects/other", "projects/lnk")
		err = e.fs.DeleteProject(bg, "lnk", "lnk")
		wantErr(t, err, CodePermissionDenied, ReasonSymlink)
		if !e.exists("projects/lnk") || e.read("projects/other/keep") != "keep" {
			t.Fatal("symlinked project or its target touched")
		}
		e.write("projects/f", "file")
		err = e.fs.DeleteProject(bg, "f", "f")
		wantErr(t, err, CodeNotFound, ReasonProjectNotFound)
		e.mkdir("projects/node_modules")
		err = e.fs.DeleteProject(bg, "node_modules", "node_modules")
		wantErr(t, err, CodePermissionDenied, ReasonDenylisted)
		for _, bad := range []string{"", "..", ".", "a/b"} {
			err = e.fs.DeleteProject(bg, bad, bad)
			wantErr(t, err, CodeInvalidArgument, ReasonInvalidName)
		}
		if !e.exists("projects/node_modules") || !e.exists("projects/other") {
			t.Fatal("refused deletes changed something")
		}
	})
}

func TestOpen(t *testing.T) {
	e := newEnv(t, nil)
	fi, err := os.Lstat(filepath.Join(e.codex, "skills"))
	must(t, err)
	if !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("skills %v", fi.Mode())
	}
	// Stale temp files are swept at Open; nothing else changes.
	e.write("projects/p/a/.davfs-tmp-old", "x")
	e.write("codex/skills/s/.davfs-tmp-old", "x")
	e.write("codex/.davfs-tmp-old", "x")
	e.write("projects/p/a/keep", "keep")
	e.symlink("outside", "projects/p/link")
	e.write("outside/.davfs-tmp-canary", "CANARY")
	e.write("projects/p/node_modules/.davfs-tmp-x", "not ours to sweep")
	f2, err := Open(e.fs.cfg)
	must(t, err)
	f2.Close()
	for _, gone := range []string{"projects/p/a/.davfs-tmp-old", "codex/skills/s/.davfs-tmp-old", "codex/.davfs-tmp-old"} {
		if e.exists(gone) {
			t.Errorf("%s not swept", gone)
		}
	}
	for _, kept := range []string{"projects/p/a/keep", "outside/.davfs-tmp-canary", "projects/p/node_modules/.davfs-tmp-x"} {
		if !e.exists(kept) {
			t.Errorf("%s removed", kept)
		}
	}
	e.checkCanaries()

	// skills must be a real directory.
	for name, setup := range map[string]func(dir string){
		"symlink": func(dir string) { must(t, os.Symlink(filepath.Join(dir, "other"), filepath.Join(dir, "codex/skills"))) },
		"file":    func(dir string) { must(t, os.WriteFile(filepath.Join(dir, "codex/skills"), nil, 0o644)) },
	} {
		dir := t.TempDir()
		for _, d := range []string{"projects", "codex", "other"} {
			must(t, os.Mkdir(filepath.Join(dir, d), 0o755))
		}
		setup(dir)
		if _, err := Open(Config{ProjectsRoot: filepath.Join(dir, "projects"), CodexHome: filepath.Join(dir, "codex")}); err == nil {
			t.Errorf("Open accepted skills as a %s", name)
		}
	}
	// Roots: absolute, existing, not symlinks.
	if _, err := Open(Config{ProjectsRoot: "rel", CodexHome: e.codex}); err == nil {
		t.Error("relative root accepted")
	}
	must(t, os.Symlink(e.projects, filepath.Join(e.dir, "plink")))
	if _, err := Open(Config{ProjectsRoot: filepath.Join(e.dir, "plink"), CodexHome: e.codex}); err == nil {
		t.Error("symlinked root accepted")
	}
	if _, err := Open(Config{ProjectsRoot: e.projects, CodexHome: e.codex, MaxPageSize: -1}); err == nil {
		t.Error("negative maxPageSize accepted")
	}
	// .git is always denied.
	f3, err := Open(Config{ProjectsRoot: e.projects, CodexHome: e.codex, DeniedNames: []string{"x"}})
	must(t, err)
	defer f3.Close()
	if !f3.denied(".git") || !f3.denied("x") {
		t.Fatal("denylist")
	}
	must(t, f3.Close())
	_, err = f3.Stat(bg, proj("p"), "")
	wantErr(t, err, CodeUnavailable, ReasonInternal)
}
