package davfs

import (
	"context"
	"strings"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// MoveEntry renames src to dst inside one workspace; dst must not exist
// (renameat2 RENAME_NOREPLACE: AlreadyExists, nothing replaced). The
// expected revision of src is required and checked under the mutation
// lock right before the rename (Aborted). dst's parent must exist and be a
// directory. Refused: the workspace root, the Global skills root and
// AGENTS.md (PermissionDenied/PROTECTED), a destination outside skills/ in
// Global, and a directory into itself or a descendant
// (FailedPrecondition/MOVE_INTO_SELF). No copy+delete fallback.
// A directory revision it returns counts as shown to a client unless use
// says ForMutation (seen.go).
func (f *FS) MoveEntry(ctx context.Context, ws Workspace, src, dst, expectedRevision string, use ...Use) (Entry, error) {
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
	if sw.isRoot() {
		return Entry{}, f.rootErr(sw, errProtected("the workspace root cannot be moved"))
	}
	if dw.isRoot() {
		return Entry{}, f.rootErr(sw, newErr(CodeAlreadyExists, ReasonAlreadyExists, nil, "the destination is the workspace root"))
	}
	if ws.Scope == ScopeGlobal {
		if len(sw.segs) == 1 {
			return Entry{}, errProtected("%q cannot be moved or renamed", src)
		}
		if len(dw.segs) < 2 || dw.segs[0] != GlobalSkills {
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
	if err := fdio.FsyncDir(dpfd); err != nil {
		return Entry{}, fsErr(err, dst)
	}
	if err := fdio.FsyncDir(spfd); err != nil {
		return Entry{}, fsErr(err, src)
	}
	f.handOut(use, e)
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
