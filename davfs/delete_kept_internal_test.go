package davfs

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A keep delete (DeleteOptions.Kept, what a version of the checkpoint
// store holds; keptOf plays the version here) deletes only what it holds, each regular file
// with the stat it was captured with: a change the ctime floor cannot see
// (within the kernel's ctime tick, played here by a floor in the future)
// still refuses the delete, and the agent's bytes stay.
func TestKeepDeleteComparesWithVersion(t *testing.T) {
	for name, change := range map[string]func(e *env){
		"rewritten": func(e *env) { e.write("projects/p/d/a.txt", "the agent's a2") },
		"added":     func(e *env) { e.write("projects/p/d/sub/new.txt", "the agent's new file") },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.write("projects/p/d/a.txt", "a")
			e.write("projects/p/d/sub/b.txt", "b")
			kept, _ := keepD(t, e)
			change(e)
			st2, err := e.fs.Stat(bg, proj("p"), "d")
			must(t, err)
			err = deleteWith(e.fs, bg, proj("p"), "d", st2.Revision, DeleteOptions{Recursive: true, ChangedAfter: time.Now().Add(time.Hour), Kept: kept})
			wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
			if name == "rewritten" && e.read("projects/p/d/a.txt") != "the agent's a2" {
				t.Fatal("the rewritten file was deleted")
			}
			if name == "added" && e.read("projects/p/d/sub/new.txt") != "the agent's new file" {
				t.Fatal("the added file was deleted")
			}
		})
	}
	// Unchanged, the same delete goes ahead.
	e := newEnv(t, nil)
	e.write("projects/p/d/a.txt", "a")
	kept, rev := keepD(t, e)
	must(t, deleteWith(e.fs, bg, proj("p"), "d", rev, DeleteOptions{Recursive: true, ChangedAfter: time.Now().Add(time.Hour), Kept: kept}))
}

// A keep delete whose capture found only empty directories
// (KeptDirsOnly): a file that appears afterwards refuses the delete whatever its
// ctime says (file ctimes come from a coarse clock that can lag the
// moment ChangedAfter was taken: played here by a floor in the future).
func TestKeepDeleteOfEmptyDirsRefusesAnyFile(t *testing.T) {
	e := newEnv(t, nil)
	e.mkdir("projects/p/d/e/f")
	e.write("projects/p/d/e/new.txt", "the agent's new file")
	st2, err := e.fs.Stat(bg, proj("p"), "d")
	must(t, err)
	opts := DeleteOptions{Recursive: true, ChangedAfter: time.Now().Add(time.Hour), KeptDirsOnly: true}
	err = deleteWith(e.fs, bg, proj("p"), "d", st2.Revision, opts)
	wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
	if e.read("projects/p/d/e/new.txt") != "the agent's new file" {
		t.Fatal("the file created after the capture was deleted")
	}
	// Only directories again: the same delete goes ahead.
	must(t, os.Remove(filepath.Join(e.dir, "projects/p/d/e/new.txt")))
	st3, err := e.fs.Stat(bg, proj("p"), "d")
	must(t, err)
	must(t, deleteWith(e.fs, bg, proj("p"), "d", st3.Revision, opts))
	if e.exists("projects/p/d") {
		t.Fatal("the empty directories were not deleted")
	}
}

// A kept file whose captured stat was too fresh to stand for its content
// (Kept.Key unset) is re-read before it is deleted: a same-size rewrite
// that leaves the stat unmoved (a coarse timestamp tick, played here by
// giving the kept entry the new stat and the old hash) refuses the delete,
// and with Key set the same comparison lets it go ahead, so it is the hash
// that refuses.
func TestKeepDeleteRehashesUntrustedStat(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/d/a.txt", "the kept a")
	kept, _ := keepD(t, e)
	w, err := e.fs.resolve(proj("p"), "d")
	must(t, err)
	var ke *Kept
	for _, k := range kept {
		if !k.Dir {
			ke = k
		}
	}
	if ke == nil {
		t.Fatalf("the version holds no file: %v", kept)
	}
	if ke.Key {
		t.Fatal("a file written just now was captured with a trusted stat")
	}
	p := filepath.Join(e.dir, "projects/p/d/a.txt")
	must(t, os.WriteFile(p, []byte("the agent!"), 0o644)) // same size, in place
	var now unix.Stat_t
	must(t, unix.Lstat(p, &now))
	ke.Dev, ke.Ino, ke.Size, ke.Mtime, ke.Ctime = now.Dev, now.Ino, now.Size, now.Mtim.Nano(), now.Ctim.Nano()
	del := func() error {
		st, err := e.fs.Stat(bg, proj("p"), "d")
		must(t, err)
		opts := DeleteOptions{Recursive: true, ChangedAfter: time.Now().Add(time.Hour), Kept: kept}
		pfd, old, err := e.fs.lockedDelete(bg, w, st.Revision, opts)
		if err == nil {
			unix.Close(pfd)
			closeRef(old)
		}
		return err
	}
	wantErr(t, del(), CodeAborted, ReasonRevisionMismatch)
	if e.read("projects/p/d/a.txt") != "the agent!" {
		t.Fatal("the rewritten file was deleted")
	}
	ke.Key = true // the stat trusted: nothing else would have refused
	must(t, del())
	if e.exists("projects/p/d") {
		t.Fatal("the delete did not go ahead")
	}
}

// A rename() by the agent onto a kept name between that name's check and
// its unlink does not get the renamed file unlinked: the keep delete moves
// the name out of reach first and deletes only the inode it checked; the
// renamed file is back under its name, the delete refused, and no temp
// name is left behind.
func TestKeepDeleteRenameOntoCheckedName(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/d/a.txt", "a")
	e.write("projects/p/other.txt", "the agent's renamed file")
	kept, rev := keepD(t, e)
	renamed := false
	e.fs.hooks.beforeUnlink = func() {
		if !renamed {
			renamed = true
			must(t, os.Rename(filepath.Join(e.dir, "projects/p/other.txt"), filepath.Join(e.dir, "projects/p/d/a.txt")))
		}
	}
	err := deleteWith(e.fs, bg, proj("p"), "d", rev, DeleteOptions{Recursive: true, ChangedAfter: time.Now().Add(time.Hour), Kept: kept})
	wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
	if !renamed {
		t.Fatal("the hook never ran")
	}
	if e.read("projects/p/d/a.txt") != "the agent's renamed file" {
		t.Fatal("the file renamed onto the checked name was deleted")
	}
	names, err := os.ReadDir(filepath.Join(e.dir, "projects/p/d"))
	must(t, err)
	if len(names) != 1 {
		t.Fatalf("left in the directory: %v", names)
	}
}

// keepD records p/d of e as a version would hold it, for a keep delete:
// every directory and regular file below it (keptOf) and the revision.
func keepD(t *testing.T, e *env) (map[string]*Kept, string) {
	t.Helper()
	st, err := e.fs.Stat(bg, proj("p"), "d")
	must(t, err)
	return keptOf(t, filepath.Join(e.dir, "projects/p"), "d"), st.Revision
}

// keptOf is what a version of rel (under the workspace directory root)
// holds: the entries below it by workspace path, each file with its stat
// and hash, its stat trusted (Key) only once older than two seconds.
func keptOf(t *testing.T, root, rel string) map[string]*Kept {
	t.Helper()
	out := map[string]*Kept{}
	err := filepath.WalkDir(filepath.Join(root, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		if r == rel {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if d.IsDir() {
			out[r] = &Kept{Dir: true}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		out[r] = &Kept{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
			Hash: hex.EncodeToString(h[:]), Key: st.Ctim.Nano() < time.Now().Add(-2*time.Second).UnixNano()}
		return nil
	})
	must(t, err)
	return out
}
