package davfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// hooks let internal tests inject failures into the atomic write path.
// All nil in production.
type hooks struct {
	write        func(fd int, b []byte) (int, error) // replaces unix.Write on temp files
	fsync        func(fd int) error                  // replaces unix.Fsync on temp files
	fsyncDir     func(fd int) error                  // replaces fsyncDir in syncDir
	beforeRename func() error                        // runs under the lock right before the rename
	beforeLock   func()                              // runs after the temp file is complete
	afterCheck   func()                              // runs between a recursive delete's two passes
	beforeUnlink func()                              // runs between a keep delete's check of a file and its unlink
}

func (f *FS) writeFD(fd int, b []byte) (int, error) {
	if f.hooks.write != nil {
		return f.hooks.write(fd, b)
	}
	return unix.Write(fd, b)
}

func (f *FS) fsyncFD(fd int) error {
	if f.hooks.fsync != nil {
		return f.hooks.fsync(fd)
	}
	return unix.Fsync(fd)
}

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// errUpload wraps a read error of the caller's reader (an aborted upload).
func errUpload(rel string, err error) *Error {
	return newErr(CodeInternal, ReasonInternal, err, "upload of %q was interrupted; nothing was written", rel)
}

func errTooLarge(rel string, max int64) *Error {
	return newErr(CodeResourceExhausted, ReasonTooLarge, nil, "%q is larger than %d bytes; nothing was written", rel, max)
}

// writeTemp streams r (at most max bytes; max < 0: no limit) into a new temp
// file in dirfd, sets mode, fsyncs it. On any error the temp file is gone.
// If scan is set, the bytes also go through it while the total stays within
// the editable limit (beyond it revisions are stat-only and scan is unused).
func (f *FS) writeTemp(ctx context.Context, dirfd int, rel string, r io.Reader, max int64, mode uint32, scan *textScan) (fdio.TempFile, error) {
	t, err := fdio.CreateTemp(dirfd)
	if err != nil {
		return fdio.TempFile{}, fsErr(err, rel)
	}
	fail := func(err error) (fdio.TempFile, error) {
		t.Discard(dirfd)
		return fdio.TempFile{}, err
	}
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return fail(ctxErr(ctx))
		}
		n, rerr := r.Read(buf)
		if n > 0 {
			total += int64(n)
			if max >= 0 && total > max {
				return fail(errTooLarge(rel, max))
			}
			if scan != nil && total <= f.cfg.MaxEditableFileSize {
				scan.write(buf[:n])
			}
			for b := buf[:n]; len(b) > 0; {
				m, err := f.writeFD(t.FD, b)
				if err == unix.EINTR {
					continue
				}
				if err != nil {
					return fail(fsErr(err, rel))
				}
				if m == 0 {
					return fail(fsErr(unix.EIO, rel))
				}
				b = b[m:]
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fail(errUpload(rel, rerr))
		}
	}
	if err := unix.Fchmod(t.FD, mode); err != nil {
		return fail(fsErr(err, rel))
	}
	if err := f.fsyncFD(t.FD); err != nil {
		return fail(fsErr(err, rel))
	}
	return t, nil
}

// fdIdentity is a file's device and inode; of an open fd, it is fixed for
// the fd's life, so it is taken before the mutation lock.
type fdIdentity struct{ dev, ino uint64 }

func identityOf(fd int, rel string) (fdIdentity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fdIdentity{}, fsErr(err, rel)
	}
	return fdIdentity{dev: st.Dev, ino: st.Ino}, nil
}

// recheckParent verifies, under the mutation lock, that the parent directory
// fd (whose identity is pid) still is what w's parent path resolves to (not
// moved or swapped for a symlink since it was opened).
func (f *FS) recheckParent(w wsPath, pid fdIdentity) error {
	fd, err := f.openParent(w, fdio.DirPath)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var a unix.Stat_t
	if err := unix.Fstat(fd, &a); err != nil {
		return fsErr(err, w.rel)
	}
	if a.Dev != pid.dev || a.Ino != pid.ino {
		return newErr(CodeAborted, ReasonRevisionMismatch, nil, "the parent directory of %q changed", w.rel)
	}
	return nil
}

// openParentDir opens w's parent (O_RDONLY, for fsync) and tells a parent
// that is a file apart from a missing one.
func (f *FS) openParentDir(w wsPath) (int, error) {
	fd, err := f.openParent(w, fdio.DirRead)
	if err != nil && ReasonOf(err) == ReasonNotFound && len(w.segs) > 1 {
		if e, serr := f.stat(w.parent()); (serr == nil && e.Type != TypeDirectory) || ReasonOf(serr) == ReasonNotRegular {
			return -1, newErr(CodeFailedPrecondition, ReasonNotADirectory, nil, "%q is not a directory", w.parent().rel)
		}
	}
	return fd, err
}

// editableTarget returns the current Entry of the file w for UpdateFile and
// fails unless it still has revision want and is editable.
// It returns the target's stat, for commit to check the file it replaces.
func (f *FS) editableTarget(pfd int, w wsPath, want string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := lstatOn(w.r, pfd, w.name(), &st); err != nil {
		return st, fsErr(err, w.rel)
	}
	if err := checkRegular(&st, w, linkWrite); err != nil {
		return st, err
	}
	e, err := f.entryFromStat(pfd, w, w.name(), &st, 0)
	if err != nil {
		return st, err
	}
	if e.Revision != want {
		return st, errStale(w.rel)
	}
	switch e.Reason {
	case EditableOK:
	case NotEditableTooLarge:
		return st, newErr(CodeResourceExhausted, ReasonTooLarge, nil, "%q is larger than the editable limit", w.rel)
	case NotEditableUnknown:
		return st, newErr(CodePermissionDenied, ReasonReadOnly, nil, "%q cannot be read", w.rel)
	default:
		return st, newErr(CodeFailedPrecondition, ReasonNotText, nil, "%q is not an editable text file", w.rel)
	}
	return st, nil
}

// precheckTarget is UpdateFile's cheap check before writing the temp file:
// the type, link count and size from one fstatat, and the revision only if
// the content hash is cached (the full check runs under the lock anyway).
func (f *FS) precheckTarget(pfd int, w wsPath, want string) (uint32, error) {
	var st unix.Stat_t
	if err := lstatOn(w.r, pfd, w.name(), &st); err != nil {
		return 0, fsErr(err, w.rel)
	}
	if err := checkRegular(&st, w, linkWrite); err != nil {
		return 0, err
	}
	if st.Size > f.cfg.MaxEditableFileSize {
		return 0, newErr(CodeResourceExhausted, ReasonTooLarge, nil, "%q is larger than the editable limit", w.rel)
	}
	if c, ok := f.cache.get(keyOf(&st)); ok {
		if c.revision(&st) != want {
			return 0, errStale(w.rel)
		}
		if c.class != EditableOK {
			return 0, newErr(CodeFailedPrecondition, ReasonNotText, nil, "%q is not an editable text file", w.rel)
		}
	}
	return uint32(st.Mode & 0o777), nil
}

// UpdateFile atomically replaces an editable file's content if its revision
// still equals expectedRevision (required: InvalidArgument without it).
// content must be valid UTF-8 without NUL (InvalidArgument/NOT_TEXT) and at
// most MaxEditableFileSize (ResourceExhausted/TOO_LARGE). The new bytes go to
// a temp file in the same directory (written and fsynced before the mutation
// lock is taken) with the original's permission bits; under the lock the
// parent and the revision are checked again (Aborted/REVISION_MISMATCH),
// then the rename; the directory fsync follows after the lock is released
// (so commits do not queue behind it) and before success is returned. Any
// failure before the rename leaves the original intact and removes the
// temp file.
func (f *FS) UpdateFile(ctx context.Context, ws Workspace, path string, content []byte, expectedRevision string) (Entry, error) {
	if expectedRevision == "" {
		return Entry{}, errRevisionRequired()
	}
	w, err := f.resolve(ws, path)
	if err != nil {
		return Entry{}, err
	}
	if w.isRoot() {
		return Entry{}, f.notAFile(w)
	}
	if int64(len(content)) > f.cfg.MaxEditableFileSize {
		return Entry{}, errTooLarge(path, f.cfg.MaxEditableFileSize)
	}
	c := contentOf(content)
	if c.class != EditableOK {
		return Entry{}, newErr(CodeInvalidArgument, ReasonNotText, nil, "content must be UTF-8 text without NUL bytes")
	}
	pfd, err := f.openParentDir(w)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(pfd)
	mode, err := f.precheckTarget(pfd, w, expectedRevision)
	if err != nil {
		return Entry{}, err
	}
	pid, err := identityOf(pfd, w.rel)
	if err != nil {
		return Entry{}, err
	}
	t, err := f.writeTemp(ctx, pfd, w.rel, bytes.NewReader(content), -1, mode, nil)
	if err != nil {
		return Entry{}, err
	}
	st, err := f.commitWrite(pfd, pid, w, t, func() (*unix.Stat_t, error) {
		target, err := f.editableTarget(pfd, w, expectedRevision)
		return &target, err
	})
	if err != nil {
		return Entry{}, err
	}
	return fileEntry(w.name(), w.rel, &st, c), nil
}

// commitWrite commits the complete temp file t of UpdateFile or
// WriteStream onto w, in its parent pfd (identity pid), and returns the new
// file's stat. Under the mutation lock (lockedCommit) it re-checks the
// parent, runs check (the target's own re-checks, which return the stat of
// the file being replaced, nil for a create) and renames. The directory
// fsync runs after the unlock (other commits need not queue behind it) and
// is shared with concurrent writes into the same directory (syncDir);
// success is only returned once it is done. On failure t is discarded.
func (f *FS) commitWrite(pfd int, pid fdIdentity, w wsPath, t fdio.TempFile, check func() (*unix.Stat_t, error)) (unix.Stat_t, error) {
	if f.hooks.beforeLock != nil {
		f.hooks.beforeLock()
	}
	st, old, err := f.lockedCommit(pfd, pid, w, t, check)
	if err != nil {
		return st, err
	}
	defer closeRef(old) // frees the replaced file, outside the lock
	err = f.syncDir(pfd, pid)
	unix.Close(t.FD)
	if err != nil {
		return st, fsErr(err, w.rel)
	}
	return st, nil
}

// lockedCommit is commitWrite's part under the mutation lock. It returns
// the reference to a replaced file (commit's old).
func (f *FS) lockedCommit(pfd int, pid fdIdentity, w wsPath, t fdio.TempFile, check func() (*unix.Stat_t, error)) (unix.Stat_t, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.recheckParent(w, pid)
	var target *unix.Stat_t
	if err == nil {
		target, err = check()
	}
	if err != nil {
		t.Discard(pfd)
		return unix.Stat_t{}, -1, err
	}
	st, old, err := f.commit(pfd, w, t, target)
	if err != nil && target == nil && ReasonOf(err) == ReasonAlreadyExists {
		// Created by someone else between the check and the rename.
		err = newErr(CodeAborted, ReasonRevisionMismatch, err, "%q was created concurrently", w.rel)
	}
	return st, old, err
}

// commit renames the temp file t onto w.name() in pfd and returns the new
// file's stat. target is the stat of the file being replaced, as the
// caller's revision check saw it, or nil when the name must not exist
// (RENAME_NOREPLACE). It runs under f.mu. The caller fsyncs pfd after
// unlocking (fsyncDir) and reports success only after that. On failure t
// is discarded and closed; on success the caller closes t.fd.
//
// A replaced file is opened (O_PATH) right before the rename and checked
// on that fd (replaceRef): still the file the caller checked, and one that
// the hard-link policy lets be replaced. On a local file system
// (root.localFS) that reference is returned as old, for the caller to
// close after unlocking: the replaced inode is freed when its last
// reference goes, and freeing (truncating, releasing and, on a file system
// mounted with discard, discarding its blocks) is device I/O that would
// otherwise run under the mutation lock, in front of every other commit.
// Elsewhere old is -1 (network and FUSE file systems may rename a busy
// file to a visible placeholder, NFS's .nfsXXXX).
func (f *FS) commit(pfd int, w wsPath, t fdio.TempFile, target *unix.Stat_t) (st unix.Stat_t, old int, err error) {
	old = -1
	if f.hooks.beforeRename != nil {
		if err := f.hooks.beforeRename(); err != nil {
			t.Discard(pfd)
			return st, -1, fsErr(err, w.rel)
		}
	}
	if target == nil {
		err = unix.Renameat2(pfd, t.Name, pfd, w.name(), unix.RENAME_NOREPLACE)
	} else {
		if old, err = replaceRef(pfd, w, target, linkWrite); err != nil {
			t.Discard(pfd)
			return st, -1, err
		}
		err = unix.Renameat(pfd, t.Name, pfd, w.name())
	}
	if err != nil {
		closeRef(old)
		t.Discard(pfd)
		return st, -1, fsErr(err, w.rel)
	}
	if err := unix.Fstat(t.FD, &st); err != nil {
		closeRef(old)
		unix.Close(t.FD)
		return st, -1, fsErr(err, w.rel)
	}
	return st, old, nil
}

// replaceRef opens w's name in pfd (about to be replaced or unlinked by op)
// with O_PATH|O_NOFOLLOW, which opens nothing for I/O and follows nothing,
// and checks it on that fd: the inode of target (the stat the caller's
// revision check used) and allowed by the hard-link policy. It returns the
// reference for the caller to close after unlocking on a local file system
// (see commit), else -1 (the reference is closed before it returns).
func replaceRef(pfd int, w wsPath, target *unix.Stat_t, op linkOp) (int, error) {
	fd, err := unix.Openat(pfd, w.name(), unix.O_PATH|fdio.Common, 0)
	if err != nil {
		return -1, fsErr(err, w.rel)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fsErr(err, w.rel)
	}
	if st.Dev != target.Dev || st.Ino != target.Ino || st.Mode&unix.S_IFMT != target.Mode&unix.S_IFMT {
		unix.Close(fd)
		return -1, errStale(w.rel) // swapped since the revision check
	}
	if err := checkLinks(&st, w.rel, op); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if !w.r.localFS {
		unix.Close(fd)
		return -1, nil
	}
	return fd, nil
}

// closeRef closes a reference fd from commit (-1: none).
func closeRef(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// streamTarget is the state of WriteStream's target.
// The revision is only computed when needRev (an If-Match to check).
// exists is st != nil; st is the target's stat (for commit).
func (f *FS) streamTarget(pfd int, w wsPath, needRev bool) (st *unix.Stat_t, rev string, mode uint32, err error) {
	st = new(unix.Stat_t)
	if err := lstatOn(w.r, pfd, w.name(), st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, "", 0o644, nil
		}
		return nil, "", 0, fsErr(err, w.rel)
	}
	if err := checkRegular(st, w, linkWrite); err != nil {
		return nil, "", 0, err
	}
	if !needRev {
		return st, "", uint32(st.Mode & 0o777), nil
	}
	e, err := f.entryFromStat(pfd, w, w.name(), st, 0)
	if err != nil {
		return nil, "", 0, err
	}
	return st, e.Revision, uint32(st.Mode & 0o777), nil
}

func checkPrecondition(w wsPath, pre Precondition, exists bool, rev string) error {
	if pre.IfMatch != "" && (!exists || rev != pre.IfMatch) {
		return errStale(w.rel)
	}
	if pre.IfNoneMatch && exists {
		return newErr(CodeAborted, ReasonRevisionMismatch, nil, "%q already exists (If-None-Match)", w.rel)
	}
	return nil
}

// WriteStream streams r into a temp file in the target's directory (outside
// the mutation lock, so a slow upload never stalls others), fsyncs it, keeps
// the original's mode (0644 for a new file), then under the mutation lock
// checks pre (If-Match revision / If-None-Match) against the target and
// renames over it; the directory fsync follows after the unlock, before
// success is returned. Any bytes are accepted up to
// maxSize (ResourceExhausted/TOO_LARGE above it, nothing written); a read
// error from r (an aborted upload) commits nothing. The parent must exist
// (NotFound otherwise). created reports whether the file is new.
//
// maxSize <= 0 means Config.MaxUploadSize. A failed precondition (either
// kind) is Aborted/REVISION_MISMATCH (HTTP 412); it is checked once before
// reading r, so a doomed upload is refused without streaming it, and again
// at commit. The target must be a regular single-link file if it exists.
func (f *FS) WriteStream(ctx context.Context, ws Workspace, path string, r io.Reader, maxSize int64, pre Precondition) (e Entry, created bool, err error) {
	w, err := f.resolve(ws, path)
	if err != nil {
		return Entry{}, false, err
	}
	if w.isRoot() || (w.isGlobal() && len(w.segs) == 1 && w.segs[0] == GlobalSkills) {
		return Entry{}, false, f.rootErr(w, newErr(CodeFailedPrecondition, ReasonNotAFile, nil, "%q is a directory", path))
	}
	if maxSize <= 0 {
		maxSize = f.cfg.MaxUploadSize
	}
	pfd, err := f.openParentDir(w)
	if err != nil {
		return Entry{}, false, err
	}
	defer unix.Close(pfd)
	cur, rev, mode, err := f.streamTarget(pfd, w, pre.IfMatch != "")
	if err != nil {
		return Entry{}, false, err
	}
	if err := checkPrecondition(w, pre, cur != nil, rev); err != nil {
		return Entry{}, false, err
	}
	pid, err := identityOf(pfd, w.rel)
	if err != nil {
		return Entry{}, false, err
	}
	scan := newTextScan()
	t, err := f.writeTemp(ctx, pfd, w.rel, r, maxSize, mode, scan)
	if err != nil {
		return Entry{}, false, err
	}
	exists := false
	st, err := f.commitWrite(pfd, pid, w, t, func() (*unix.Stat_t, error) {
		cur, rev, _, err := f.streamTarget(pfd, w, pre.IfMatch != "")
		exists = cur != nil
		if err == nil {
			err = checkPrecondition(w, pre, exists, rev)
		}
		return cur, err
	})
	if err != nil {
		return Entry{}, false, err
	}
	// The revision binds what was streamed with the committed inode's stat:
	// if anything rewrites the file after the rename, its stat moves on and
	// the next read reports a different revision.
	switch {
	case st.Nlink > 1: // linked by another process since the rename
		e = statOnlyEntry(w.name(), w.rel, &st, NotEditableMultipleLinks)
	case f.hashedByContent(&st):
		e = fileEntry(w.name(), w.rel, &st, scan.result())
	default:
		e = statOnlyEntry(w.name(), w.rel, &st, NotEditableTooLarge)
	}
	return e, !exists, nil
}
