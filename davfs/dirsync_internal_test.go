package davfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// TestSyncDirGroups: sixteen concurrent writes into one directory share
// directory fsyncs, and every write returns only after an fsync that
// started once its rename was done (its name was in the directory when
// that fsync began) had finished.
func TestSyncDirGroups(t *testing.T) {
	e := newEnv(t, nil)
	e.mkdir("projects/p/up")
	dir := filepath.Join(e.dir, "projects/p/up")
	type snap struct {
		names map[string]bool
		done  bool
	}
	var mu sync.Mutex
	var snaps []*snap
	e.fs.hooks.fsyncDir = func(fd int) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		s := &snap{names: map[string]bool{}}
		for _, en := range ents {
			s.names[en.Name()] = true
		}
		mu.Lock()
		snaps = append(snaps, s)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // a slow disk
		err = fdio.FsyncDir(fd)
		mu.Lock()
		s.done = true
		mu.Unlock()
		return err
	}
	const writers = 16
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("w%02d.txt", i)
			if _, _, err := e.fs.WriteStream(bg, proj("p"), "up/"+name, strings.NewReader(name), 0, Precondition{}); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range snaps {
				if s.done && s.names[name] {
					return
				}
			}
			errs <- fmt.Errorf("%s: returned before a directory fsync covering it finished", name)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(snaps) >= writers/2 {
		t.Fatalf("%d directory fsyncs for %d concurrent writes", len(snaps), writers)
	}
	for i := range writers {
		if got := e.read(fmt.Sprintf("projects/p/up/w%02d.txt", i)); got != fmt.Sprintf("w%02d.txt", i) {
			t.Fatalf("w%02d.txt holds %q", i, got)
		}
	}
	if len(e.fs.dirSyncs.m) != 0 {
		t.Fatalf("%d directory sync states left behind", len(e.fs.dirSyncs.m))
	}
	e.checkCanaries()
}

// TestSyncDirFailure: when directory fsyncs fail, every write sharing them
// reports the failure; none claims durability.
func TestSyncDirFailure(t *testing.T) {
	e := newEnv(t, nil)
	e.mkdir("projects/p/up")
	boom := errors.New("disk on fire")
	e.fs.hooks.fsyncDir = func(fd int) error {
		time.Sleep(5 * time.Millisecond)
		return boom
	}
	var wg sync.WaitGroup
	var failed, ok int
	var mu sync.Mutex
	for i := range 8 {
		wg.Go(func() {
			_, _, err := e.fs.WriteStream(bg, proj("p"), fmt.Sprintf("up/f%d", i), strings.NewReader("x"), 0, Precondition{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
			} else {
				ok++
			}
		})
	}
	wg.Wait()
	if ok != 0 || failed != 8 {
		t.Fatalf("%d writes succeeded, %d failed; all must fail", ok, failed)
	}
	// A later fsync that works makes later writes succeed again.
	e.fs.hooks.fsyncDir = nil
	if _, _, err := e.fs.WriteStream(bg, proj("p"), "up/g", strings.NewReader("x"), 0, Precondition{}); err != nil {
		t.Fatal(err)
	}
	e.checkCanaries()
}

// TestLocalFS: the test's temp dir is on a local file system, so replaced
// files are freed after the lock; NFS, SMB and FUSE are not treated as
// local (they may leave a visible placeholder for a busy file).
func TestLocalFS(t *testing.T) {
	e := newEnv(t, nil)
	if !e.fs.projects.localFS {
		var sf unix.Statfs_t
		_ = unix.Statfs(e.dir, &sf)
		t.Fatalf("the test's temp dir (statfs type %#x) is not recognised as a local file system", sf.Type)
	}
	for _, magic := range []int64{unix.NFS_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC, unix.FUSE_SUPER_MAGIC, unix.CEPH_SUPER_MAGIC, unix.V9FS_MAGIC} {
		if localFSTypes[magic] {
			t.Errorf("file system type %#x treated as local", magic)
		}
	}
	// A replaced and a deleted file leave nothing behind and no fd open.
	e.write("projects/p/r.txt", "one")
	before := openFDs(t)
	st, _ := e.fs.Stat(bg, proj("p"), "r.txt")
	st2, err := e.fs.UpdateFile(bg, proj("p"), "r.txt", []byte("two"), st.Revision)
	must(t, err)
	must(t, e.fs.DeleteEntry(bg, proj("p"), "r.txt", st2.Revision, false))
	if after := openFDs(t); after != before {
		t.Fatalf("fds: %d before, %d after", before, after)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "projects/p")); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}
