package davfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// maxRemoveDepth bounds the recursion of a tree walk (one fd per level).
const maxRemoveDepth = 4096

var (
	errTooDeep       = errors.New("davfs: directory tree too deep to delete")
	errMount         = errors.New("davfs: refusing to delete across a mount point")
	errChangedInside = errors.New("davfs: an entry changed after the directory's revision was read")
	errLinkedInside  = errors.New("davfs: a file to be replaced has more than one hard link")
)

// tree is one recursive delete (DeleteEntryWith): what each entry is
// checked against, in both passes.
type tree struct {
	r root
	// changedAfter (Unix ns): an entry whose ctime is later was changed
	// after the directory's revision was read (seen.go).
	changedAfter int64
	// replace: refuse regular files with several links (DeleteOptions.Replace).
	replace bool
	// afterCheck runs between the passes (tests; nil in production).
	afterCheck func()
	// kept, when set, is the version a keep delete took of the tree
	// (workspace-relative path → entry): every name deleted must be in it,
	// a regular file with the very stat it was captured with (Kept.matches)
	// and, when that stat was too fresh to stand for the content (!Key),
	// the very bytes (sameContent), so nothing the version does not hold
	// is deleted, a change within the ctime tick included; a file is only
	// unlinked once moved out of the agent's reach (unlinkKept). rel is
	// the tree's own path.
	kept map[string]*Kept
	rel  string
	// dirsOnly: a keep delete whose capture held only empty directories
	// (DeleteOptions.KeptDirsOnly): every name that is not a directory
	// refuses it, independent of the ctime clock.
	dirsOnly bool
	// beforeUnlink runs between a kept file's check and its unlink
	// (tests; nil in production).
	beforeUnlink func()
}

// checkKept is the rule of kept (and dirsOnly) for the entry name in the
// directory fd, at rel, whose lstat is st.
func (t *tree) checkKept(fd int, rel, name string, st *unix.Stat_t) error {
	if t.dirsOnly && !fdio.IsType(st, unix.S_IFDIR) {
		return errChangedInside
	}
	if t.kept == nil {
		return nil
	}
	e, ok := t.kept[rel]
	switch {
	case !ok:
		return errChangedInside
	case fdio.IsType(st, unix.S_IFDIR):
		if !e.Dir {
			return errChangedInside
		}
	case e.Dir || !e.matches(st):
		return errChangedInside
	case !e.Key:
		// The capture's stat was too fresh to stand for the content (a
		// same-size rewrite within one timestamp tick after the capture
		// leaves it unmoved on coarse clocks): the bytes must be the ones
		// kept.
		return sameContent(t.r, fd, name, e)
	}
	return nil
}

// sameContent reports (nil) whether the regular file name in the
// directory fd still is e: opened without following a link, its fstat is
// e's before and after it is read whole, and the bytes hash to e.Hash.
func sameContent(r root, fd int, name string, e *Kept) error {
	if len(e.Hash) != sha256.Size*2 {
		return errChangedInside
	}
	ffd, err := unix.Openat(fd, name, fdio.File|fdio.Common, 0)
	if err != nil {
		return errChangedInside
	}
	defer unix.Close(ffd)
	var before, after unix.Stat_t
	if err := fstatOn(r, ffd, &before); err != nil || !e.matches(&before) {
		return errChangedInside
	}
	d := sha256.New()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(ffd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return errChangedInside
		}
		if n == 0 {
			break
		}
		d.Write(buf[:n])
	}
	if err := fstatOn(r, ffd, &after); err != nil || !e.matches(&after) {
		return errChangedInside
	}
	if hex.EncodeToString(d.Sum(nil)) != e.Hash {
		return errChangedInside
	}
	return nil
}

// unlinkKept deletes the kept file name in the directory fd, checked as
// st: unlinkat has no "only this inode" form, so an agent's rename() onto
// name between the check and the unlink would get a file the check never
// saw unlinked. Instead name is first renamed (RENAME_NOREPLACE) to a
// private temp name in the same directory, which no request can reach
// and listings hide (tempPrefix), and unlinked only if it still is the
// inode checked (device, inode, type, size, mtime: the rename itself
// moves the ctime); otherwise it is renamed back and the delete refused.
func (t *tree) unlinkKept(fd int, name string, st *unix.Stat_t) error {
	if t.beforeUnlink != nil {
		t.beforeUnlink()
	}
	var priv string
	for i := 0; ; i++ {
		priv = tempPrefix + "del-" + strconv.FormatUint(rand.Uint64(), 36)
		err := unix.Renameat2(fd, name, fd, priv, unix.RENAME_NOREPLACE)
		if err == nil {
			break
		}
		if err != unix.EEXIST || i >= 16 {
			return err
		}
	}
	var now unix.Stat_t
	if err := lstatOn(t.r, fd, priv, &now); err == nil && now.Dev == st.Dev && now.Ino == st.Ino &&
		now.Mode == st.Mode && now.Size == st.Size && now.Mtim == st.Mtim {
		return unix.Unlinkat(fd, priv, 0)
	}
	// Not the file checked: it goes back under its name, untouched. Should
	// that name have been taken again meanwhile, it goes to a visible name
	// beside it rather than replace the newer file or stay under priv,
	// which the temp sweep would remove.
	if err := unix.Renameat2(fd, priv, fd, name, unix.RENAME_NOREPLACE); err != nil {
		aside := name + ".davfs-kept-" + strconv.FormatUint(rand.Uint64(), 36)
		if len(aside) > nameMax {
			aside = "davfs-kept-" + strconv.FormatUint(rand.Uint64(), 36)
		}
		unix.Renameat2(fd, priv, fd, aside, unix.RENAME_NOREPLACE)
	}
	return errChangedInside
}

// child is the path of name in the directory at dir (only kept uses it).
func (t *tree) child(dir, name string) string {
	if t.kept == nil {
		return ""
	}
	return dir + "/" + name
}

// check is the per-entry rule of both passes.
func (t *tree) check(st *unix.Stat_t) error {
	if st.Ctim.Nano() > t.changedAfter {
		return errChangedInside
	}
	if t.replace && checkLinks(st, "", linkReplace) != nil {
		return errLinkedInside
	}
	return nil
}

// removeDir recursively deletes the directory name (inode ino) in pfd with
// no check on its entries' times (DeleteProject and CreateProject's
// rollback, which carry no revision): a tree whose every entry may go.
func removeDir(ctx context.Context, pfd int, name string, r root, ino uint64) error {
	t := &tree{r: r, changedAfter: math.MaxInt64}
	return t.remove(ctx, pfd, name, ino)
}

// remove recursively deletes the directory name in pfd. It opens it with
// O_DIRECTORY|O_NOFOLLOW (never a symlink), checks it is still the inode
// the caller validated (ino), checks the whole tree (walk with del unset)
// and only then deletes it (walk with del set). Nothing outside name is
// touched.
func (t *tree) remove(ctx context.Context, pfd int, name string, ino uint64) error {
	fd, err := unix.Openat(pfd, name, fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := fstatOn(t.r, fd, &st); err != nil {
		if err == unix.EXDEV {
			return errMount
		}
		return err
	}
	if st.Ino != ino {
		return unix.ESTALE // swapped since it was checked
	}
	// Nothing is deleted yet: a cancelled request may stop the check.
	if err := t.walk(ctx, fd, t.rel, 0, false); err != nil {
		return err
	}
	if t.afterCheck != nil {
		t.afterCheck()
	}
	// Once deleting, finish: a half-deleted tree helps nobody.
	return t.empty(context.WithoutCancel(ctx), pfd, name, fd, t.rel, 0)
}

// empty deletes everything below the open directory fd (at depth, path
// rel), checking each entry, and then the directory itself (name in pfd).
func (t *tree) empty(ctx context.Context, pfd int, name string, fd int, rel string, depth int) error {
	for round := 0; ; round++ {
		if err := t.walk(ctx, fd, rel, depth, true); err != nil {
			return err
		}
		err := unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
		if (err == unix.ENOTEMPTY || err == unix.EEXIST) && round < 8 {
			continue // something was added meanwhile: check and empty it again
		}
		return err
	}
}

// walk visits every entry below the open directory fd, checking each
// (check). With del it deletes them too, each right after its check: a
// directory is checked on its own fd, emptied and removed; anything else
// (a symlink included, which is unlinked, never followed) is checked with
// fstatat and unlinked.
func (t *tree) walk(ctx context.Context, fd int, rel string, depth int, del bool) error {
	if depth >= maxRemoveDepth {
		return errTooDeep
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return err
	}
	ents, err := fdio.ReadDirents(fd)
	if err != nil {
		return err
	}
	fixedPerm := false
	for _, d := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := t.entry(ctx, fd, t.child(rel, d.Name), d.Name, depth, del)
		if del && (err == unix.EACCES || err == unix.EPERM) && !fixedPerm {
			// A read-only directory (e.g. a Go module cache): make it
			// writable through its fd, then retry.
			fixedPerm = true
			if unix.Fchmod(fd, 0o700) == nil {
				err = t.entry(ctx, fd, t.child(rel, d.Name), d.Name, depth, del)
			}
		}
		if err != nil && err != unix.ENOENT {
			return err
		}
	}
	return nil
}

// entry checks (and with del deletes) the name in the directory fd, at
// path rel (set only with kept).
func (t *tree) entry(ctx context.Context, fd int, rel, name string, depth int, del bool) error {
	var st unix.Stat_t
	if err := lstatOn(t.r, fd, name, &st); err != nil {
		if err == unix.EXDEV {
			return errMount // never check or empty another mount
		}
		return err
	}
	if !fdio.IsType(&st, unix.S_IFDIR) {
		if err := t.check(&st); err != nil {
			return err
		}
		if err := t.checkKept(fd, rel, name, &st); err != nil {
			return err
		}
		if !del {
			return nil
		}
		if t.kept != nil {
			return t.unlinkKept(fd, name, &st)
		}
		err := unix.Unlinkat(fd, name, 0)
		if err != unix.EISDIR {
			return err
		}
		// Replaced by a directory since the stat: open it as one.
	}
	cfd, err := unix.Openat(fd, name, fdio.DirRead|fdio.Common, 0)
	if err == unix.ENOTDIR || err == unix.ELOOP {
		return unix.ESTALE // no longer a directory: changed during the delete
	}
	if err != nil {
		return err
	}
	defer unix.Close(cfd)
	if err := fstatOn(t.r, cfd, &st); err != nil {
		if err == unix.EXDEV {
			return errMount
		}
		return err
	}
	if err := t.check(&st); err != nil {
		return err
	}
	if err := t.checkKept(fd, rel, name, &st); err != nil {
		return err
	}
	if !del {
		return t.walk(ctx, cfd, rel, depth+1, false)
	}
	return t.empty(ctx, fd, name, cfd, rel, depth+1)
}
