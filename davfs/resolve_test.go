package davfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

func TestSplitPath(t *testing.T) {
	e := newEnv(t, nil)
	long := strings.Repeat("a", 4097)
	deep := strings.TrimSuffix(strings.Repeat("a/", 65), "/")
	okDeep := strings.TrimSuffix(strings.Repeat("a/", 64), "/")
	for _, tc := range []struct {
		path   string
		code   Code
		reason Reason
	}{
		{"", CodeOK, ""},
		{"a", CodeOK, ""},
		{"a/b.txt", CodeOK, ""},
		{"日本/ファイル", CodeOK, ""},
		{okDeep, CodeOK, ""},
		{"/a", CodeInvalidArgument, ReasonInvalidPath},
		{"/", CodeInvalidArgument, ReasonInvalidPath},
		{"a//b", CodeInvalidArgument, ReasonInvalidPath},
		{"a/", CodeInvalidArgument, ReasonInvalidPath},
		{".", CodeInvalidArgument, ReasonInvalidPath},
		{"..", CodeInvalidArgument, ReasonInvalidPath},
		{"a/../b", CodeInvalidArgument, ReasonInvalidPath},
		{"a/./b", CodeInvalidArgument, ReasonInvalidPath},
		{"a\x00b", CodeInvalidArgument, ReasonInvalidPath},
		{"a/\xff", CodeInvalidArgument, ReasonInvalidPath},
		{long, CodeResourceExhausted, ReasonPathTooLong},
		{strings.Repeat("b", 256), CodeResourceExhausted, ReasonPathTooLong},
		{deep, CodeResourceExhausted, ReasonPathTooDeep},
		{".git", CodePermissionDenied, ReasonDenylisted},
		{"a/.git/config", CodePermissionDenied, ReasonDenylisted},
		{"x/node_modules", CodePermissionDenied, ReasonDenylisted},
		{".davfs-tmp-123", CodeInvalidArgument, ReasonInvalidPath},
	} {
		_, err := e.fs.splitPath(tc.path)
		if tc.code == CodeOK {
			if err != nil {
				t.Errorf("%q: %v", tc.path, err)
			}
			continue
		}
		if CodeOf(err) != tc.code || ReasonOf(err) != tc.reason {
			t.Errorf("%q: got %v/%s, want %v/%s", tc.path, CodeOf(err), ReasonOf(err), tc.code, tc.reason)
		}
	}
}

func TestGlobalAllowlist(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("codex/skills/s1/SKILL.md", "skill")
		e.write("codex/AGENTS.md", "agents")
		e.mkdir("codex/sessions")
		for _, p := range []string{"skills", "skills/s1", "skills/s1/SKILL.md", "AGENTS.md"} {
			if _, err := e.fs.Stat(bg, global, p); err != nil {
				t.Errorf("Stat(%q): %v", p, err)
			}
		}
		for _, p := range []string{"auth.json", "config.toml", "Skills", "SKILLS/x", "agents.md", "Agents.md",
			"sessions", "AGENTS.md/x", "model-catalog.local.json"} {
			_, err := e.fs.Stat(bg, global, p)
			wantErr(t, err, CodePermissionDenied, ReasonOutsideGlobal)
			_, err = e.fs.ReadFile(bg, global, p)
			wantErr(t, err, CodePermissionDenied, ReasonOutsideGlobal)
		}
		_, err := e.fs.Stat(bg, Workspace{Scope: ScopeGlobal, Project: "x"}, "")
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidWorkspace)
		_, err = e.fs.Stat(bg, Workspace{}, "")
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidWorkspace)
		_, err = e.fs.Stat(bg, proj(""), "")
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidWorkspace)
		e.checkCanaries()
	})
}

// TestSymlinkEveryLevel: a symlink at any level of a path is refused by
// every read, whichever resolution mode is in use.
func TestSymlinkEveryLevel(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/a/b/c.txt", "ok")
		e.write("projects/q/secret.txt", "OTHER PROJECT")
		e.symlink("outside", "projects/p/lout")            // dir link to outside
		e.symlink("outside/canary.txt", "projects/p/fout") // file link to outside
		e.symlink("projects/q", "projects/p/sib")          // link to a sibling project
		e.symlink("projects/p/a", "projects/p/inner")      // link inside the root
		e.symlink("outside", "projects/linkproj")          // the project itself
		e.symlink("codex/auth.json", "codex/skills/auth")  // secret via skills
		e.symlink("codex", "codex/skills/home")            // CODEX_HOME via skills
		e.write("outside/x/y.txt", "CANARY2")
		cases := []struct {
			ws   Workspace
			path string
		}{
			{proj("p"), "lout"}, {proj("p"), "lout/canary.txt"}, {proj("p"), "fout"},
			{proj("p"), "sib/secret.txt"}, {proj("p"), "inner/b/c.txt"}, {proj("p"), "inner"},
			{proj("p"), "lout/x/y.txt"},
			{proj("linkproj"), ""}, {proj("linkproj"), "canary.txt"},
			{global, "skills/auth"}, {global, "skills/home/auth.json"},
		}
		for _, c := range cases {
			_, err := e.fs.Stat(bg, c.ws, c.path)
			wantErr(t, err, CodePermissionDenied, ReasonSymlink)
			_, err = e.fs.ReadFile(bg, c.ws, c.path)
			wantErr(t, err, CodePermissionDenied, ReasonSymlink)
			if _, _, err := e.fs.OpenRead(bg, c.ws, c.path); CodeOf(err) != CodePermissionDenied {
				t.Errorf("OpenRead %v %q: %v", c.ws, c.path, err)
			}
			if _, err := e.fs.ListEntries(bg, c.ws, c.path, 0, ""); CodeOf(err) != CodePermissionDenied {
				t.Errorf("ListEntries %v %q: %v", c.ws, c.path, err)
			}
		}
		// Lists never show symlinks.
		pg, err := e.fs.ListEntries(bg, proj("p"), "", 0, "")
		must(t, err)
		if len(pg.Entries) != 1 || pg.Entries[0].Name != "a" {
			t.Fatalf("listing shows %+v", pg.Entries)
		}
		e.checkCanaries()
	})
}

func TestProjectRefs(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/file", "x")
		e.mkdir("projects/node_modules")
		_, err := e.fs.Stat(bg, proj("missing"), "")
		wantErr(t, err, CodeNotFound, ReasonProjectNotFound)
		_, err = e.fs.Stat(bg, proj("missing"), "a/b")
		wantErr(t, err, CodeNotFound, ReasonProjectNotFound)
		_, err = e.fs.Stat(bg, proj("file"), "")
		wantErr(t, err, CodeNotFound, ReasonProjectNotFound)
		_, err = e.fs.Stat(bg, proj("node_modules"), "")
		wantErr(t, err, CodePermissionDenied, ReasonDenylisted)
		_, err = e.fs.Stat(bg, proj(".git"), "")
		wantErr(t, err, CodePermissionDenied, ReasonDenylisted)
		for _, bad := range []string{"..", ".", "a/b", "x\x00"} {
			_, err = e.fs.Stat(bg, proj(bad), "")
			wantErr(t, err, CodeInvalidArgument, ReasonInvalidWorkspace)
		}
	})
}

// TestStatxMatchesFstat: the statx-based stat fills the fields revisions
// use exactly as fstat does, so every path yields the same revision.
func TestStatxMatchesFstat(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/f", "x")
	for _, rel := range []string{"projects/p/f", "projects/p", "projects"} {
		fd, err := unix.Open(filepath.Join(e.dir, rel), unix.O_PATH|unix.O_NOFOLLOW, 0)
		must(t, err)
		var a, b unix.Stat_t
		must(t, unix.Fstat(fd, &a))
		mnt, err := statxInto(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, &b)
		unix.Close(fd)
		must(t, err)
		if statSum(&a) != statSum(&b) || keyOf(&a) != keyOf(&b) || a != b {
			t.Fatalf("%s: fstat %+v statx %+v", rel, a, b)
		}
		if mnt == 0 || mnt != e.fs.projects.mnt {
			t.Fatalf("%s: mount id %d, root %d", rel, mnt, e.fs.projects.mnt)
		}
	}
}

// TestReadDirentsMatchesOSReadDir: readDirents (unix.Getdents and
// parseDirents) reads the same names and types as os.ReadDir, over several
// getdents batches, and fails on a non-directory.
func TestReadDirentsMatchesOSReadDir(t *testing.T) {
	e := newEnv(t, nil)
	for i := 0; i < 700; i++ { // several 64 KiB batches
		e.write(fmt.Sprintf("projects/p/name-%04d-%s", i, strings.Repeat("n", i%40)), "")
	}
	e.mkdir("projects/p/sub")
	must(t, os.Symlink("name-0000-", filepath.Join(e.dir, "projects/p/link")))
	dir := filepath.Join(e.dir, "projects/p")
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	ents, err := fdio.ReadDirents(fd)
	must(t, err)
	got := map[string]uint8{}
	for _, d := range ents {
		got[d.Name] = d.Type
	}
	want, err := os.ReadDir(dir)
	must(t, err)
	if len(got) != len(want) || len(ents) != len(want) {
		t.Fatalf("readDirents: %d names (%d distinct), os.ReadDir %d", len(ents), len(got), len(want))
	}
	types := map[fs.FileMode]uint8{0: unix.DT_REG, fs.ModeDir: unix.DT_DIR, fs.ModeSymlink: unix.DT_LNK}
	for _, d := range want {
		typ, ok := got[d.Name()]
		if !ok || (typ != unix.DT_UNKNOWN && typ != types[d.Type()]) {
			t.Fatalf("%q: d_type %d, os.ReadDir type %v", d.Name(), typ, d.Type())
		}
	}
	ffd, err := unix.Open(filepath.Join(dir, "name-0000-"), unix.O_RDONLY, 0)
	must(t, err)
	defer unix.Close(ffd)
	if _, err := fdio.ReadDirents(ffd); err != unix.ENOTDIR {
		t.Fatalf("readDirents of a file: %v, want ENOTDIR", err)
	}
}
