package davfs

import (
	"context"
	"errors"

	"golang.org/x/sys/unix"
)

// DeleteEntry permanently deletes a file or directory (non-empty only with
// recursive, else FailedPrecondition/DIRECTORY_NOT_EMPTY). The expected
// revision is required and checked under the mutation lock right before the
// unlink. The workspace roots and the Global skills root are protected;
// Global AGENTS.md can be deleted. A recursive delete walks by fds, never
// follows a symlink (one inside is unlinked) and never leaves the directory.
func (f *FS) DeleteEntry(ctx context.Context, ws Workspace, path, expectedRevision string, recursive bool) error {
	if expectedRevision == "" {
		return errRevisionRequired()
	}
	w, err := f.resolve(ws, path)
	if err != nil {
		return err
	}
	if w.isRoot() {
		if err := f.wsErr(w); err != nil {
			return err
		}
		return errProtected("the workspace root cannot be deleted")
	}
	if w.isGlobal() && len(w.segs) == 1 && w.segs[0] == globalSkills {
		return errProtected("the skills root cannot be deleted")
	}
	pfd, old, err := f.lockedDelete(ctx, w, path, expectedRevision, recursive)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	defer closeRef(old) // frees a deleted file, outside the lock (commit)
	// The directory fsync runs after the unlock; success is only returned
	// once it is done.
	if err := fsyncDir(pfd); err != nil {
		return fsErr(err, w.rel)
	}
	return nil
}

// lockedDelete is DeleteEntry's part under the mutation lock: the revision
// check and the unlink. It returns the parent directory (O_RDONLY, for the
// fsync) and, for a file, a reference to it (as commit's old), which the
// caller closes.
func (f *FS) lockedDelete(ctx context.Context, w wsPath, path, expectedRevision string, recursive bool) (int, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pfd, err := f.openParentDir(w)
	if err != nil {
		return -1, -1, err
	}
	old, err := f.deleteIn(ctx, pfd, w, path, expectedRevision, recursive)
	if err != nil {
		unix.Close(pfd)
		return -1, -1, err
	}
	return pfd, old, nil
}

func (f *FS) deleteIn(ctx context.Context, pfd int, w wsPath, path, expectedRevision string, recursive bool) (int, error) {
	var st unix.Stat_t
	if err := lstatOn(w.r, pfd, w.name(), &st); err != nil {
		return -1, fsErr(err, w.rel)
	}
	e, err := f.entryFromStat(pfd, w, w.name(), &st, 0)
	if err != nil {
		return -1, err
	}
	if e.Revision != expectedRevision {
		return -1, errStale(path)
	}
	if e.Type == TypeFile {
		old := holdForFree(w, pfd)
		if err := unix.Unlinkat(pfd, w.name(), 0); err != nil {
			closeRef(old)
			return -1, fsErr(err, w.rel)
		}
		return old, nil
	}
	err = unix.Unlinkat(pfd, w.name(), unix.AT_REMOVEDIR)
	if err == unix.ENOTEMPTY || err == unix.EEXIST {
		if !recursive {
			return -1, newErr(CodeFailedPrecondition, ReasonDirectoryNotEmpty, err, "directory %q is not empty (recursive not set)", path)
		}
		err = removeDir(context.WithoutCancel(ctx), pfd, w.name(), w.r, st.Ino)
	}
	if err != nil {
		return -1, removeErr(err, w.rel)
	}
	return -1, nil
}

func removeErr(err error, rel string) error {
	switch {
	case errors.Is(err, unix.ESTALE):
		return errStale(rel)
	case errors.Is(err, errMount):
		return newErr(CodePermissionDenied, ReasonSymlink, err, "%q contains a mount point", rel)
	case errors.Is(err, errTooDeep):
		return newErr(CodeResourceExhausted, ReasonPathTooDeep, err, "%q is nested too deeply to delete", rel)
	}
	return fsErr(err, rel)
}
