package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// RestoreOptions are the choices of RestoreCheckpoint.
type RestoreOptions struct {
	// PlanToken, if set, is the Comparison.PlanToken the caller showed:
	// the restore refuses (Aborted/REVISION_MISMATCH, nothing changed) if
	// what it would change now differs.
	PlanToken string
	// Operator names who asked, for the undo checkpoint.
	Operator string
	// AsNew, if set, restores a PROJECT checkpoint into the project of
	// this name, which must not exist: checked under the mutation lock
	// (AlreadyExists), so nothing is ever overwritten
	// (RestoreDeletedProject). The name may be the checkpoint's own.
	AsNew string
}

// target is the workspace a restore of ws's checkpoint changes.
func (o RestoreOptions) target(ws davfs.Workspace) davfs.Workspace {
	if o.AsNew != "" {
		return davfs.Workspace{Scope: davfs.ScopeProject, Project: o.AsNew}
	}
	return ws
}

// RestoreResult says what a restore did.
type RestoreResult struct {
	Checkpoint Checkpoint
	Path       string             // the part restored ("" the whole checkpoint)
	Changes    []CheckpointChange // what was undone (no diffs)
	// AutoCheckpoint is the ID of the checkpoint of the state before the
	// restore (automatic checkpoints on), which undoes it.
	AutoCheckpoint string
}

func errConflict(rel string) *davfs.Error {
	return newErr(davfs.CodeFailedPrecondition, davfs.ReasonCheckpointConflict, nil,
		"%q is in the way: a link, special file or denied name the checkpoint does not hold; nothing was restored", rel)
}

func errChangedDuring(rel string) *davfs.Error {
	return newErr(davfs.CodeAborted, davfs.ReasonRevisionMismatch, nil, "%q changed during the restore; the restore stopped there", rel)
}

// RestoreCheckpoint makes path ("" the whole checkpoint) of ws what it was
// in the checkpoint id. First, with automatic checkpoints on, it
// checkpoints the current state of that part (the undo). Then, under the
// mutation lock, it compares again and changes exactly what that
// comparison shows: removes what was added, recreates what was removed,
// rewrites what was modified (atomic writes, the checkpoint's permission
// bits, setuid/setgid/sticky never). Anything in the way that the
// checkpoint could not hold (a symlink, a special or multi-link file, a
// denied name) refuses the restore before it changes anything
// (FailedPrecondition/CHECKPOINT_CONFLICT); such names are never removed
// or replaced. A project that was deleted is created again (without its
// .git, which checkpoints never hold). A restore that fails after its
// undo checkpoint was taken returns that checkpoint's ID with the error.
func (f *Store) RestoreCheckpoint(ctx context.Context, ws davfs.Workspace, id, path string, opts RestoreOptions) (RestoreResult, error) {
	if _, err := f.checkpointCall(ws, path, id); err != nil {
		return RestoreResult{}, err
	}
	start := f.now()
	res, err := f.restore(ctx, ws, id, path, opts)
	f.observeCheckpoint("restore", f.now().Sub(start), 0, err)
	return res, err
}

func (f *Store) restore(ctx context.Context, ws davfs.Workspace, id, path string, opts RestoreOptions) (RestoreResult, error) {
	s := f.ck
	s.hold(id)
	defer s.release(id)
	s.gc.RLock()
	meta, err := s.readMeta(ws, id)
	if err == nil {
		// A damaged manifest refuses the restore before its undo
		// checkpoint is taken (the decoded manifest is cached for the
		// locked part).
		_, err = s.readManifest(ws, id)
	}
	s.gc.RUnlock()
	if err != nil {
		return RestoreResult{}, err
	}
	scope, err := narrow(meta.Root, path)
	if err != nil {
		return RestoreResult{}, err
	}
	res := RestoreResult{Checkpoint: meta.checkpoint(), Path: scope}
	dst := opts.target(ws)
	if res.AutoCheckpoint, err = f.autoCheckpoint(ctx, dst, scope, CheckpointBeforeRestore, opts.Operator, ""); err != nil {
		return RestoreResult{}, err
	}
	if res.AutoCheckpoint != "" {
		s.hold(res.AutoCheckpoint)
		defer s.release(res.AutoCheckpoint)
	}
	if restoreTestHook != nil {
		restoreTestHook("undo-taken")
	}
	res, err = f.restoreLocked(ctx, ws, id, scope, opts, res)
	if r := davfs.ReasonOf(err); err != nil && res.AutoCheckpoint != "" && res.Changes == nil &&
		(r == davfs.ReasonRevisionMismatch || r == davfs.ReasonCheckpointDamaged || errors.Is(err, context.DeadlineExceeded)) {
		// Refused before anything changed: the undo checkpoint undoes
		// nothing, and would only push older checkpoints out.
		_ = f.ck.delete(dst, res.AutoCheckpoint)
		res.AutoCheckpoint = ""
	}
	if err != nil {
		// The undo checkpoint of a restore that failed is kept, and named:
		// after a partial restore it is what brings the state back.
		return RestoreResult{AutoCheckpoint: res.AutoCheckpoint}, err
	}
	return res, nil
}

// restoreTestHook, when set (tests only), is called at the named stages of
// a restore: "undo-taken" (after the undo checkpoint, before the mutation
// lock) and "verified" (under the lock, after every check, before the
// first change).
var restoreTestHook func(stage string)

// errMovedSinceUndo: a path the restore would remove or replace is not what
// the undo checkpoint holds (the agent wrote it meanwhile).
func errMovedSinceUndo(rel string) *davfs.Error {
	return newErr(davfs.CodeAborted, davfs.ReasonRevisionMismatch, nil, "%q changed while the restore prepared; nothing was restored, compare again", rel)
}

// sameFileState reports whether two file entries are the same file in the
// same state (identity, size, time stamps and content).
func sameFileState(a, b *ckEntry) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Size == b.Size && a.Mtime == b.Mtime && a.Ctime == b.Ctime && a.Hash == b.Hash
}

// restoreLocked is the part of a restore under the mutation lock. On an
// error with res.Changes still nil, nothing was changed.
func (f *Store) restoreLocked(ctx context.Context, ws davfs.Workspace, id, scope string, opts RestoreOptions, res RestoreResult) (RestoreResult, error) {
	s := f.ck
	s.gc.RLock()
	defer s.gc.RUnlock()
	man, err := s.readManifest(ws, id)
	if err != nil {
		return res, err
	}
	base := inScope(man.Entries, scope)
	err = f.fs.Locked(func() error {
		res, err = f.restoreUnderLock(ctx, ws, id, scope, opts, res, man, base)
		return err
	})
	return res, err
}

// restoreUnderLock is the part of a restore under the mutation lock
// (davfs.FS.Locked): compare again, check, then change.
func (f *Store) restoreUnderLock(ctx context.Context, ws davfs.Workspace, id, scope string, opts RestoreOptions, res RestoreResult, man *ckManifest, base []ckEntry) (RestoreResult, error) {
	s := f.ck
	// From here on ws is the workspace changed (the manifest is read).
	if ws = opts.target(ws); opts.AsNew != "" {
		if err := f.fs.ProjectErr(ws.Project); davfs.ReasonOf(err) != davfs.ReasonProjectNotFound {
			if err == nil {
				return res, newErr(davfs.CodeAlreadyExists, davfs.ReasonAlreadyExists, nil, "a project named %q exists: restore under another name", ws.Project)
			}
			return res, err
		}
	}
	live, err := f.liveState(ctx, ws, scope, man)
	if err != nil {
		return res, err
	}
	target := inScope(live.out, scope)
	changes := changesBetween(base, target, live.pinned)
	if opts.PlanToken != "" && planToken(base, target, changes) != opts.PlanToken {
		return res, newErr(davfs.CodeAborted, davfs.ReasonRevisionMismatch, nil, "the workspace changed since the comparison; compare again")
	}
	if len(changes) == 0 {
		res.Changes = changes
		if opts.AsNew != "" {
			return res, f.restoreParents(ws, scope) // an empty project comes back too
		}
		return res, nil
	}
	bi, ti := indexEntries(base), indexEntries(target)
	// The undo checkpoint must hold exactly what the restore removes or
	// replaces: a write that landed after it was taken would be lost.
	if s.cfg.Automatic {
		if err := s.checkUndo(ws, res.AutoCheckpoint, changes, ti); err != nil {
			return res, err
		}
	}
	// Conflicts first: nothing changes if anything is in the way.
	if err := checkConflicts(changes, live, ti); err != nil {
		return res, err
	}
	// Every object the restore will write is read and hashed now: a
	// damaged store refuses the whole restore, nothing changed.
	if err := s.verifyObjects(ctx, id, changes, bi); err != nil {
		return res, err
	}
	if restoreTestHook != nil {
		restoreTestHook("verified")
	}
	if err := beforeCommit(ctx); err != nil {
		return res, err // too late to finish: nothing changed
	}
	// From here on, things change, and the restore finishes whatever
	// the caller's deadline (it was not within commitMargin): a restore
	// stopped half way would leave a state that no checkpoint holds.
	ctx = context.WithoutCancel(ctx)
	res.Changes = changes
	if err := f.restoreParents(ws, scope); err != nil {
		return res, err
	}
	return res, f.applyChanges(ctx, ws, changes, bi, ti)
}

// checkUndo refuses a restore when the undo checkpoint undo (none: "")
// does not hold exactly what the restore removes or replaces (target's
// entries by path, ti): a write that landed after it was taken would be
// lost.
func (s *ckStore) checkUndo(ws davfs.Workspace, undo string, changes []CheckpointChange, ti map[string]*ckEntry) error {
	var ui map[string]*ckEntry
	if undo != "" {
		um, err := s.readManifest(ws, undo)
		if err != nil {
			return newErr(davfs.CodeAborted, davfs.ReasonRevisionMismatch, err, "the undo checkpoint is gone; nothing was restored, compare again")
		}
		ui = indexEntries(um.Entries)
	}
	for _, c := range changes {
		t, u := ti[c.Path], ui[c.Path]
		if t == nil {
			continue // nothing there to lose
		}
		if u == nil || u.Dir != t.Dir || (!t.Dir && !sameFileState(u, t)) {
			return errMovedSinceUndo(c.Path)
		}
	}
	return nil
}

// checkConflicts refuses a restore when anything is in the way of a
// change: a blocked name on its path, or a pinned file that is now a
// directory.
func checkConflicts(changes []CheckpointChange, live *scanner, ti map[string]*ckEntry) error {
	for _, c := range changes {
		if c.Kind == CheckpointAdded {
			continue
		}
		for p := c.Path; p != ""; p = parentPath(p) {
			if _, ok := live.blocked[p]; ok {
				return errConflict(p)
			}
		}
		if _, ok := live.pinned[c.Path]; ok && c.Type == davfs.TypeFile {
			if e := ti[c.Path]; e != nil && e.Dir {
				return errConflict(c.Path)
			}
		}
	}
	return nil
}

// applyChanges makes the workspace what the checkpoint holds (bi, its
// entries by path; ti, the live ones): removals deepest first, then
// creations and rewrites, parents first.
func (f *Store) applyChanges(ctx context.Context, ws davfs.Workspace, changes []CheckpointChange, bi, ti map[string]*ckEntry) error {
	// Removals, deepest first.
	dels := slices.DeleteFunc(slices.Clone(changes), func(c CheckpointChange) bool { return c.Kind != CheckpointAdded })
	slices.SortFunc(dels, func(a, b CheckpointChange) int { return strings.Compare(b.Path, a.Path) })
	for _, c := range dels {
		if err := f.restoreRemove(ws, c.Path, ti[c.Path]); err != nil {
			return err
		}
	}
	// Creations and rewrites, parents first.
	puts := slices.DeleteFunc(slices.Clone(changes), func(c CheckpointChange) bool { return c.Kind == CheckpointAdded })
	slices.SortFunc(puts, func(a, b CheckpointChange) int { return strings.Compare(a.Path, b.Path) })
	for _, c := range puts {
		e := bi[c.Path]
		var err error
		if e.Dir {
			err = f.restoreDir(ws, e)
		} else {
			err = f.restoreFile(ctx, ws, e, c.Kind == CheckpointModified, ti[c.Path])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// hold keeps id from being pruned while a restore reads it.
func (s *ckStore) hold(id string) {
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	s.busy[id]++
}

func (s *ckStore) release(id string) {
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	if s.busy[id]--; s.busy[id] <= 0 {
		delete(s.busy, id)
	}
}

func (s *ckStore) isBusy(id string) bool {
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	return s.busy[id] > 0
}

// restoreParents creates a deleted project and the missing directories
// above scope (0755), under the mutation lock.
func (f *Store) restoreParents(ws davfs.Workspace, scope string) error {
	if ws.Scope == davfs.ScopeProject {
		if err := f.fs.ProjectErr(ws.Project); err != nil {
			if davfs.ReasonOf(err) != davfs.ReasonProjectNotFound {
				return err
			}
			if err := f.fs.RecreateProject(ws.Project); err != nil {
				return err
			}
		}
	}
	segs := strings.Split(scope, "/")
	for i := 1; i < len(segs); i++ {
		w, err := f.fs.Resolve(ws, strings.Join(segs[:i], "/"))
		if err != nil {
			return err
		}
		if w.IsSkillsRoot() {
			continue
		}
		pfd, err := f.fs.OpenParentDir(w)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(pfd, w.Name(), 0o755)
		if err == nil {
			err = fdio.FsyncDir(pfd)
		} else if err == unix.EEXIST {
			err = nil
		}
		unix.Close(pfd)
		if err != nil {
			return davfs.PathError(err, w.Path())
		}
	}
	return nil
}

// statIsEntry reports whether st is still the file the live comparison
// (or the previous checkpoint) hashed into e: the same inode, size and
// time stamps (an in-place write moves the mtime and ctime, a replacement
// the inode).
func statIsEntry(st *unix.Stat_t, e *ckEntry) bool {
	return fdio.IsType(st, unix.S_IFREG) && st.Dev == e.Dev && st.Ino == e.Ino && st.Size == e.Size &&
		st.Mtim.Nano() == e.Mtime && st.Ctim.Nano() == e.Ctime
}

// restoreRemove removes a name the checkpoint does not have, if it still is
// the one the comparison saw (a directory only when empty by now).
func (f *Store) restoreRemove(ws davfs.Workspace, p string, seen *ckEntry) error {
	w, err := f.fs.Resolve(ws, p)
	if err != nil {
		return err
	}
	if w.IsRoot() || w.IsSkillsRoot() {
		return nil
	}
	pfd, err := f.fs.OpenParentDir(w)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := f.fs.LstatAt(w, pfd, w.Name(), &st); err != nil || seen == nil || fdio.IsType(&st, unix.S_IFDIR) != seen.Dir ||
		(!seen.Dir && !statIsEntry(&st, seen)) {
		return errChangedDuring(p)
	}
	flags := 0 // a file with several links may be deleted (davfs's links.go)
	if seen.Dir {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(pfd, w.Name(), flags); err != nil {
		if err == unix.ENOTEMPTY || err == unix.EEXIST {
			return errChangedDuring(p)
		}
		return davfs.PathError(err, p)
	}
	return davfs.PathError(fdio.FsyncDir(pfd), p)
}

// openParentOf resolves p in ws and opens its parent directory (O_RDONLY,
// for *at calls and the fsync), as every write does.
func (f *Store) openParentOf(ws davfs.Workspace, p string) (davfs.Target, int, error) {
	w, err := f.fs.Resolve(ws, p)
	if err != nil {
		return w, -1, err
	}
	pfd, err := f.fs.OpenParentDir(w)
	return w, pfd, err
}

// restoreDir creates a directory of the checkpoint or sets its mode.
func (f *Store) restoreDir(ws davfs.Workspace, e *ckEntry) error {
	w, pfd, err := f.openParentOf(ws, e.Path)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	mode := e.Mode & 0o777
	if err := unix.Mkdirat(pfd, w.Name(), mode); err != nil && err != unix.EEXIST {
		return davfs.PathError(err, e.Path)
	}
	fd, err := f.fs.OpenAt(w, pfd, w.Name(), fdio.DirRead)
	if err != nil {
		return f.fs.OpenErr(w, e.Path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, mode); err != nil {
		return davfs.PathError(err, e.Path)
	}
	return davfs.PathError(fdio.FsyncDir(pfd), e.Path)
}

// restoreFile writes a file of the checkpoint atomically: a temp file
// with the stored bytes (verified against their hash) and mode, renamed
// over the current file if it still is the one compared (replace), or
// onto a free name.
func (f *Store) restoreFile(ctx context.Context, ws davfs.Workspace, e *ckEntry, replace bool, seen *ckEntry) error {
	w, pfd, err := f.openParentOf(ws, e.Path)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	obj, err := f.ck.openObject(e)
	if err != nil {
		return errObjectChanged(e.Path, err)
	}
	defer obj.Close()
	// Hashed again while it is copied: the store may have changed since
	// verifyObjects read it, and wrong bytes are never renamed into place.
	h := sha256.New()
	t, err := f.fs.WriteTemp(ctx, pfd, e.Path, io.TeeReader(io.LimitReader(obj, e.Size), h), e.Size, e.Mode&0o777)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(t.FD, &st); err != nil || st.Size != e.Size || hex.EncodeToString(h.Sum(nil)) != e.Hash {
		t.Discard(pfd)
		return errObjectChanged(e.Path, nil)
	}
	// The checkpoint's mtime too (an editor's or build tool's view of the
	// file); the ctime is the restore's, as always.
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(e.Mtime)}
	if err := unix.UtimesNanoAt(pfd, t.Name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Discard(pfd)
		return davfs.PathError(err, e.Path)
	}
	var target *unix.Stat_t
	if replace {
		var st unix.Stat_t
		if err := f.fs.LstatAt(w, pfd, w.Name(), &st); err != nil || seen == nil || seen.Dir || !statIsEntry(&st, seen) {
			t.Discard(pfd)
			return errChangedDuring(e.Path)
		}
		target = &st
	}
	err = f.fs.Commit(pfd, w, t, target)
	if err != nil {
		if davfs.ReasonOf(err) == davfs.ReasonAlreadyExists {
			return errChangedDuring(e.Path)
		}
		return err
	}
	return davfs.PathError(fdio.FsyncDir(pfd), e.Path)
}

// errObjectDamaged: an object the restore would write is missing or not
// of its size and hash. Nothing has been changed.
func errObjectDamaged(id, rel string, cause error) *davfs.Error {
	return newErr(davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged, cause,
		"checkpoint %q is damaged (its copy of %q is missing or not what was stored); nothing was restored; delete it or restore another checkpoint", id, rel)
}

// errObjectChanged: an object changed in the store after verifyObjects
// read it (the store is writable by others): the file was not written and
// the restore stopped there.
func errObjectChanged(rel string, cause error) *davfs.Error {
	return newErr(davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged, cause,
		"the checkpoint's copy of %q changed in the store during the restore; it was not written and the restore stopped there", rel)
}

// verifyObjects reads every object the changes will write (a file the
// checkpoint holds that is removed or modified since) and checks its size
// and hash, each distinct object once. It runs under the mutation lock,
// before the first change.
func (s *ckStore) verifyObjects(ctx context.Context, id string, changes []CheckpointChange, bi map[string]*ckEntry) error {
	seen := map[string]bool{}
	buf := make([]byte, 256<<10)
	for _, c := range changes {
		e := bi[c.Path]
		if c.Kind == CheckpointAdded || e == nil || e.Dir {
			continue
		}
		key := e.Hash + "/" + e.Pack + "/" + strconv.FormatInt(e.Off, 10)
		if seen[key] {
			continue
		}
		seen[key] = true
		if err := ctx.Err(); err != nil {
			return davfs.ContextError(ctx)
		}
		if err := s.verifyObject(ctx, e, buf); err != nil {
			if ctx.Err() != nil {
				return davfs.ContextError(ctx)
			}
			if transientErrno(err) {
				// The store could not be read just now (out of fds or
				// memory): the checkpoint is not known to be damaged.
				return errStore(err)
			}
			return errObjectDamaged(id, c.Path, err)
		}
	}
	return nil
}

// verifyObject reads the stored bytes of e and checks their size and hash.
// A large object's check ends as soon as ctx does.
func (s *ckStore) verifyObject(ctx context.Context, e *ckEntry, buf []byte) error {
	obj, err := s.openObject(e)
	if err != nil {
		return err
	}
	defer obj.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, ctxReader{ctx, io.LimitReader(obj, e.Size+1)}, buf)
	switch {
	case err != nil:
		return err
	case n != e.Size:
		return errors.New("object size differs")
	case hex.EncodeToString(h.Sum(nil)) != e.Hash:
		return errors.New("object hash differs")
	}
	return nil
}

// transientErrno reports whether err is an errno that says nothing about
// the stored data: the process ran out of fds or memory, or was
// interrupted.
func transientErrno(err error) bool {
	switch fdio.Errno(err) {
	case unix.EMFILE, unix.ENFILE, unix.ENOMEM, unix.EAGAIN, unix.EINTR:
		return true
	}
	return false
}

// ctxReader reads r until ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
