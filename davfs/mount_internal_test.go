package davfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mount bind-mounts (or, for src "tmpfs", mounts a tmpfs at) rel, both
// relative to the env dir, and unmounts it at Cleanup.
func (e *env) mount(src, rel string) {
	e.t.Helper()
	dst := filepath.Join(e.dir, rel)
	var err error
	if src == "tmpfs" {
		must(e.t, os.MkdirAll(dst, 0o755))
		err = unix.Mount("tmpfs", dst, "tmpfs", 0, "size=1m,mode=0755")
	} else {
		err = unix.Mount(filepath.Join(e.dir, src), dst, "", unix.MS_BIND, "")
	}
	if err != nil {
		e.t.Fatalf("mount: %v (these tests need root or CAP_SYS_ADMIN: run go test as root)", err)
	}
	e.t.Cleanup(func() {
		if unix.Unmount(dst, 0) != nil {
			unix.Unmount(dst, unix.MNT_DETACH)
		}
	})
}

// TestMountsNeverCrossed: bind mounts from the same file system (same
// st_dev: only a mount ID tells) and tmpfs mounts inside a project or
// skills/ are neither listed, read, written nor emptied, in both modes.
func TestMountsNeverCrossed(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("outside/dir/canary.txt", "CANARY-DIR")
		e.write("projects/p/ok.txt", "ok")
		e.mkdir("projects/p/bind")
		e.write("projects/p/auth.json", "placeholder")
		e.mount("outside/dir", "projects/p/bind")          // same-fs directory bind mount
		e.mount("codex/auth.json", "projects/p/auth.json") // same-fs file bind mount
		e.mount("tmpfs", "projects/p/tmp")
		e.write("projects/p/tmp/secret.txt", "CANARY-TMP")
		e.mkdir("codex/skills/s")
		e.write("outside/skill.md", "CANARY-SKILL")
		e.write("codex/skills/s/SKILL.md", "placeholder")
		e.mount("outside/skill.md", "codex/skills/s/SKILL.md")

		cases := []struct {
			ws Workspace
			p  string
		}{
			{proj("p"), "bind"}, {proj("p"), "bind/canary.txt"}, {proj("p"), "auth.json"},
			{proj("p"), "tmp"}, {proj("p"), "tmp/secret.txt"}, {global, "skills/s/SKILL.md"},
		}
		for _, c := range cases {
			_, err := e.fs.Stat(bg, c.ws, c.p)
			wantErr(t, err, CodePermissionDenied, ReasonSymlink)
			if f, err := e.fs.ReadFile(bg, c.ws, c.p); err == nil || strings.Contains(string(f.Content), "CANARY") {
				t.Errorf("ReadFile(%q) = %v", c.p, err)
			}
			if _, _, err := e.fs.OpenRead(bg, c.ws, c.p); CodeOf(err) != CodePermissionDenied {
				t.Errorf("OpenRead(%q): %v", c.p, err)
			}
			if _, err := e.fs.ListEntries(bg, c.ws, c.p, 0, ""); err == nil {
				t.Errorf("ListEntries(%q) succeeded", c.p)
			}
			if _, err := e.fs.UpdateFile(bg, c.ws, c.p, []byte("pwned"), "x"); CodeOf(err) != CodePermissionDenied {
				t.Errorf("UpdateFile(%q): %v", c.p, err)
			}
			if _, _, err := e.fs.WriteStream(bg, c.ws, c.p, strings.NewReader("pwned"), 0, Precondition{}); err == nil {
				t.Errorf("WriteStream(%q) succeeded", c.p)
			}
			if err := e.fs.DeleteEntry(bg, c.ws, c.p, "x", true); CodeOf(err) != CodePermissionDenied {
				t.Errorf("DeleteEntry(%q): %v", c.p, err)
			}
		}
		pg, err := e.fs.ListEntries(bg, proj("p"), "", 0, "")
		must(t, err)
		if len(pg.Entries) != 1 || pg.Entries[0].Name != "ok.txt" {
			t.Fatalf("listing shows mounts: %+v", pg.Entries)
		}
		sk, err := e.fs.ReadDir(bg, global, "skills/s")
		must(t, err)
		if len(sk) != 0 {
			t.Fatalf("skills listing shows a mount: %+v", sk)
		}
		// A project delete never empties a mount.
		err = e.fs.DeleteProject(bg, "p", "p")
		if err == nil {
			t.Fatal("deleted a project holding mounts")
		}
		if e.read("outside/dir/canary.txt") != "CANARY-DIR" || e.read("projects/p/tmp/secret.txt") != "CANARY-TMP" ||
			e.read("outside/skill.md") != "CANARY-SKILL" {
			t.Fatal("mounted content changed")
		}
		e.checkCanaries()
	})
}

// statx gives what unix.Statx gives: for names at the length limit and
// past it, with a NUL, and for the fd itself ("" with AT_EMPTY_PATH).
func TestStatxMatchesXSys(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", unix.NAME_MAX)
	if err := os.WriteFile(filepath.Join(dir, long), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const mask = unix.STATX_BASIC_STATS | unix.STATX_MNT_ID
	for _, c := range []struct {
		name  string
		flags int
	}{
		{long, unix.AT_SYMLINK_NOFOLLOW}, {long + "n", unix.AT_SYMLINK_NOFOLLOW}, {"missing", unix.AT_SYMLINK_NOFOLLOW},
		{"a\x00b", unix.AT_SYMLINK_NOFOLLOW}, {"", unix.AT_EMPTY_PATH}, {"", 0},
	} {
		var got, want unix.Statx_t
		gerr := statx(fd, c.name, c.flags, mask, &got)
		werr := unix.Statx(fd, c.name, c.flags, mask, &want)
		if gerr != werr || got != want {
			t.Errorf("%.8q: %v %+v; unix.Statx %v %+v", c.name, gerr, got, werr, want)
		}
		if c.name == long && (gerr != nil || got.Size != 1) {
			t.Errorf("the %d-byte name: %v, size %d", len(long), gerr, got.Size)
		}
	}
}
