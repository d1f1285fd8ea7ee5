package davfs

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// DeleteEntry permanently deletes a file or directory (non-empty only with
// recursive, else FailedPrecondition/DIRECTORY_NOT_EMPTY). It is
// DeleteEntryResult with DeleteOptions{Recursive: recursive}.
func (f *FS) DeleteEntry(ctx context.Context, ws Workspace, path, expectedRevision string, recursive bool) error {
	_, err := f.DeleteEntryResult(ctx, ws, path, expectedRevision, DeleteOptions{Recursive: recursive})
	return err
}

// DeleteOptions are the choices of DeleteEntryResult.
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
	// SkipCheckpoint deletes without the automatic checkpoint a recursive
	// delete otherwise takes first: the caller's explicit override for a
	// full store (ResourceExhausted/CHECKPOINT_LIMIT). The delete then
	// cannot be undone.
	SkipCheckpoint bool
	// ChangedAfter, when set, is the moment from which a recursive delete
	// refuses every change, whatever later reads of the revision say (the
	// start of a keep write's version: work the version may not hold is
	// never deleted, even when another client reads the directory again
	// before the delete). Unset: the last time the revision was handed out.
	ChangedAfter time.Time

	// kept: the entries of the version a keep delete took of the tree
	// (tree.kept); set by DeleteEntryResult, never by callers.
	kept map[string]*ckEntry
	// KeptVersion is the per-file version KeepVersion just kept of path
	// (a keep delete): it is the delete's automatic checkpoint (no other is
	// taken), and with ChangedAfter set nothing the version does not hold
	// is deleted.
	KeptVersion string
	// KeptDirsOnly: a keep delete whose capture found only empty
	// directories (so no version): any other name found by the delete's
	// walk refuses it, whatever its ctime says (file ctimes come from a
	// coarse clock that can lag the moment ChangedAfter was taken). Set by
	// the WebDAV adapter's RemoveAll.
	KeptDirsOnly bool
}

// DeleteResult is what a delete did besides deleting.
type DeleteResult struct {
	// AutoCheckpoint is the ID of the automatic checkpoint taken before
	// the delete ("" when none was: automatic checkpoints off, skipped,
	// not a directory, or nothing a checkpoint could hold).
	AutoCheckpoint string
}

// DeleteEntryResult permanently deletes a file or directory. The expected
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
// A keep delete (a WebDAV DELETE under webdav.unconditionalWrites: keep,
// its version recorded in ctx) refuses changes after opts.ChangedAfter and
// deletes only names the version holds, each regular file with the stat
// it was captured with (tree.kept).
//
// With automatic checkpoints on (CheckpointConfig.Automatic), a recursive
// delete of a directory whose revision matches first checkpoints that
// directory (checkpoint.go); if that fails, nothing is deleted and its
// error is returned (a full store: ResourceExhausted/CHECKPOINT_LIMIT,
// which opts.SkipCheckpoint overrides).
//
// It also says which automatic checkpoint it took (for the caller's
// audit). When the delete fails after the checkpoint was taken, the
// checkpoint is kept and its ID is still returned with the error.
func (f *FS) DeleteEntryResult(ctx context.Context, ws Workspace, path, expectedRevision string, opts DeleteOptions) (DeleteResult, error) {
	var res DeleteResult
	if expectedRevision == "" {
		return res, errRevisionRequired()
	}
	w, err := f.resolve(ws, path)
	if err != nil {
		return res, err
	}
	if w.isRoot() {
		return res, f.rootErr(w, errProtected("the workspace root cannot be deleted"))
	}
	if w.isGlobal() && len(w.segs) == 1 && w.segs[0] == GlobalSkills {
		return res, errProtected("the skills root cannot be deleted")
	}
	if opts.Recursive && !opts.SkipCheckpoint && f.ck != nil && f.ck.cfg.Automatic {
		// A directory's delete keeps an automatic checkpoint of it first
		// (checkpoint.go), when the delete can succeed. f.stat, unlike
		// Stat, does not hand the revision out (seen.go).
		if e, err := f.stat(w); err == nil && e.Type == TypeDirectory && e.Revision == expectedRevision {
			if opts.KeptVersion != "" {
				res.AutoCheckpoint = opts.KeptVersion // a per-file version of it was just kept
			} else if res.AutoCheckpoint, err = f.autoCheckpoint(ctx, ws, path, CheckpointBeforeDelete); err != nil {
				return res, err
			}
		}
	}
	opts.kept = nil
	if id := opts.KeptVersion; id != "" && !opts.ChangedAfter.IsZero() {
		// A keep delete of a directory: nothing the version does not hold
		// is deleted (a file's own revision check already binds it).
		if e, err := f.stat(w); err == nil && e.Type == TypeDirectory {
			if opts.kept, err = f.keptEntries(ws, id, w.rel); err != nil {
				return res, err
			}
		}
	}
	pfd, old, err := f.lockedDelete(ctx, w, expectedRevision, opts)
	if err != nil {
		return res, err
	}
	defer unix.Close(pfd)
	defer closeRef(old) // frees a deleted file, outside the lock (commit)
	// The directory fsync runs after the unlock; success is only returned
	// once it is done.
	if err := fdio.FsyncDir(pfd); err != nil {
		return res, fsErr(err, w.rel)
	}
	return res, nil
}

// lockedDelete is DeleteEntryResult's part under the mutation lock: the
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
			kept: opts.kept, dirsOnly: opts.KeptDirsOnly, rel: w.rel}
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

// keptEntries reads the version id of ws back as the entries below rel (a
// keep delete's tree.kept). A version that cannot be read refuses the
// delete: what it holds is unknown.
func (f *FS) keptEntries(ws Workspace, id, rel string) (map[string]*ckEntry, error) {
	f.ck.gc.RLock()
	m, err := f.ck.readManifest(ws, id)
	f.ck.gc.RUnlock()
	if err != nil {
		return nil, newErr(CodeAborted, ReasonRevisionMismatch, err, "the version kept of %q cannot be read back", rel)
	}
	out := make(map[string]*ckEntry, len(m.Entries))
	for i := range m.Entries {
		if e := &m.Entries[i]; strings.HasPrefix(e.Path, rel+"/") {
			out[e.Path] = e
		}
	}
	return out, nil
}
