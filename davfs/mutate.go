package davfs

import (
	"context"
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

func errProtected(format string, args ...any) *Error {
	return newErr(CodePermissionDenied, ReasonProtected, nil, format, args...)
}

// CreateEntry creates an empty file (0644) or directory (0755) named name in
// the existing directory parent. name is one segment, validated like a path
// segment (InvalidArgument/INVALID_NAME, PermissionDenied/DENYLISTED). An
// existing name of any kind is AlreadyExists and is left untouched
// (O_CREAT|O_EXCL, mkdirat). The mode is set with fchmod so the umask does
// not change it. At the Global root only the file AGENTS.md can be created.
func (f *FS) CreateEntry(ctx context.Context, ws Workspace, parent, name string, typ EntryType) (Entry, error) {
	if typ != TypeFile && typ != TypeDirectory {
		return Entry{}, newErr(CodeInvalidArgument, ReasonInvalidArgument, nil, "type must be FILE or DIRECTORY")
	}
	pw, err := f.resolve(ws, parent)
	if err != nil {
		return Entry{}, err
	}
	if err := f.checkName(name); err != nil {
		if werr := f.wsErr(pw); werr != nil {
			return Entry{}, werr
		}
		return Entry{}, err
	}
	full := name
	if parent != "" {
		full = parent + "/" + name
	}
	w, err := f.resolve(ws, full)
	if err != nil {
		return Entry{}, err
	}
	if w.isGlobal() && len(w.segs) == 1 {
		switch {
		case name == globalSkills:
			return Entry{}, newErr(CodeAlreadyExists, ReasonAlreadyExists, nil, "%q already exists", name)
		case typ != TypeFile:
			return Entry{}, errProtected("%q at the Global root can only be a file", name)
		}
	}
	pfd, e, err := f.lockedCreate(w, name, typ)
	if pfd < 0 {
		return Entry{}, err
	}
	defer unix.Close(pfd)
	// The directory fsync runs after the unlock (other mutations need not
	// queue behind it); success is only returned once it is done.
	if err := fsyncDir(pfd); err != nil {
		return Entry{}, fsErr(err, w.rel)
	}
	return e, err
}

// lockedCreate is CreateEntry's part under the mutation lock: the create
// and the new entry's stat. Once the entry is created it returns the
// parent directory (O_RDONLY, for the fsync; the caller closes it) with
// the stat's result, else -1 and the error.
func (f *FS) lockedCreate(w wsPath, name string, typ EntryType) (int, Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pfd, err := f.openParentDir(w)
	if err != nil {
		return -1, Entry{}, err
	}
	if err := createIn(pfd, w, name, typ); err != nil {
		unix.Close(pfd)
		return -1, Entry{}, err
	}
	e, err := f.statEntry(pfd, w, name)
	return pfd, e, err
}

func createIn(pfd int, w wsPath, name string, typ EntryType) error {
	if typ == TypeFile {
		fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|oCommon, 0o644)
		if err != nil {
			return fsErr(err, w.rel)
		}
		err = unix.Fchmod(fd, 0o644)
		unix.Close(fd)
		if err != nil {
			return fsErr(err, w.rel)
		}
		return nil
	}
	if err := unix.Mkdirat(pfd, name, 0o755); err != nil {
		return fsErr(err, w.rel)
	}
	fd, err := unix.Openat(pfd, name, oDirRead|oCommon, 0)
	if err != nil {
		return fsErr(err, w.rel)
	}
	err = unix.Fchmod(fd, 0o755)
	unix.Close(fd)
	if err != nil {
		return fsErr(err, w.rel)
	}
	return nil
}

// MoveEntry renames src to dst inside one workspace; dst must not exist
// (renameat2 RENAME_NOREPLACE: AlreadyExists, nothing replaced). The
// expected revision of src is required and checked under the mutation
// lock right before the rename (Aborted). dst's parent must exist and be a
// directory. Refused: the workspace root, the Global skills root and
// AGENTS.md (PermissionDenied/PROTECTED), a destination outside skills/ in
// Global, and a directory into itself or a descendant
// (FailedPrecondition/MOVE_INTO_SELF). No copy+delete fallback.
func (f *FS) MoveEntry(ctx context.Context, ws Workspace, src, dst, expectedRevision string) (Entry, error) {
	if expectedRevision == "" {
		return Entry{}, errRevisionRequired()
	}
	sw, err := f.resolve(ws, src)
	if err != nil {
		return Entry{}, err
	}
	dw, err := f.resolve(ws, dst)
	if err != nil {
		return Entry{}, err
	}
	if sw.isRoot() || dw.isRoot() {
		if err := f.wsErr(sw); err != nil {
			return Entry{}, err
		}
	}
	if sw.isRoot() {
		return Entry{}, errProtected("the workspace root cannot be moved")
	}
	if dw.isRoot() {
		return Entry{}, newErr(CodeAlreadyExists, ReasonAlreadyExists, nil, "the destination is the workspace root")
	}
	if ws.Scope == ScopeGlobal {
		if len(sw.segs) == 1 {
			return Entry{}, errProtected("%q cannot be moved or renamed", src)
		}
		if len(dw.segs) < 2 || dw.segs[0] != globalSkills {
			return Entry{}, errProtected("in Global, entries can only move within skills/")
		}
	}
	if src == dst {
		return Entry{}, newErr(CodeAlreadyExists, ReasonAlreadyExists, nil, "%q already exists", dst)
	}
	if strings.HasPrefix(dst, src+"/") {
		return Entry{}, newErr(CodeFailedPrecondition, ReasonMoveIntoSelf, nil, "cannot move %q into itself", src)
	}
	spfd, dpfd, e, err := f.lockedMove(sw, dw, src, dst, expectedRevision)
	if spfd < 0 {
		return Entry{}, err
	}
	defer unix.Close(spfd)
	defer unix.Close(dpfd)
	// The directory fsyncs run after the unlock; success is only returned
	// once they are done.
	if err := fsyncDir(dpfd); err != nil {
		return Entry{}, fsErr(err, dst)
	}
	if err := fsyncDir(spfd); err != nil {
		return Entry{}, fsErr(err, src)
	}
	return e, err
}

// lockedMove is MoveEntry's part under the mutation lock: the revision
// check, the rename and the moved entry's stat. Once renamed it returns
// both parent directories (O_RDONLY, for the fsyncs; the caller closes
// them) with the stat's result, else -1, -1 and the error.
func (f *FS) lockedMove(sw, dw wsPath, src, dst, expectedRevision string) (int, int, Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	spfd, err := f.openParentDir(sw)
	if err != nil {
		return -1, -1, Entry{}, err
	}
	dpfd, err := f.openParentDir(dw)
	if err != nil {
		unix.Close(spfd)
		return -1, -1, Entry{}, err
	}
	if err := f.renameChecked(spfd, dpfd, sw, dw, src, dst, expectedRevision); err != nil {
		unix.Close(spfd)
		unix.Close(dpfd)
		return -1, -1, Entry{}, err
	}
	e, err := f.statEntry(dpfd, dw, dw.name())
	return spfd, dpfd, e, err
}

func (f *FS) renameChecked(spfd, dpfd int, sw, dw wsPath, src, dst, expectedRevision string) error {
	e, err := f.statEntry(spfd, sw, sw.name())
	if err != nil {
		return err
	}
	if e.Revision != expectedRevision {
		return errStale(src)
	}
	if err := unix.Renameat2(spfd, sw.name(), dpfd, dw.name(), unix.RENAME_NOREPLACE); err != nil {
		if err == unix.EINVAL {
			return newErr(CodeFailedPrecondition, ReasonMoveIntoSelf, err, "cannot move %q into itself", src)
		}
		return fsErr(err, dst)
	}
	return nil
}

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
