package davfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

func modTime(st *unix.Stat_t) time.Time { return time.Unix(0, st.Mtim.Nano()) }

func isType(st *unix.Stat_t, t uint32) bool { return st.Mode&unix.S_IFMT == t }

func errNotRegular(rel string) *Error {
	return newErr(CodeFailedPrecondition, ReasonNotRegular, nil, "%q is not a regular file or directory", rel)
}

// statEntry builds the Entry of name in the directory dirfd (w is the
// entry's own path). A symlink is refused (SYMLINK), a FIFO, socket or
// device too (NOT_REGULAR): such names never appear in listings either.
func (f *FS) statEntry(dirfd int, w wsPath, name string) (Entry, error) {
	var st unix.Stat_t
	if err := lstatOn(w.r, dirfd, name, &st); err != nil {
		return Entry{}, fsErr(err, w.rel)
	}
	return f.entryFromStat(dirfd, w, name, &st, 0)
}

// quickEntry builds the Entry of a directory or regular file from its
// stat alone when no read is needed: a directory on r's device, a file
// with several links or over the editable size, or one whose content hash
// is cached. ok is false for anything else (entryFromStat then decides).
func (f *FS) quickEntry(r root, name, rel string, st *unix.Stat_t) (e Entry, ok bool) {
	e = Entry{Name: name, Path: rel}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if st.Dev != r.dev {
			return Entry{}, false
		}
		e.Type, e.ModTime, e.Revision = TypeDirectory, modTime(st), dirRevision(st)
		return e, true
	case unix.S_IFREG:
	default:
		return Entry{}, false
	}
	e.Type = TypeFile
	switch {
	case st.Nlink > 1:
		e.Reason, e.Revision = NotEditableMultipleLinks, statRevision(st)
	case st.Size > f.cfg.MaxEditableFileSize:
		e.Reason, e.Revision = NotEditableTooLarge, statRevision(st)
	default:
		c, hit := f.cache.get(keyOf(st))
		if !hit {
			return Entry{}, false
		}
		e.Revision, e.Reason, e.Editable = contentRevision(c.sum, st), c.class, c.class == EditableOK
	}
	e.Size, e.ModTime = st.Size, modTime(st)
	return e, true
}

func (f *FS) entryFromStat(dirfd int, w wsPath, name string, st *unix.Stat_t, attempt int) (Entry, error) {
	if e, ok := f.quickEntry(w.r, name, w.rel, st); ok {
		return e, nil
	}
	// quickEntry declined: a directory on another device, something that
	// is neither a directory nor a regular file, or a regular file with one
	// link, within the editable size, whose content hash is not cached yet.
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return Entry{}, newErr(CodePermissionDenied, ReasonSymlink, nil, "%q is a mount point", w.rel)
	case unix.S_IFLNK:
		return Entry{}, errSymlink(w.rel)
	case unix.S_IFREG:
	default:
		return Entry{}, errNotRegular(w.rel)
	}
	e := Entry{Name: name, Path: w.rel, Type: TypeFile}
	// metadataOnly is the Entry of a file whose content cannot be read.
	metadataOnly := func() Entry {
		e.Reason, e.Revision = NotEditableUnknown, statRevision(st)
		e.Size, e.ModTime = st.Size, modTime(st)
		return e
	}
	c, ok := f.cache.get(keyOf(st))
	if !ok {
		fd, err := f.openName(w.r, dirfd, name, oFile)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
				return Entry{}, fsErr(classifyAt(dirfd, name, err), w.rel)
			}
			return metadataOnly(), nil // unreadable (permissions)
		}
		var now unix.Stat_t
		err = fstatOn(w.r, fd, &now)
		if err == nil && (now.Ino != st.Ino || now.Dev != st.Dev || !isType(&now, unix.S_IFREG) || now.Nlink != 1) {
			// Replaced between fstatat and open: start again from the new state.
			unix.Close(fd)
			if attempt >= 3 {
				return Entry{}, newErr(CodeAborted, ReasonRevisionMismatch, nil, "%q keeps changing", w.rel)
			}
			return f.entryFromStat(dirfd, w, name, &now, attempt+1)
		}
		if err == nil {
			*st = now
			c, _, err = f.fileContent(fd, st, false)
		}
		unix.Close(fd)
		if err == unix.EXDEV {
			return Entry{}, fsErr(err, w.rel) // a file bind mount
		}
		if err != nil {
			return metadataOnly(), nil
		}
	}
	e.Revision, e.Reason, e.Editable = contentRevision(c.sum, st), c.class, c.class == EditableOK
	e.Size, e.ModTime = st.Size, modTime(st)
	return e, nil
}

// skip reports whether a listing hides an entry that failed with err
// (it vanished, is a symlink, a special file or a mount point).
func skip(err error) bool {
	switch ReasonOf(err) {
	case ReasonNotFound, ReasonSymlink, ReasonNotRegular:
		return true
	}
	return false
}

// Stat returns the Entry of one path (the workspace root for ""). The
// Global root is virtual: a directory whose revision covers its two
// children. A symlink is refused (PermissionDenied/SYMLINK); FIFOs,
// sockets and devices are FailedPrecondition/NOT_REGULAR.
func (f *FS) Stat(ctx context.Context, ws Workspace, path string) (Entry, error) {
	if e, ok := f.statQuick(ws, path); ok {
		return e, nil
	}
	w, err := f.resolve(ws, path)
	if err != nil {
		return Entry{}, err
	}
	return f.stat(w)
}

// statQuick is Stat of an entry below a PROJECT workspace root whose
// Entry needs no file read (see quickEntry), with the same validation as
// resolve and no heap allocation besides the revision string. The entry
// itself is opened with O_PATH|O_NOFOLLOW by openat2 with the resolve
// flags (no symlink followed anywhere, a trailing one yields an fd of the
// link, which quickEntry refuses; no mount crossed, the last segment
// included) and fstat'ed: measured slightly cheaper than opening the
// parent and statx'ing the name. ok is false for anything else, errors
// included: Stat then takes the full path, which also reports errors
// exactly.
func (f *FS) statQuick(ws Workspace, p string) (Entry, bool) {
	if !f.useOpenat2 || ws.Scope != ScopeProject || p == "" || f.alive() != nil || f.checkProjectRef(ws.Project) != nil {
		return Entry{}, false
	}
	var buf [8]string
	segs, err := f.splitPathBuf(p, buf[:])
	if err != nil || len(segs) == 0 {
		return Entry{}, false
	}
	var c cpath
	ok := c.add(ws.Project)
	for _, s := range segs {
		ok = ok && c.add(s)
	}
	if !ok {
		return Entry{}, false
	}
	fd, err := openat2C(f.projects.fd, &c, oAny)
	if err != nil {
		return Entry{}, false
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	closePath(fd)
	if err != nil || !f.projects.contains(&st, 0) {
		return Entry{}, false
	}
	return f.quickEntry(f.projects, segs[len(segs)-1], p, &st)
}

func (f *FS) stat(w wsPath) (Entry, error) {
	if w.isGlobal() && w.isRoot() {
		e, _, err := f.globalRoot()
		return e, err
	}
	if w.isRoot() {
		fd, err := f.openRootPath(w)
		if err != nil {
			return Entry{}, err
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		closePath(fd)
		if err != nil {
			return Entry{}, fsErr(err, w.rel)
		}
		if !isType(&st, unix.S_IFDIR) {
			return Entry{}, newErr(CodeNotFound, ReasonProjectNotFound, nil, "project %q not found", w.ws.Project)
		}
		return Entry{Name: w.name(), Type: TypeDirectory, ModTime: modTime(&st), Revision: dirRevision(&st)}, nil
	}
	var e Entry
	var err error
	if len(w.base) == 0 && len(w.segs) == 1 {
		// An entry directly in a held root (Global): statx on the root fd
		// itself, no parent to open. A PROJECT workspace's root is the
		// project directory, resolved from the projects root on every call.
		e, err = f.statEntry(w.r.fd, w, w.name())
	} else {
		pfd, perr := f.openParentPath(w)
		if perr != nil {
			return Entry{}, perr
		}
		e, err = f.statEntry(pfd, w, w.name())
		closePath(pfd)
	}
	if err == nil && w.isGlobal() && len(w.segs) == 1 && (e.Type == TypeDirectory) != (w.segs[0] == globalSkills) {
		// Global's two names only count with their proper types.
		return Entry{}, newErr(CodeFailedPrecondition, ReasonNotRegular, nil, "%q has an unexpected type", w.rel)
	}
	return e, err
}

// openParentPath is openParent(w, oDirPath) without building the segment
// slice and the joined path on the heap. On any error it defers to
// openParent, which classifies the error (and may win a race).
func (f *FS) openParentPath(w wsPath) (int, error) {
	if f.useOpenat2 {
		var c cpath
		ok := true
		for _, s := range w.base {
			ok = ok && c.add(s)
		}
		for _, s := range w.segs[:len(w.segs)-1] {
			ok = ok && c.add(s)
		}
		if ok && c.n > 0 {
			if fd, err := openat2C(w.r.fd, &c, oDirPath); err == nil {
				return fd, nil
			}
		}
	}
	return f.openParent(w, oDirPath)
}

// openRootPath is open(w, oDirPath) for a workspace root, the project
// directory opened from the projects root without heap copies of its name.
func (f *FS) openRootPath(w wsPath) (int, error) {
	if f.useOpenat2 && len(w.base) == 1 {
		var c cpath
		if c.set(w.base[0], "") {
			if fd, err := openat2C(w.r.fd, &c, oDirPath); err == nil {
				return fd, nil
			}
		}
	}
	return f.open(w, oDirPath)
}

// globalRoot returns the virtual Global root and its visible children.
func (f *FS) globalRoot() (Entry, []Entry, error) {
	var kids []Entry
	var st unix.Stat_t
	root := Entry{Type: TypeDirectory}
	h := xxhash.New()
	var b [8]byte
	if err := lstatOn(f.codex, f.codex.fd, globalSkills, &st); err == nil && isType(&st, unix.S_IFDIR) {
		kids = append(kids, Entry{Name: globalSkills, Path: globalSkills, Type: TypeDirectory, ModTime: modTime(&st), Revision: dirRevision(&st)})
		binary.LittleEndian.PutUint64(b[:], statSum(&st))
		h.Write(b[:])
		root.ModTime = modTime(&st)
	}
	h.Write([]byte{0})
	w := wsPath{ws: Workspace{Scope: ScopeGlobal}, rel: globalAgents, segs: []string{globalAgents}, r: f.codex}
	e, err := f.statEntry(f.codex.fd, w, globalAgents)
	switch {
	case err == nil && e.Type == TypeFile:
		kids = append(kids, e)
		h.WriteString(e.Revision)
		if e.ModTime.After(root.ModTime) {
			root.ModTime = e.ModTime
		}
	case err != nil && !skip(err):
		return Entry{}, nil, err
	}
	root.Revision = string(hex64([]byte{'g'}, h.Sum64()))
	return root, kids, nil
}

// ReadFile returns a regular file's metadata, and its content when editable
// (single link, at most MaxEditableFileSize, valid UTF-8 without NUL).
// Otherwise Content is nil and Entry.Reason says why; a file with more than
// one hard link is refused (PermissionDenied/MULTIPLE_LINKS) since a hard
// link could bring a secret from outside the workspace into it.
func (f *FS) ReadFile(ctx context.Context, ws Workspace, path string) (File, error) {
	w, err := f.resolve(ws, path)
	if err != nil {
		return File{}, err
	}
	if w.isRoot() {
		return File{}, f.notAFile(w)
	}
	fd, st, pfd, err := f.openFile(w)
	if err != nil {
		return File{}, err
	}
	unix.Close(pfd)
	defer unix.Close(fd)
	e := Entry{Name: w.name(), Path: w.rel, Type: TypeFile}
	if st.Size > f.cfg.MaxEditableFileSize {
		e.Size, e.ModTime, e.Reason, e.Revision = st.Size, modTime(&st), NotEditableTooLarge, statRevision(&st)
		return File{Entry: e}, nil
	}
	c, data, err := f.fileContent(fd, &st, true)
	if err != nil {
		return File{}, contentErr(err, w)
	}
	e.Size, e.ModTime = st.Size, modTime(&st)
	e.Revision, e.Reason, e.Editable = contentRevision(c.sum, &st), c.class, c.class == EditableOK
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
// again with fstat after. It returns the file fd, its stat and the parent
// directory fd (O_PATH); the caller closes both.
func (f *FS) openFile(w wsPath) (int, unix.Stat_t, int, error) {
	var st unix.Stat_t
	pfd, err := f.openParent(w, oDirPath)
	if err != nil {
		return -1, st, -1, err
	}
	fd, err := f.openFileAt(pfd, w)
	if err != nil {
		unix.Close(pfd)
		return -1, st, -1, err
	}
	if err := fstatOn(w.r, fd, &st); err != nil {
		unix.Close(fd)
		unix.Close(pfd)
		return -1, st, -1, fsErr(err, w.rel)
	}
	if err := checkRegular(&st, w); err != nil {
		unix.Close(fd)
		unix.Close(pfd)
		return -1, st, -1, err
	}
	return fd, st, pfd, nil
}

// openFileAt opens w.name() in pfd for reading once fstatat says it is a
// regular single-link file.
func (f *FS) openFileAt(pfd int, w wsPath) (int, error) {
	var st unix.Stat_t
	if err := lstatOn(w.r, pfd, w.name(), &st); err != nil {
		return -1, fsErr(err, w.rel)
	}
	if err := checkRegular(&st, w); err != nil {
		return -1, err
	}
	fd, err := f.openName(w.r, pfd, w.name(), oFile)
	if err != nil {
		return -1, fsErr(classifyAt(pfd, w.name(), err), w.rel)
	}
	return fd, nil
}

func checkRegular(st *unix.Stat_t, w wsPath) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return newErr(CodeFailedPrecondition, ReasonNotAFile, nil, "%q is a directory", w.rel)
	case unix.S_IFLNK:
		return errSymlink(w.rel)
	default:
		return errNotRegular(w.rel)
	}
	if st.Nlink > 1 {
		return newErr(CodePermissionDenied, ReasonMultipleLinks, nil, "%q has more than one hard link", w.rel)
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
		!isType(&pre, unix.S_IFREG) || pre.Nlink != 1 || pre.Dev != w.r.dev {
		return -1, st, false
	}
	fd, err := openat2Retry(w.r.fd, rel, oFile)
	if err != nil {
		return -1, st, false
	}
	if fstatOn(w.r, fd, &st) != nil || st.Ino != pre.Ino || st.Dev != pre.Dev || checkRegular(&st, w) != nil {
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
	return f.OpenReaderBuf(ctx, ws, path, nil)
}

// OpenReaderBuf is OpenReader reading a small file into buf's array when
// it holds the file and one byte more (else into a new one). buf belongs
// to the Reader until the caller is done with it.
func (f *FS) OpenReaderBuf(ctx context.Context, ws Workspace, path string, buf []byte) (Reader, Entry, error) {
	fd, w, st, err := f.openRead(ws, path)
	if err != nil {
		return nil, Entry{}, err
	}
	if st.Size > smallReadMax || !f.hashedByContent(&st) {
		return f.osFile(fd, w, &st)
	}
	if int64(cap(buf)) < st.Size+1 {
		buf = make([]byte, 0, st.Size+1)
	}
	c, data, err := f.fileContentInto(fd, &st, true, buf[:0])
	unix.Close(fd)
	if err != nil {
		return nil, Entry{}, contentErr(err, w)
	}
	e := Entry{Name: w.name(), Path: w.rel, Type: TypeFile, Size: st.Size, ModTime: modTime(&st),
		Revision: contentRevision(c.sum, &st), Reason: c.class, Editable: c.class == EditableOK}
	return memReader{bytes.NewReader(data), data}, e, nil
}

// memReader is a small file's content (OpenReader); Close has nothing to
// release.
type memReader struct {
	*bytes.Reader
	data []byte
}

func (memReader) Close() error { return nil }

// ReaderBytes returns the whole content of a Reader that OpenReader served
// from memory (ok false for a file Reader). The caller must not modify it.
func ReaderBytes(r Reader) (data []byte, ok bool) {
	if m, ok := r.(memReader); ok {
		return m.data, true
	}
	return nil, false
}

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
		var pfd int
		fd, st, pfd, err = f.openFile(w)
		if err != nil {
			return -1, w, st, err
		}
		unix.Close(pfd)
	}
	return fd, w, st, nil
}

// osFile describes the file open as fd (from openRead) and turns fd into an
// *os.File; on error it closes fd.
func (f *FS) osFile(fd int, w wsPath, st *unix.Stat_t) (*os.File, Entry, error) {
	e := Entry{Name: w.name(), Path: w.rel, Type: TypeFile}
	if f.hashedByContent(st) {
		c, _, err := f.fileContent(fd, st, false)
		if err != nil {
			unix.Close(fd)
			return nil, Entry{}, contentErr(err, w)
		}
		e.Revision, e.Reason, e.Editable = contentRevision(c.sum, st), c.class, c.class == EditableOK
	} else {
		e.Reason, e.Revision = NotEditableTooLarge, statRevision(st)
	}
	e.Size, e.ModTime = st.Size, modTime(st)
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

// listed is one visible name of a directory, in listing order.
type listed struct {
	name string
	dir  bool
}

func listedLess(a, b listed) int {
	if a.dir != b.dir {
		if a.dir {
			return -1
		}
		return 1
	}
	return strings.Compare(a.name, b.name)
}

// staleTempAge: a temp file untouched this long belongs to no write in
// flight (an upload's temp file is written continuously), so a listing
// that meets it removes it.
const staleTempAge = time.Hour

// listDir opens the directory w and returns its fd (O_RDONLY), stat and
// visible names in order: directories first, then byte-wise by name.
// Types come from d_type; only DT_UNKNOWN names are stat'ed.
//
// ListEntries passes sorted=false and orders only its page (pageAfter).
func (f *FS) listDir(ctx context.Context, w wsPath, sorted bool) (int, unix.Stat_t, []listed, error) {
	fd, st, err := f.openDir(w)
	if err != nil {
		return -1, st, nil, err
	}
	ents, err := readDirents(fd, w.r.localFS)
	if err != nil {
		unix.Close(fd)
		return -1, st, nil, fsErr(err, w.rel)
	}
	items := make([]listed, 0, len(ents))
	for i, d := range ents {
		if i&1023 == 1023 && ctx.Err() != nil {
			unix.Close(fd)
			return -1, st, nil, ctxErr(ctx)
		}
		if it, ok := f.keepDirent(fd, d); ok {
			items = append(items, it)
		}
	}
	if sorted {
		sortListed(items)
	}
	return fd, st, items, nil
}

// openDir opens the directory w for reading its names (O_RDONLY) and
// fstats it.
func (f *FS) openDir(w wsPath) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if w.isGlobal() && len(w.segs) == 1 && w.segs[0] == globalAgents {
		// Global's AGENTS.md only counts as a file.
		return -1, st, newErr(CodeFailedPrecondition, ReasonNotADirectory, nil, "%q is not a directory", w.rel)
	}
	fd, err := f.open(w, oDirRead)
	if err != nil {
		if ReasonOf(err) == ReasonNotFound {
			if _, serr := f.stat(w); serr == nil || ReasonOf(serr) == ReasonNotRegular {
				return -1, st, newErr(CodeFailedPrecondition, ReasonNotADirectory, nil, "%q is not a directory", w.rel)
			}
		}
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, fsErr(err, w.rel)
	}
	return fd, st, nil
}

// keepDirent turns a name read from the directory fd into a listed item,
// or says to leave it out: hidden (denylist, temp files, names a request
// could not use) or neither a directory nor a regular file. Stale davfs
// temp files met on the way are removed. Types come from d_type; only
// DT_UNKNOWN names are stat'ed.
func (f *FS) keepDirent(fd int, d dirent) (listed, bool) {
	if !f.visibleName(d.name) {
		if strings.HasPrefix(d.name, tempPrefix) {
			f.sweepTemp(fd, d.name, staleTempAge)
		}
		return listed{}, false
	}
	typ := d.typ
	if typ == unix.DT_UNKNOWN {
		var cst unix.Stat_t
		if fstatat(fd, d.name, &cst) != nil {
			return listed{}, false
		}
		switch cst.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			typ = unix.DT_DIR
		case unix.S_IFREG:
			typ = unix.DT_REG
		}
	}
	switch typ {
	case unix.DT_DIR:
		return listed{name: d.name, dir: true}, true
	case unix.DT_REG:
		return listed{name: d.name}, true
	}
	return listed{}, false
}

// sweepTemp removes name from dirfd if it is one of davfs's temp files
// older than age. It never follows a symlink (unlinkat removes the link).
func (f *FS) sweepTemp(dirfd int, name string, age time.Duration) {
	var st unix.Stat_t
	if fstatat(dirfd, name, &st) != nil || !isType(&st, unix.S_IFREG) {
		return
	}
	if time.Since(modTime(&st)) < age {
		return
	}
	if err := unix.Unlinkat(dirfd, name, 0); err == nil {
		f.log.Debug("removed stale temp file")
	}
}

func ctxErr(ctx context.Context) error {
	return newErr(CodeUnavailable, ReasonInternal, ctx.Err(), "request cancelled or timed out")
}

// ListEntries lists one page of a directory: directories first, then by
// name (byte-wise). pageSize 0 means Config.DefaultPageSize; above
// Config.MaxPageSize is ResourceExhausted/PAGE_SIZE_TOO_LARGE. The cursor is
// valid only for the same workspace, path and directory revision; otherwise
// Aborted/CURSOR_STALE. Symlinks, denylisted names, special files and
// davfs's temp files are never listed; only the page's entries are stat'ed.
func (f *FS) ListEntries(ctx context.Context, ws Workspace, dir string, pageSize int, cursor string) (Page, error) {
	n, err := f.pageSize(pageSize)
	if err != nil {
		return Page{}, err
	}
	w, err := f.resolve(ws, dir)
	if err != nil {
		return Page{}, err
	}
	var cur *cursorData
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil {
			return Page{}, err
		}
		if c.Scope != ws.Scope || c.Proj != ws.Project || c.Dir != dir {
			return Page{}, errCursorStale()
		}
		cur = &c
	}
	if w.isGlobal() && w.isRoot() {
		root, kids, err := f.globalRoot()
		if err != nil {
			return Page{}, err
		}
		items := make([]listed, len(kids))
		for i, k := range kids {
			items[i] = listed{name: k.Name, dir: k.Type == TypeDirectory}
		}
		start, err := startAfter(items, cur, root.Revision)
		if err != nil {
			return Page{}, err
		}
		end := min(start+n, len(kids))
		p := Page{Entries: kids[start:end], DirectoryRevision: root.Revision}
		if end < len(kids) {
			p.NextCursor = f.nextCursor(w, dir, root.Revision, items[end-1])
		}
		return p, nil
	}
	fd, st, items, err := f.listDir(ctx, w, false)
	if err != nil {
		return Page{}, err
	}
	defer unix.Close(fd)
	rev := dirRevision(&st)
	var after *listed
	if cur != nil {
		if cur.Rev != rev {
			return Page{}, errCursorStale()
		}
		after = &listed{name: cur.Name, dir: cur.IsDir}
	}
	page, more := pageAfter(items, after, n)
	entries, err := f.entriesOf(ctx, fd, w, page)
	if err != nil {
		return Page{}, err
	}
	p := Page{Entries: entries, DirectoryRevision: rev}
	if more && len(page) > 0 {
		p.NextCursor = f.nextCursor(w, dir, rev, page[len(page)-1])
	}
	return p, nil
}

func (f *FS) nextCursor(w wsPath, dir, rev string, last listed) string {
	return encodeCursor(cursorData{Scope: w.ws.Scope, Proj: w.ws.Project, Dir: dir, Rev: rev, IsDir: last.dir, Name: last.name})
}

// startAfter returns the index of the first item after the cursor.
func startAfter(items []listed, cur *cursorData, rev string) (int, error) {
	if cur == nil {
		return 0, nil
	}
	if cur.Rev != rev {
		return 0, errCursorStale()
	}
	key := listed{name: cur.Name, dir: cur.IsDir}
	i, found := slices.BinarySearchFunc(items, key, listedLess)
	if found {
		i++
	}
	return i, nil
}

// pageAfter returns, in listing order, the first n items that sort after
// after (nil: from the start), and whether more follow. items is unsorted
// and reordered in place: a filter, a selection of the n smallest
// (quickselect, expected O(len)) and a sort of those n only, so a page of a large
// directory does not sort the whole directory.
func pageAfter(items []listed, after *listed, n int) ([]listed, bool) {
	if after != nil {
		k := 0
		for _, it := range items {
			if listedLess(*after, it) < 0 {
				items[k] = it
				k++
			}
		}
		items = items[:k]
	}
	more := len(items) > n
	if more {
		selectSmallest(items, n)
		items = items[:n]
	}
	slices.SortFunc(items, listedLess)
	return items, more
}

// selectSmallest reorders a so that its n smallest items (listedLess) come
// first, in any order. 0 < n < len(a).
func selectSmallest(a []listed, n int) {
	lo, hi := 0, len(a)-1
	for lo < hi {
		// A random pivot: no name set an agent can craft makes this
		// quadratic in expectation.
		r := lo + rand.IntN(hi-lo+1)
		a[r], a[hi] = a[hi], a[r]
		p := a[hi]
		i := lo
		for j := lo; j < hi; j++ {
			if listedLess(a[j], p) < 0 {
				a[i], a[j] = a[j], a[i]
				i++
			}
		}
		a[i], a[hi] = a[hi], a[i]
		switch {
		case i == n || i == n-1:
			return
		case i < n:
			lo = i + 1
		default:
			hi = i - 1
		}
	}
}

// parallelEntries: a listing with more items than this stats them on
// GOMAXPROCS workers (entriesOf); smaller ones stay on one goroutine.
const (
	parallelEntries = 256
	entriesChunk    = 64
)

// entriesOf stats the items of the open directory dirfd (the listing of w),
// keeping their order. Items that vanished or became a symlink, a special
// file or a mount point are left out; the first other error (in item order)
// fails the listing.
func (f *FS) entriesOf(ctx context.Context, dirfd int, w wsPath, items []listed) ([]Entry, error) {
	workers := runtime.GOMAXPROCS(0)
	if len(items) <= parallelEntries || workers < 2 {
		return f.entriesSeq(ctx, dirfd, w, items)
	}
	return f.entriesPar(ctx, dirfd, w, items, workers)
}

// entriesSeq is entriesOf on the calling goroutine.
func (f *FS) entriesSeq(ctx context.Context, dirfd int, w wsPath, items []listed) ([]Entry, error) {
	return f.statItems(ctx, dirfd, w, strings.Join(w.segs, "/"), items, make([]Entry, 0, len(items)))
}

// statItems appends the Entries of items (names in the open directory
// dirfd, the listing of w; dir is strings.Join(w.segs, "/")) to out,
// leaving out names that vanished or became a symlink, a special file or a
// mount point; the first other error fails it.
func (f *FS) statItems(ctx context.Context, dirfd int, w wsPath, dir string, items []listed, out []Entry) ([]Entry, error) {
	rels := childRels(dir, items, make([]string, 0, len(items)))
	for i, it := range items {
		if i&63 == 63 && ctx.Err() != nil {
			return nil, ctxErr(ctx)
		}
		c := w
		c.rel = rels[i]
		e, err := f.statEntry(dirfd, c, it.name)
		if err != nil {
			if skip(err) {
				continue
			}
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// entriesPar is entriesOf on workers goroutines (the caller is one).
func (f *FS) entriesPar(ctx context.Context, dirfd int, w wsPath, items []listed, workers int) ([]Entry, error) {
	dir := strings.Join(w.segs, "/")
	// Each worker claims chunks of entriesChunk items and writes entry i to
	// out[i]; a hidden item leaves out[i] zero (Name ""; a listed name is
	// never empty). The first failure by item index wins, as in the
	// sequential loop; later chunks stop being claimed once one is known.
	out := make([]Entry, len(items))
	workers = min(workers, (len(items)+entriesChunk-1)/entriesChunk)
	var (
		next   atomic.Int64
		mu     sync.Mutex
		errIdx = len(items)
		first  error
		wg     sync.WaitGroup
	)
	fail := func(i int, err error) {
		mu.Lock()
		if i < errIdx {
			errIdx, first = i, err
		}
		mu.Unlock()
	}
	work := func() {
		defer wg.Done()
		var rels []string
		for {
			lo := int(next.Add(entriesChunk)) - entriesChunk
			if lo >= len(items) {
				return
			}
			mu.Lock()
			stop := errIdx < lo
			mu.Unlock()
			if stop {
				return
			}
			if ctx.Err() != nil {
				fail(lo, ctxErr(ctx))
				return
			}
			hi := min(lo+entriesChunk, len(items))
			rels = childRels(dir, items[lo:hi], rels[:0])
			for i := lo; i < hi; i++ {
				name := items[i].name
				c := w
				c.rel = rels[i-lo]
				e, err := f.statEntry(dirfd, c, name)
				if err != nil {
					if !skip(err) {
						fail(i, err)
						return
					}
					continue
				}
				out[i] = e
			}
		}
	}
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	if first != nil {
		return nil, first
	}
	k := 0
	for i := range out {
		if out[i].Name != "" {
			out[k] = out[i]
			k++
		}
	}
	clear(out[k:])
	return out[:k], nil
}

// childRels appends to dst the paths dir/name of items (childRel's rel),
// cut from one allocation.
func childRels(dir string, items []listed, dst []string) []string {
	if dir == "" {
		for _, it := range items {
			dst = append(dst, it.name)
		}
		return dst
	}
	n := 0
	for _, it := range items {
		n += len(dir) + 1 + len(it.name)
	}
	b := make([]byte, 0, n)
	for _, it := range items {
		start := len(b)
		b = append(b, dir...)
		b = append(b, '/')
		b = append(b, it.name...)
		dst = append(dst, unsafe.String(&b[start], len(b)-start))
	}
	return dst
}

// ReadDir returns every visible entry of a directory (directories first, then
// by name), without paging, for WebDAV PROPFIND. Revisions come from the
// stat-keyed hash cache, so a warm listing re-reads no file.
func (f *FS) ReadDir(ctx context.Context, ws Workspace, dir string) ([]Entry, error) {
	w, err := f.resolve(ws, dir)
	if err != nil {
		return nil, err
	}
	if w.isGlobal() && w.isRoot() {
		_, kids, err := f.globalRoot()
		return kids, err
	}
	fd, _, items, err := f.listDir(ctx, w, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return f.entriesOf(ctx, fd, w, items)
}
