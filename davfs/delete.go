package davfs

import (
	"context"
	"errors"
	"time"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// DeleteEntry permanently deletes a file or directory (non-empty only with
// recursive, else FailedPrecondition/DIRECTORY_NOT_EMPTY). It is
// DeleteEntryWith with DeleteOptions{Recursive: recursive}.
func (f *FS) DeleteEntry(ctx context.Context, ws Workspace, path, expectedRevision string, recursive bool) error {
	return f.DeleteEntryWith(ctx, ws, path, expectedRevision, DeleteOptions{Recursive: recursive})
}

// DeleteOptions are the choices of DeleteEntryWith.
type DeleteOptions struct {
	// Recursive allows deleting a non-empty directory.
	Recursive bool
	// Replace says the delete makes room for something that takes the
	// name (a WebDAV COPY or MOVE with Overwrite: T). The hard-link policy
	// (links.go) never lets a file with several links be replaced, so a
	// multi-link file at path, or anywhere in the tree below it, refuses
	// the delete with PermissionDenied/MULTIPLE_LINKS before anything is
	// removed. A plain delete removes such names.
	Replace bool
	// ChangedAfter, when set, is the moment from which a recursive delete
	// refuses every change, whatever later reads of the revision say (the
	// start of a keep write's version: work the version may not hold is
	// never deleted, even when another client reads the directory again
	// before the delete). Unset: the last time the revision was handed out.
	ChangedAfter time.Time
	// Kept, when set, is a keep delete's version of the directory it
	// deletes (workspace path below it → what the version holds there):
	// nothing the version does not hold is deleted, and each regular file
	// only with the stat it was captured with (tree.kept). The checkpoint
	// store's delete sets it (davfs/checkpoint), with ChangedAfter.
	Kept map[string]*Kept
	// KeptDirsOnly: a keep delete whose capture found only empty
	// directories (so no version): any other name found by the delete's
	// walk refuses it, whatever its ctime says (file ctimes come from a
	// coarse clock that can lag the moment ChangedAfter was taken).
	KeptDirsOnly bool
}

// Kept is what a version holds of one name (DeleteOptions.Kept).
type Kept struct {
	Dir bool
	// A regular file: the stat it was captured with (Unix ns times) and
	// the hex SHA-256 of its bytes.
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64
	Hash         string
	// Key: the stat was taken long enough after the file's last change to
	// stand for its content; otherwise the bytes are read again and
	// hashed before the file is deleted.
	Key bool
}

// matches reports whether st is still the regular file k was captured
// from: the same inode, size and time stamps.
func (k *Kept) matches(st *unix.Stat_t) bool {
	return fdio.IsType(st, unix.S_IFREG) && st.Dev == k.Dev && st.Ino == k.Ino && st.Size == k.Size &&
		st.Mtim.Nano() == k.Mtime && st.Ctim.Nano() == k.Ctime
}

// DeleteEntryWith permanently deletes a file or directory. The expected
// revision is required and checked under the mutation lock right before
// the unlink (Aborted/REVISION_MISMATCH). The workspace roots and the
// Global skills root are protected; Global AGENTS.md can be deleted.
//
// A recursive delete keeps newer work. It runs under the mutation lock in
// two passes over the tree, by fds, never following a symlink (one inside
// is unlinked, not followed), never entering another mount and never
// leaving the directory:
//
//  1. check: every entry is stat'ed; if any was changed after the
//     directory's revision was read (its ctime is later than the last time
//     davfs handed that revision out, see seen.go for how that is known
//     and its limits), or is a mount point, or (with Replace) a file with
//     several links, the delete is refused and nothing at all is deleted;
//  2. delete: each entry is stat'ed again right before its unlink (a
//     directory: its fd, before it is emptied) and the delete stops, with
//     the same error, at the first one that fails the check.
//
// What is guaranteed: no entry whose last change came after the revision
// was read is ever deleted, except one changed by another process between
// the re-check and the unlink of that name (microseconds; davfs's own
// writers hold the same lock, so only the agent can race it) or within the
// same clock tick as the read (seen.go). If the refusal comes from pass 1,
// nothing was deleted; from pass 2 (something changed during the delete),
// the entries already removed are ones unchanged since the read, and the
// directory itself remains. Denylisted names inside are deleted like any
// other (the denylist applies to requests, not to a deleted tree's content).
// A keep delete (a WebDAV DELETE under webdav.unconditionalWrites: keep)
// refuses changes after opts.ChangedAfter and deletes only names its
// version holds (opts.Kept), each regular file with the stat it was
// captured with (tree.kept).
//
// The automatic checkpoint before a recursive delete is not the core's:
// the checkpoint store takes it, then calls this (davfs/checkpoint).
func (f *FS) DeleteEntryWith(ctx context.Context, ws Workspace, path, expectedRevision string, opts DeleteOptions) error {
	t, err := f.CheckDelete(ws, path, expectedRevision)
	if err != nil {
		return err
	}
	w := t.w
	pfd, old, err := f.lockedDelete(ctx, w, expectedRevision, opts)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	defer closeRef(old) // frees a deleted file, outside the lock (commit)
	// The directory fsync runs after the unlock; success is only returned
	// once it is done.
	if err := fdio.FsyncDir(pfd); err != nil {
		return fsErr(err, w.rel)
	}
	return nil
}

// CheckDelete is what DeleteEntryWith refuses before anything else: no
// expected revision, an invalid path, a workspace root or Global's
// skills/. It returns the resolved target (for the checkpoint store's
// automatic checkpoint, taken between this check and the delete).
func (f *FS) CheckDelete(ws Workspace, path, expectedRevision string) (Target, error) {
	if expectedRevision == "" {
		return Target{}, errRevisionRequired()
	}
	w, err := f.resolve(ws, path)
	if err != nil {
		return Target{}, err
	}
	if w.isRoot() {
		return Target{}, f.rootErr(w, errProtected("the workspace root cannot be deleted"))
	}
	if w.isGlobal() && len(w.segs) == 1 && w.segs[0] == GlobalSkills {
		return Target{}, errProtected("the skills root cannot be deleted")
	}
	return Target{w}, nil
}

// lockedDelete is DeleteEntryWith's part under the mutation lock: the
// revision check and the unlink. It returns the parent directory
// (O_RDONLY, for the fsync) and, for a file, a reference to it (as
// commit's old), which the caller closes.
func (f *FS) lockedDelete(ctx context.Context, w wsPath, expectedRevision string, opts DeleteOptions) (int, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pfd, err := f.openParentDir(w)
	if err != nil {
		return -1, -1, err
	}
	old, err := f.deleteIn(ctx, pfd, w, expectedRevision, opts)
	if err != nil {
		unix.Close(pfd)
		return -1, -1, err
	}
	return pfd, old, nil
}

func (f *FS) deleteIn(ctx context.Context, pfd int, w wsPath, expectedRevision string, opts DeleteOptions) (int, error) {
	// When the revision was last handed out, read before the revision
	// check below hands it out again.
	seenAt, _ := f.seen.last(expectedRevision)
	if !opts.ChangedAfter.IsZero() {
		seenAt = opts.ChangedAfter.UnixNano()
	}
	var st unix.Stat_t
	if err := lstatOn(w.r, pfd, w.name(), &st); err != nil {
		return -1, fsErr(err, w.rel)
	}
	e, err := f.entryFromStat(pfd, w, w.name(), &st, 0)
	if err != nil {
		return -1, err
	}
	if e.Revision != expectedRevision {
		return -1, errStale(w.rel)
	}
	if e.Type == TypeFile {
		op := linkDelete
		if opts.Replace {
			op = linkReplace
		}
		old, err := replaceRef(pfd, w, &st, op)
		if err != nil {
			return -1, err
		}
		if err := unix.Unlinkat(pfd, w.name(), 0); err != nil {
			closeRef(old)
			return -1, fsErr(err, w.rel)
		}
		return old, nil
	}
	err = unix.Unlinkat(pfd, w.name(), unix.AT_REMOVEDIR)
	if err == unix.ENOTEMPTY || err == unix.EEXIST {
		if !opts.Recursive {
			return -1, newErr(CodeFailedPrecondition, ReasonDirectoryNotEmpty, err, "directory %q is not empty (recursive not set)", w.rel)
		}
		t := &tree{r: w.r, changedAfter: max(seenAt, st.Ctim.Nano()), replace: opts.Replace, afterCheck: f.hooks.afterCheck, beforeUnlink: f.hooks.beforeUnlink,
			kept: opts.Kept, dirsOnly: opts.KeptDirsOnly, rel: w.rel}
		err = t.remove(ctx, pfd, w.name(), st.Ino)
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
	case errors.Is(err, errChangedInside):
		return newErr(CodeAborted, ReasonRevisionMismatch, err, "something inside %q changed after its revision was read", rel)
	case errors.Is(err, errLinkedInside):
		return newErr(CodePermissionDenied, ReasonMultipleLinks, err, "%q holds a file with more than one hard link, which is never replaced", rel)
	case errors.Is(err, errMount):
		return newErr(CodePermissionDenied, ReasonSymlink, err, "%q contains a mount point", rel)
	case errors.Is(err, errTooDeep):
		return newErr(CodeResourceExhausted, ReasonPathTooDeep, err, "%q is nested too deeply to delete", rel)
	}
	return fsErr(err, rel)
}
