package davfs

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// asUser runs fn on one OS thread whose file-system uid/gid is 1000 when
// the test runs as root (setfsuid drops CAP_DAC_OVERRIDE for that thread),
// so permission checks apply as they do for the sidecar (UID 1000).
func asUser(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		fn()
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Setfsgid(1000)
	unix.Setfsuid(1000)
	defer func() {
		unix.Setfsuid(0)
		unix.Setfsgid(0)
	}()
	fn()
}

// TestDeleteReadOnlyTree: a project holding read-only directories (a Go
// module cache, say) is still deleted completely by its owner.
func TestDeleteReadOnlyTree(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/cache/mod/a/b.go", "x")
	e.write("projects/p/cache/mod/c.go", "x")
	e.write("projects/p/keep/f", "f")
	if os.Geteuid() == 0 {
		must(t, os.Chmod(e.dir, 0o755))
		filepath.WalkDir(e.projects, func(p string, d os.DirEntry, err error) error {
			must(t, os.Lchown(p, 1000, 1000))
			return nil
		})
	}
	for _, d := range []string{"projects/p/cache/mod/a", "projects/p/cache/mod", "projects/p/cache"} {
		must(t, os.Chmod(filepath.Join(e.dir, d), 0o555))
	}
	var err error
	asUser(t, func() {
		// Sanity: the thread really lacks the override.
		if unix.Unlinkat(e.fs.projects.fd, "p/cache/mod/c.go", 0) != unix.EACCES {
			t.Error("permission checks are not in force on this thread")
		}
		err = e.fs.DeleteProject(bg, "p", "p")
	})
	must(t, err)
	if e.exists("projects/p") {
		t.Fatal("project not fully deleted")
	}
}
