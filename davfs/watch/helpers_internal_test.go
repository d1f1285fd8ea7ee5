package watch

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/testtree"
)

// tempPrefix is davfs's temp-file prefix (a write's temp file is never
// shown).
const tempPrefix = ".davfs-tmp-"

// tick is a pause long enough for ctimes to move apart.
const tick = 25 * time.Millisecond

var bg = context.Background()

// env is davfs's test layout (testtree.Volumes) served by a davfs.FS.
type env struct {
	*testtree.Tree           // Write, Mkdir, Symlink, Read, Exists, CheckOutside
	t                        *testing.T
	fs                       *davfs.FS
	projects, codex, outside string
}

// forModes runs fn once with openat2 resolution and once with the
// per-segment O_NOFOLLOW fallback.
func forModes(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, fallback := range []bool{false, true} {
		name := map[bool]string{false: "openat2", true: "fallback"}[fallback]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, fallback)
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

// newEnv serves testtree.Volumes with a davfs.FS; fallback forces the
// per-segment O_NOFOLLOW walk instead of openat2.
func newEnv(t *testing.T, fallback bool) *env {
	t.Helper()
	tr := testtree.Volumes(t)
	f, err := davfs.Open(davfs.Config{ProjectsRoot: tr.Path("projects"), CodexHome: tr.Path("codex"),
		DeniedNames: []string{"node_modules", ".venv"}, DisableOpenat2: fallback})
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return &env{Tree: tr, t: t, fs: f,
		projects: tr.Path("projects"), codex: tr.Path("codex"), outside: tr.Path("outside")}
}

// must fails the test on err.
func must(t *testing.T, err error) {
	if err != nil {
		t.Helper()
		t.Fatal(err)
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
