package dav

import (
	"github.com/agentworkspace/files/davfs"

	"context"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"sync"

	"golang.org/x/net/webdav"
)

// Aborter is implemented by the webdav.File that the WebDAV FileSystem's
// OpenFile returns for writing. Abort ends the upload without committing
// anything: the temp file is removed and the target keeps its bytes. A
// caller that copies a request body itself calls Abort(copyErr) before
// Close when the copy fails; Close after Abort commits nothing.
//
// x/net/webdav's own PUT handler needs no help: it copies with io.Copy,
// which uses the file's ReadFrom, and ReadFrom aborts the upload itself when
// reading the body fails.
type Aborter interface {
	Abort(err error)
}

// errUploadAborted is the cause of an Abort(nil).
var errUploadAborted = errors.New("davfs: upload aborted")

// dirFile is an open directory (or virtual directory). Write fails;
// Readdir follows os.File.Readdir's count semantics.
type dirFile struct {
	ctx  context.Context
	d    *davFS
	t    target
	info *davInfo

	mu     sync.Mutex
	loaded bool
	list   []os.FileInfo
	pos    int
}

var _ webdav.File = (*dirFile)(nil)

func (f *dirFile) Close() error { return nil }

func (f *dirFile) Read(p []byte) (int, error) {
	return 0, f.d.wrapErr("read", f.t.name, errIsDirectory())
}

func (f *dirFile) Write(p []byte) (int, error) {
	return 0, f.d.wrapErr("write", f.t.name, errIsDirectory())
}

// Seek only rewinds the directory listing (Seek(0, io.SeekStart)).
func (f *dirFile) Seek(offset int64, whence int) (int64, error) {
	if offset == 0 && whence == io.SeekStart {
		f.mu.Lock()
		f.pos = 0
		f.mu.Unlock()
		return 0, nil
	}
	return 0, f.d.wrapErr("seek", f.t.name, errIsDirectory())
}

func (f *dirFile) Stat() (os.FileInfo, error) { return f.info, nil }

// Readdir returns the directory's visible entries (as ReadDir lists them:
// no symlinks, denylisted names or temp files). count > 0: at most count
// entries, io.EOF at the end; count <= 0: all remaining entries. The slice
// is the caller's: filtering it in place leaves the listing intact.
func (f *dirFile) Readdir(count int) ([]os.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.loaded {
		list, err := f.load()
		if err != nil {
			return nil, err
		}
		f.list, f.loaded = list, true
	}
	n := len(f.list) - f.pos
	if count > 0 {
		if n == 0 {
			return nil, io.EOF
		}
		n = min(count, n)
	}
	rest := slices.Clone(f.list[f.pos : f.pos+n])
	f.pos += n
	return rest, nil
}

func (f *dirFile) load() ([]os.FileInfo, error) {
	const op = "readdir"
	switch f.t.level {
	case levelRoot:
		var out []os.FileInfo
		for _, t := range []target{{name: "/" + dirProjects, level: levelProjects}, {name: "/" + dirGlobal, level: levelGlobalRoot}} {
			fi, err := f.d.stat(f.ctx, op, t)
			if err != nil {
				return nil, err
			}
			out = append(out, fi)
		}
		return out, nil
	case levelProjects, levelGlobalRoot:
		children, err := f.d.children(f.ctx, op, f.t)
		if err != nil {
			return nil, err
		}
		out := make([]os.FileInfo, len(children))
		for i, c := range children {
			out[i] = c
		}
		return out, nil
	case levelWorkspace:
		entries, err := f.d.fs.ReadDir(f.ctx, f.t.ws, f.t.path, f.d.use...)
		if err != nil {
			return nil, f.d.wrapErr(op, f.t.name, err)
		}
		out := make([]os.FileInfo, 0, len(entries))
		if l := f.d.listing; l != nil {
			l.mu.Lock()
			for _, e := range entries {
				l.m[f.t.name+"/"+e.Name] = e
			}
			l.mu.Unlock()
		}
		for _, e := range entries {
			out = append(out, entryInfo(e.Name, e))
		}
		return out, nil
	}
	return nil, f.d.wrapErr(op, f.t.name, errNotFound())
}

// readFile is an open regular file. Unless the request asked for content
// reads (RequestState.ContentReads: opened at once with OpenReader), the
// descriptor is opened (OpenRead) on the first Read, ReadAt or Seek, not by
// OpenFile: x/net/webdav opens every entry of a PROPFIND only to Stat it.
// The content must have the revision that Stat reported; if the file
// changed in between, reading fails (Aborted, REVISION_MISMATCH) rather
// than serve bytes under a stale ETag. The Reader gives Seek, ReadAt and
// constant memory for any size.
type readFile struct {
	ctx     context.Context
	d       *davFS
	t       target
	info    *davInfo
	infoVal davInfo // what info points to when the file was opened at once

	mu     sync.Mutex
	f      davfs.Reader
	err    error
	closed bool
}

var _ webdav.File = (*readFile)(nil)

func (f *readFile) file() (davfs.Reader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, &fs.PathError{Op: "read", Path: f.t.name, Err: fs.ErrClosed}
	}
	if f.f != nil || f.err != nil {
		return f.f, f.err
	}
	if f.info.e.Reason == davfs.NotEditableMultipleLinks {
		f.err = f.d.wrapErr("read", f.t.name, errMultipleLinks(f.t.path))
		return nil, f.err
	}
	osf, e, err := f.d.fs.OpenRead(f.ctx, f.t.ws, f.t.path)
	if err != nil {
		f.err = f.d.wrapErr("read", f.t.name, err)
		return nil, f.err
	}
	if e.Revision != f.info.e.Revision {
		osf.Close()
		f.err = f.d.wrapErr("read", f.t.name, newErr(davfs.CodeAborted, davfs.ReasonRevisionMismatch, "the file changed while it was being opened; retry"))
		return nil, f.err
	}
	f.f = osf
	return osf, nil
}

func (f *readFile) Read(p []byte) (int, error) {
	osf, err := f.file()
	if err != nil {
		return 0, err
	}
	return osf.Read(p)
}

func (f *readFile) ReadAt(p []byte, off int64) (int, error) {
	osf, err := f.file()
	if err != nil {
		return 0, err
	}
	return osf.ReadAt(p, off)
}

func (f *readFile) Seek(offset int64, whence int) (int64, error) {
	osf, err := f.file()
	if err != nil {
		return 0, err
	}
	return osf.Seek(offset, whence)
}

func (f *readFile) Write(p []byte) (int, error) {
	return 0, f.d.readOnlyErr("write", f.t.name, "the file is open read-only")
}

func (f *readFile) Readdir(count int) ([]os.FileInfo, error) {
	return nil, f.d.wrapErr("readdir", f.t.name, newErr(davfs.CodeFailedPrecondition, davfs.ReasonNotADirectory, "not a directory"))
}

func (f *readFile) Stat() (os.FileInfo, error) { return f.info, nil }

func (f *readFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	if f.f != nil {
		return f.f.Close()
	}
	return nil
}

// writeFile streams an upload into WriteStream through a pipe. Nothing is
// committed until Close (or Stat, see below) ends the stream; Abort, a
// failed body read in ReadFrom, or the request context ending first, commit
// nothing.
type writeFile struct {
	ctx  context.Context
	d    *davFS
	t    target
	pw   *io.PipeWriter
	done chan struct{}
	stop func() bool // unregisters the context watch

	// Set by the upload goroutine before done is closed.
	entry davfs.Entry
	err   error

	mu       sync.Mutex
	finished bool  // the pipe is closed: committed or aborted
	abortErr error // why, when aborted
}

var (
	_ webdav.File   = (*writeFile)(nil)
	_ io.ReaderFrom = (*writeFile)(nil)
	_ Aborter       = (*writeFile)(nil)
)

// version, when set, is the per-file version kept of t before this
// upload: a failed or aborted upload drops it again (dropUnusedVersion).
// release ends KeepVersion's hold on it once the upload has finished,
// committed or not, so no checkpoint created while the body streams can
// evict it.
func startUpload(ctx context.Context, d *davFS, t target, pre davfs.Precondition, version string, release func()) *writeFile {
	pr, pw := io.Pipe()
	w := &writeFile{ctx: ctx, d: d, t: t, pw: pw, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer release()
		e, _, err := d.fs.WriteStream(ctx, t.ws, t.path, pr, 0, pre)
		w.entry, w.err = e, err
		if err != nil {
			pr.CloseWithError(err) // unblocks a Write with WriteStream's error
			if version != "" {
				d.dropUnusedVersion(t, version, pre.IfMatch, release)
			}
		} else {
			pr.Close()
		}
	}()
	// A handle that is never closed must not pin a goroutine and a temp
	// file: when the request ends, an unfinished upload is aborted.
	w.stop = context.AfterFunc(ctx, func() { w.Abort(ctx.Err()) })
	return w
}

// Write streams p into the upload. After WriteStream failed (too large, no
// space, ...) it returns that error.
func (w *writeFile) Write(p []byte) (int, error) {
	w.mu.Lock()
	finished := w.finished
	w.mu.Unlock()
	if finished {
		return 0, &fs.PathError{Op: "write", Path: w.t.name, Err: fs.ErrClosed}
	}
	n, err := w.pw.Write(p)
	if err != nil {
		return n, w.wrap("write", err)
	}
	return n, nil
}

// ReadFrom copies r into the upload (io.Copy uses it). If reading r fails
// (an aborted or over-long request body), the upload is aborted and r's
// error returned unchanged, so nothing is committed by a later Close.
func (w *writeFile) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var total int64
	for {
		nr, rerr := r.Read(buf)
		if nr > 0 {
			nw, werr := w.Write(buf[:nr])
			total += int64(nw)
			if werr != nil {
				return total, werr
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			w.Abort(rerr)
			return total, rerr
		}
	}
}

// Abort ends the upload without committing and waits until the temp file
// is gone. It is a no-op once the upload was finished by Close or Stat.
func (w *writeFile) Abort(err error) {
	if err == nil {
		err = errUploadAborted
	}
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return
	}
	w.finished = true
	w.abortErr = err
	w.mu.Unlock()
	w.pw.CloseWithError(err)
	<-w.done
}

// finish ends the stream (commit) unless it already ended, and waits for
// WriteStream's result.
func (w *writeFile) finish(op string) (davfs.Entry, error) {
	w.mu.Lock()
	if !w.finished {
		w.finished = true
		w.pw.Close()
	}
	w.mu.Unlock()
	<-w.done
	w.stop()
	w.mu.Lock()
	abortErr := w.abortErr
	w.mu.Unlock()
	if abortErr != nil {
		return davfs.Entry{}, &fs.PathError{Op: op, Path: w.t.name, Err: abortErr}
	}
	if w.err != nil {
		return davfs.Entry{}, w.wrap(op, w.err)
	}
	return w.entry, nil
}

func (w *writeFile) wrap(op string, err error) error {
	if _, ok := err.(*fs.PathError); ok || errors.As(err, new(*davfs.Error)) {
		return w.d.wrapErr(op, w.t.name, err)
	}
	return &fs.PathError{Op: op, Path: w.t.name, Err: err}
}

// Close commits the upload (atomic rename over the target after the
// precondition is re-checked) and returns the commit's error; after Abort
// it commits nothing and returns the abort cause.
func (w *writeFile) Close() error {
	_, err := w.finish("close")
	return err
}

// Stat finishes the upload like Close and describes the committed file, so
// the ETag x/net/webdav sends after a PUT (it calls Stat between the body
// copy and Close) is the new revision. A failed copy has already aborted
// the upload through ReadFrom, so Stat never commits a partial body.
func (w *writeFile) Stat() (os.FileInfo, error) {
	e, err := w.finish("stat")
	if err != nil {
		return nil, err
	}
	return entryInfo(w.t.base(), e), nil
}

func (w *writeFile) Read(p []byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: w.t.name, Err: errors.New("file is open for writing only")}
}

func (w *writeFile) Seek(offset int64, whence int) (int64, error) {
	return 0, &fs.PathError{Op: "seek", Path: w.t.name, Err: errors.New("uploads are streamed; seek is not supported")}
}

func (w *writeFile) Readdir(count int) ([]os.FileInfo, error) {
	return nil, &fs.PathError{Op: "readdir", Path: w.t.name, Err: errors.New("not a directory")}
}

// Dead properties are not stored (RFC 4918 allows a server to refuse
// them): PROPPATCH answers 403 for each property, with one exception. The
// Windows WebDAV redirector sets its Win32 time and attribute properties
// right after every PUT and MKCOL and treats a refusal as a failed copy, so
// those are answered 200 and dropped (the file's own times are what
// PROPFIND reports). DeadProps is always empty, so nothing set here is ever
// echoed back. The virtual levels refuse everything.

// win32Namespace is the namespace of the Windows redirector's properties.
const win32Namespace = "urn:schemas-microsoft-com:"

func win32Prop(n xml.Name) bool {
	if n.Space != win32Namespace {
		return false
	}
	switch n.Local {
	case "Win32CreationTime", "Win32LastAccessTime", "Win32LastModifiedTime", "Win32FileAttributes":
		return true
	}
	return false
}

// patchDead answers a PROPPATCH of a workspace entry (see above). Patching
// is all or nothing: when anything is refused, the Win32 properties get 424
// Failed Dependency.
func patchDead(patches []webdav.Proppatch, virtual bool) ([]webdav.Propstat, error) {
	ok := webdav.Propstat{Status: http.StatusOK}
	refused := webdav.Propstat{Status: http.StatusForbidden}
	for _, p := range patches {
		for _, prop := range p.Props {
			n := webdav.Property{XMLName: prop.XMLName}
			if !virtual && win32Prop(prop.XMLName) {
				ok.Props = append(ok.Props, n)
			} else {
				refused.Props = append(refused.Props, n)
			}
		}
	}
	if len(refused.Props) == 0 {
		return []webdav.Propstat{ok}, nil
	}
	out := []webdav.Propstat{refused}
	if len(ok.Props) > 0 {
		ok.Status = http.StatusFailedDependency
		out = append(out, ok)
	}
	return out, nil
}

// DeadProps carries, for a PROPFIND that names them, the quota
// properties (quota.go): x/net/webdav asks a file's DeadProps before its
// live properties.
func (f *dirFile) DeadProps() (map[xml.Name]webdav.Property, error) {
	return f.d.st.Quota.props(f.ctx, f.t), nil
}

func (f *dirFile) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) {
	return patchDead(p, f.t.level != levelWorkspace || f.t.isWorkspaceRoot())
}

func (f *readFile) DeadProps() (map[xml.Name]webdav.Property, error) { return nil, nil }

func (f *readFile) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) {
	return patchDead(p, false)
}

var (
	_ webdav.DeadPropsHolder = (*dirFile)(nil)
	_ webdav.DeadPropsHolder = (*readFile)(nil)
)

func errIsDirectory() *davfs.Error {
	return &davfs.Error{Code: davfs.CodeFailedPrecondition, Reason: davfs.ReasonNotAFile, Message: "is a directory"}
}
