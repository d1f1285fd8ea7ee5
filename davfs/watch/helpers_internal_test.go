package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
)

// tempPrefix is davfs's temp-file prefix (a write's temp file is never
// shown).
const tempPrefix = ".davfs-tmp-"

// tick is a pause long enough for ctimes to move apart.
const tick = 25 * time.Millisecond

var bg = context.Background()

// env is a test layout: <tmp>/projects (the projects root), <tmp>/codex
// (CODEX_HOME, with a secret beside skills/) and <tmp>/outside (a canary).
type env struct {
	t                             *testing.T
	fs                            *davfs.FS
	dir, projects, codex, outside string
}

// forModes runs fn once with openat2 resolution and once with the
// per-segment O_NOFOLLOW fallback.
func forModes(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, fallback := range []bool{false, true} {
		name := map[bool]string{false: "openat2", true: "fallback"}[fallback]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(c *davfs.Config) { c.DisableOpenat2 = fallback })
			if !fallback && !haveOpenat2(e.projects) {
				t.Fatal("openat2 is not available on this kernel; the openat2 mode cannot be tested")
			}
			fn(t, e)
		})
	}
}

// haveOpenat2 probes openat2 as davfs does: "." beneath an open directory.
func haveOpenat2(dir string) bool {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(dfd)
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV}
	fd, err := unix.Openat2(dfd, ".", &how)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func newEnv(t *testing.T, mod func(*davfs.Config)) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, projects: filepath.Join(dir, "projects"),
		codex: filepath.Join(dir, "codex"), outside: filepath.Join(dir, "outside")}
	for _, d := range []string{e.projects, e.codex, e.outside} {
		must(t, os.Mkdir(d, 0o755))
	}
	e.write("codex/auth.json", "SECRET-AUTH")
	e.write("outside/canary.txt", "CANARY")
	cfg := davfs.Config{ProjectsRoot: e.projects, CodexHome: e.codex, DeniedNames: []string{"node_modules", ".venv"}}
	if mod != nil {
		mod(&cfg)
	}
	f, err := davfs.Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	e.fs = f
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// write creates rel (relative to the env dir) with content, making parents.
func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.dir, rel)
	must(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(e.t, os.WriteFile(p, []byte(content), 0o644))
}

func (e *env) mkdir(rel string) {
	e.t.Helper()
	must(e.t, os.MkdirAll(filepath.Join(e.dir, rel), 0o755))
}

// symlink makes rel a symlink to target (relative to the env dir, made
// absolute): targets are always inside the test's temp tree.
func (e *env) symlink(target, rel string) {
	e.t.Helper()
	p := filepath.Join(e.dir, rel)
	must(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(e.t, os.Symlink(filepath.Join(e.dir, target), p))
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, rel))
	must(e.t, err)
	return string(b)
}

func (e *env) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(e.dir, rel))
	return err == nil
}

// checkOutside asserts the canary outside the roots did not change.
func (e *env) checkOutside() {
	e.t.Helper()
	if got := e.read("outside/canary.txt"); got != "CANARY" {
		e.t.Fatalf("canary changed: %q", got)
	}
}

// ownStat reads dir's entry as the watcher does: without handing its
// revision out to a client.
func (e *env) ownStat(ws davfs.Workspace, dir string) (davfs.Entry, error) {
	d, err := e.fs.OpenDir(ws, dir)
	if err != nil {
		return davfs.Entry{}, err
	}
	defer d.Close()
	return d.Stat(bg, "")
}

func proj(name string) davfs.Workspace {
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
}

var global = davfs.Workspace{Scope: davfs.ScopeGlobal}

// wantErr asserts err is a davfs *Error with code and reason, whose
// message is safe (no host path).
func wantErr(t *testing.T, err error, code davfs.Code, reason davfs.Reason) {
	t.Helper()
	var de *davfs.Error
	if !errors.As(err, &de) {
		t.Fatalf("want %v/%s, got non-davfs error %v", code, reason, err)
	}
	if de.Code != code || de.Reason != reason {
		t.Fatalf("want %v/%s, got %v/%s (%q)", code, reason, de.Code, de.Reason, de.Message)
	}
	if strings.Contains(de.Message, os.TempDir()+"/") || de.Message == "" {
		t.Fatalf("unsafe or empty message %q", de.Message)
	}
}
