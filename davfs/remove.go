package davfs

import (
	"context"
	"errors"

	"golang.org/x/sys/unix"
)

// maxRemoveDepth bounds the recursion of removeTree (one fd per level).
const maxRemoveDepth = 4096

var errTooDeep = errors.New("davfs: directory tree too deep to delete")
var errMount = errors.New("davfs: refusing to delete across a mount point")

// removeDir recursively deletes the directory name in pfd. It opens it with
// O_DIRECTORY|O_NOFOLLOW (never a symlink), checks it is still the inode
// (dev, ino) the caller validated, then removes its content through fds:
// a symlink inside is unlinked, never followed; no other file system is
// entered; nothing outside name is touched. Denylisted names inside are
// removed like any other (the denylist applies to requests, not to the
// content of a deleted tree).
func removeDir(ctx context.Context, pfd int, name string, r root, ino uint64) error {
	fd, err := unix.Openat(pfd, name, oDirRead|oCommon, 0)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := fstatOn(r, fd, &st); err != nil {
		unix.Close(fd)
		if err == unix.EXDEV {
			return errMount
		}
		return err
	}
	if st.Ino != ino {
		unix.Close(fd)
		return unix.ESTALE // swapped since it was checked
	}
	return removeOpenDir(ctx, pfd, name, fd, r, 0)
}

// removeOpenDir empties the open directory fd (named name in pfd), closes
// it and removes it.
func removeOpenDir(ctx context.Context, pfd int, name string, fd int, r root, depth int) error {
	for round := 0; ; round++ {
		err := emptyDir(ctx, fd, r, depth)
		if err != nil {
			unix.Close(fd)
			return err
		}
		err = unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
		if (err == unix.ENOTEMPTY || err == unix.EEXIST) && round < 8 {
			continue // something was added meanwhile: empty it again
		}
		unix.Close(fd)
		return err
	}
}

// emptyDir removes every entry of the open directory fd.
func emptyDir(ctx context.Context, fd int, r root, depth int) error {
	if depth >= maxRemoveDepth {
		return errTooDeep
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return err
	}
	ents, err := readDirents(fd)
	if err != nil {
		return err
	}
	fixedPerm := false
	for _, d := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := removeEntry(ctx, fd, d, r, depth)
		if (err == unix.EACCES || err == unix.EPERM) && !fixedPerm {
			// A read-only directory (e.g. a Go module cache): make it
			// writable through its fd, then retry.
			fixedPerm = true
			if unix.Fchmod(fd, 0o700) == nil {
				err = removeEntry(ctx, fd, d, r, depth)
			}
		}
		if err != nil && err != unix.ENOENT {
			return err
		}
	}
	return nil
}

func removeEntry(ctx context.Context, fd int, d dirent, r root, depth int) error {
	if d.typ != unix.DT_DIR && d.typ != unix.DT_UNKNOWN {
		err := unix.Unlinkat(fd, d.name, 0)
		if err != unix.EISDIR {
			return err
		}
	}
	// A directory (or unknown): open it without following a symlink.
	cfd, err := unix.Openat(fd, d.name, oDirRead|oCommon, 0)
	if err == unix.ENOTDIR || err == unix.ELOOP {
		return unix.Unlinkat(fd, d.name, 0) // not a directory (any more)
	}
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := fstatOn(r, cfd, &st); err != nil {
		unix.Close(cfd)
		if err == unix.EXDEV {
			return errMount // never empty another mount
		}
		return err
	}
	return removeOpenDir(ctx, fd, d.name, cfd, r, depth+1)
}
