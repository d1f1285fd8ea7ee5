package davfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// ReadFile returns a regular file's metadata, and its content when editable
// (single link, at most MaxEditableFileSize, valid UTF-8 without NUL).
// Otherwise Content is nil and Entry.Reason says why; a file with more than
// one hard link is refused (PermissionDenied/MULTIPLE_LINKS) since a hard
// link could bring a secret from outside the workspace into it.
func (f *FS) ReadFile(ctx context.Context, ws Workspace, path string) (File, error) {
	fd, w, st, err := f.openRead(ws, path)
	if err != nil {
		return File{}, err
	}
	defer unix.Close(fd)
	if st.Size > f.cfg.MaxEditableFileSize {
		return File{Entry: statOnlyEntry(w.name(), w.rel, &st, NotEditableTooLarge)}, nil
	}
	c, data, err := f.fileContent(fd, &st, true)
	if err != nil {
		return File{}, contentErr(err, w)
	}
	e := fileEntry(w.name(), w.rel, &st, c)
	if !e.Editable {
		data = nil
	}
	return File{Entry: e, Content: data}, nil
}

// notAFile is the error for reading a workspace root as a file: the root's
// own problem (missing project, symlink) first.
func (f *FS) notAFile(w wsPath) error {
	if err := f.wsErr(w); err != nil {
		return err
	}
	if _, err := f.stat(w); err != nil {
		return err
	}
	return newErr(CodeFailedPrecondition, ReasonNotAFile, nil, "the workspace root is a directory")
}

// openFile opens the regular, single-link file w for reading. It checks the
// type with fstatat before opening (a FIFO or device is never opened) and
// again with fstat after. It returns the file fd and its stat; the caller
// closes the fd.
func (f *FS) openFile(w wsPath) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	pfd, err := f.openParent(w, fdio.DirPath)
	if err != nil {
		return -1, st, err
	}
	defer unix.Close(pfd)
	if err := lstatOn(w.r, pfd, w.name(), &st); err != nil {
		return -1, st, fsErr(err, w.rel)
	}
	if err := checkRegular(&st, w, linkRead); err != nil {
		return -1, st, err
	}
	fd, err := f.openName(w.r, pfd, w.name(), fdio.File)
	if err != nil {
		return -1, st, fsErr(classifyAt(pfd, w.name(), err), w.rel)
	}
	err = fstatOn(w.r, fd, &st)
	if err == nil {
		err = checkRegular(&st, w, linkRead)
	}
	if err != nil {
		unix.Close(fd)
		return -1, st, fsErr(err, w.rel) // a checkRegular *Error as it is
	}
	return fd, st, nil
}

// checkRegular refuses anything but a regular file on w's root device
// that op may be done to under the hard-link policy (links.go).
func checkRegular(st *unix.Stat_t, w wsPath, op linkOp) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return newErr(CodeFailedPrecondition, ReasonNotAFile, nil, "%q is a directory", w.rel)
	case unix.S_IFLNK:
		return errSymlink(w.rel)
	default:
		return errNotRegular(w.rel)
	}
	if err := checkLinks(st, w.rel, op); err != nil {
		return err
	}
	if st.Dev != w.r.dev {
		return newErr(CodePermissionDenied, ReasonSymlink, nil, "%q is on another file system", w.rel)
	}
	return nil
}

// openFileFast is openFile's fast path with openat2 (3 syscalls instead of
// 5): a statx of the relative path from the namespace root (a pre-check
// only: a FIFO or device is never opened unless swapped in between, as in
// openFile), then ONE openat2 of the whole path with RESOLVE_BENEATH|
// RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV (confinement:
// no symlink anywhere, no mount crossing), then a statx of the fd: the same
// inode as pre-checked, regular, single link, on the root's mount (mount
// ID). ok is false when openat2 is not in use or anything is not exactly
// that; the caller then runs openFile, which reports the precise error (so
// the pre-check, which may pass through a symlinked directory, never tells
// a client anything).
func (f *FS) openFileFast(w wsPath) (int, unix.Stat_t, bool) {
	var st unix.Stat_t
	if !f.useOpenat2 || len(w.segs) == 0 {
		return -1, st, false
	}
	rel := w.fullRel()
	var pre unix.Stat_t
	if _, err := statxInto(w.r.fd, rel, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, &pre); err != nil ||
		!fdio.IsType(&pre, unix.S_IFREG) || pre.Nlink != 1 || pre.Dev != w.r.dev {
		return -1, st, false
	}
	fd, err := openat2Retry(w.r.fd, rel, fdio.File)
	if err != nil {
		return -1, st, false
	}
	if fstatOn(w.r, fd, &st) != nil || st.Ino != pre.Ino || st.Dev != pre.Dev || checkRegular(&st, w, linkRead) != nil {
		unix.Close(fd)
		return -1, st, false
	}
	return fd, st, true
}

// OpenRead opens a regular, single-link file for streaming (no size limit,
// Seek and ReadAt work; memory stays constant). The caller closes it. This is
// what WebDAV GET and Range reads use. The returned file's Name() is the
// workspace-relative path, never a host path.
func (f *FS) OpenRead(ctx context.Context, ws Workspace, path string) (*os.File, Entry, error) {
	fd, w, st, err := f.openRead(ws, path)
	if err != nil {
		return nil, Entry{}, err
	}
	return f.osFile(fd, w, &st)
}

// Reader is the content of a file opened by OpenReader.
type Reader interface {
	io.ReadSeeker
	io.ReaderAt
	io.Closer
}

// smallReadMax: OpenReader reads files up to this size whole.
const smallReadMax = 64 << 10

// OpenReader is OpenRead for servers. A file of up to smallReadMax bytes
// whose revision covers its content is read whole while open (one pread;
// the descriptor is closed before OpenReader returns) and served from
// memory, so the bytes are exactly those the returned revision describes,
// with no further system call; a larger file is an *os.File, so
// http.ServeContent can use sendfile. The caller closes the Reader.
func (f *FS) OpenReader(ctx context.Context, ws Workspace, path string) (Reader, Entry, error) {
	fd, w, st, err := f.openRead(ws, path)
	if err != nil {
		return nil, Entry{}, err
	}
	if st.Size > smallReadMax || !f.hashedByContent(&st) {
		return f.osFile(fd, w, &st)
	}
	c, data, err := f.fileContentInto(fd, &st, true, make([]byte, 0, st.Size+1))
	unix.Close(fd)
	if err != nil {
		return nil, Entry{}, contentErr(err, w)
	}
	m := &memReader{data: data} // one allocation for the reader and its interface
	m.Reset(data)
	return m, fileEntry(w.name(), w.rel, &st, c), nil
}

// memReader is a small file's content (OpenReader); Close has nothing to
// release.
type memReader struct {
	bytes.Reader
	data []byte
}

func (*memReader) Close() error { return nil }

// openRead opens the regular, single-link file path, with its fstat.
func (f *FS) openRead(ws Workspace, path string) (int, wsPath, unix.Stat_t, error) {
	var st unix.Stat_t
	w, err := f.resolve(ws, path)
	if err != nil {
		return -1, w, st, err
	}
	if w.isRoot() {
		return -1, w, st, f.notAFile(w)
	}
	fd, st, ok := f.openFileFast(w)
	if !ok {
		fd, st, err = f.openFile(w)
	}
	return fd, w, st, err
}

// osFile describes the file open as fd (from openRead) and turns fd into an
// *os.File; on error it closes fd.
func (f *FS) osFile(fd int, w wsPath, st *unix.Stat_t) (*os.File, Entry, error) {
	var e Entry
	if f.hashedByContent(st) {
		c, _, err := f.fileContent(fd, st, false)
		if err != nil {
			unix.Close(fd)
			return nil, Entry{}, contentErr(err, w)
		}
		e = fileEntry(w.name(), w.rel, st, c)
	} else {
		e = statOnlyEntry(w.name(), w.rel, st, NotEditableTooLarge)
	}
	// Clear O_NONBLOCK (the only status flag set at open) in one fcntl.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
		unix.Close(fd)
		return nil, Entry{}, fsErr(err, w.rel)
	}
	return os.NewFile(uintptr(fd), w.rel), e, nil
}

// contentErr is the error of a failed content read of w.
func contentErr(err error, w wsPath) error {
	if errors.Is(err, errBusy) {
		return newErr(CodeAborted, ReasonRevisionMismatch, err, "%q kept changing while being read", w.rel)
	}
	return fsErr(err, w.rel)
}
