// Package archive streams a workspace folder as a .zip (archive/zip) while
// it is read, beside the confined core as davfs/checkpoint is: it reaches
// the volume only through davfs's exported confined API (FS.Resolve,
// FS.OpenTarget, FS.OpenParent, FS.OpenAt, FS.LstatAt, FS.Visible), and
// davfs does not know it.
//
// What goes in: directories and single-link regular files whose names a
// listing shows, at most davfs's maxPathDepth/maxPathLength deep, exactly
// what a checkpoint captures. What stays out, counted in the archive's
// comment: symbolic links (never followed, never stored as link entries:
// a link's target text may be an absolute host path, which is never
// handed out), hard-linked files (another name of the same bytes may be
// outside the tree), FIFOs, sockets and devices, other mounts (EXDEV),
// denylisted names and davfs temp files, and a file that changed type
// between its lstat and its open. In GLOBAL, as everywhere, only skills/
// and AGENTS.md.
//
// Memory is bounded: one directory's names at a time per level (at most
// maxPathDepth levels, one fd each), one copy buffer, the deflate state.
// Nothing is written to disk.
package archive

import (
	"archive/zip"
	"compress/flate"
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// Stats is what an archive held and left out.
type Stats struct {
	Files   int   // regular files stored
	Dirs    int   // directories stored (the top folder included)
	Bytes   int64 // file bytes stored (uncompressed)
	Skipped int   // names left out (see the package comment)
}

// Options tunes Write. The zero value deflates at BestSpeed.
type Options struct {
	// Store writes every file uncompressed (zip's Store method).
	Store bool
}

// copyBuf is the size of the one read buffer of an archive.
const copyBuf = 256 << 10

// Write streams the folder t (a project root, a folder in it, or the
// GLOBAL root) into w as a zip whose entries are under the folder's own
// name ("src/a.go"; the project's name for its root, "global" for GLOBAL).
// It checks t first (a missing folder is NotFound, a file NotADirectory),
// so an error before anything is written leaves w untouched. An error
// after that leaves a truncated archive: the caller must not hand it out
// as complete.
func Write(ctx context.Context, fs *davfs.FS, t davfs.Target, w io.Writer, opts Options) (Stats, error) {
	a := &archiver{ctx: ctx, fs: fs, t: t, opts: opts}
	top, err := a.openTop()
	if err != nil {
		return Stats{}, err
	}
	defer unix.Close(top.fd)
	a.zw = zip.NewWriter(w)
	a.zw.RegisterCompressor(zip.Deflate, pooledDeflate)
	a.buf = make([]byte, copyBuf)
	if err := a.walk(top); err != nil {
		return a.st, err
	}
	if a.st.Skipped > 0 {
		_ = a.zw.SetComment(fmt.Sprintf("%d names left out (links, special files, denied names)", a.st.Skipped))
	}
	return a.st, a.zw.Close()
}

// TopName is the name of t's folder in its archive and of the download.
func TopName(t davfs.Target) string {
	switch {
	case t.IsRoot() && t.IsGlobal():
		return "global"
	case t.IsRoot():
		return t.Workspace().Project
	}
	return t.Name()
}

// deflaters are reused flate writers: each holds about 1 MiB of state,
// which allocating per file of a 10,000-file tree cost more than the
// compression itself.
var deflaters sync.Pool

// pooledDeflate is zip's Deflate compressor at BestSpeed over deflaters.
func pooledDeflate(out io.Writer) (io.WriteCloser, error) {
	if fw, ok := deflaters.Get().(*flate.Writer); ok {
		fw.Reset(out)
		return &pooled{fw}, nil
	}
	fw, err := flate.NewWriter(out, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	return &pooled{fw}, nil
}

type pooled struct{ *flate.Writer }

// Close ends the entry's stream and gives the writer back.
func (p *pooled) Close() error {
	err := p.Writer.Close()
	deflaters.Put(p.Writer)
	p.Writer = nil
	return err
}

type archiver struct {
	ctx  context.Context
	fs   *davfs.FS
	t    davfs.Target
	opts Options
	zw   *zip.Writer
	buf  []byte
	st   Stats
}

// top is the opened folder: its fd and, for the GLOBAL root, the names
// of it that may be archived.
type top struct {
	fd    int
	st    unix.Stat_t
	names []string // nil: every visible name
}

// openTop opens t as a directory by the confined walk, refusing a file.
func (a *archiver) openTop() (top, error) {
	t, fs := a.t, a.fs
	if err := fs.WorkspaceErr(t); err != nil {
		return top{}, err
	}
	if t.IsRoot() {
		fd, err := fs.OpenTarget(t, fdio.DirRead)
		if err != nil {
			return top{}, err
		}
		tp := top{fd: fd}
		if t.IsGlobal() {
			tp.names = []string{davfs.GlobalSkills, davfs.GlobalAgents}
		}
		return tp, unix.Fstat(fd, &tp.st)
	}
	pfd, err := fs.OpenParent(t, fdio.DirPath)
	if err != nil {
		return top{}, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := fs.LstatAt(t, pfd, t.Name(), &st); err != nil {
		return top{}, fs.OpenErr(t, t.Path(), err)
	}
	if fdio.IsType(&st, unix.S_IFLNK) {
		return top{}, fs.OpenErr(t, t.Path(), unix.ELOOP)
	}
	if !fdio.IsType(&st, unix.S_IFDIR) || (t.IsGlobal() && t.Path() == davfs.GlobalAgents) {
		return top{}, &davfs.Error{Code: davfs.CodeFailedPrecondition, Reason: davfs.ReasonNotADirectory,
			Message: fmt.Sprintf("%q is not a folder: download a file directly", t.Path())}
	}
	fd, err := fs.OpenAt(t, pfd, t.Name(), fdio.DirRead)
	if err != nil {
		return top{}, fs.OpenErr(t, t.Path(), err)
	}
	var cur unix.Stat_t
	if err := unix.Fstat(fd, &cur); err != nil || cur.Ino != st.Ino || cur.Dev != st.Dev {
		unix.Close(fd)
		return top{}, davfs.StaleError(t.Path())
	}
	return top{fd: fd, st: cur}, nil
}

func (a *archiver) walk(tp top) error {
	name := TopName(a.t) + "/"
	if err := a.dirEntry(name, &tp.st); err != nil {
		return err
	}
	if tp.names != nil {
		for _, n := range tp.names {
			if err := a.entry(tp.fd, n, name+n, n, 1); err != nil {
				return err
			}
		}
		return nil
	}
	return a.dir(tp.fd, name, a.t.Path(), a.t.Depth())
}

// dir archives the names of the open directory fd: zname is its name in
// the archive (ending in "/"), rel its workspace path, depth its segments.
func (a *archiver) dir(fd int, zname, rel string, depth int) error {
	ents, err := fdio.ReadDirents(fd)
	if err != nil {
		return davfs.PathError(err, rel)
	}
	for _, d := range ents {
		if err := a.entry(fd, d.Name, zname+d.Name, joinRel(rel, d.Name), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// entry archives the name in pfd, or counts it skipped.
func (a *archiver) entry(pfd int, name, zname, rel string, depth int) error {
	if err := a.ctx.Err(); err != nil {
		return davfs.ContextError(a.ctx)
	}
	cfg := a.fs.Config()
	if !a.fs.Visible(name) || depth > cfg.MaxPathDepth || len(rel) > cfg.MaxPathLength {
		a.st.Skipped++
		return nil
	}
	var st unix.Stat_t
	if err := a.fs.LstatAt(a.t, pfd, name, &st); err != nil {
		switch fdio.Errno(err) {
		case unix.ENOENT: // gone meanwhile
			return nil
		case unix.EXDEV: // another mount
			a.st.Skipped++
			return nil
		}
		return davfs.PathError(err, rel)
	}
	global := a.t.IsGlobal()
	switch {
	case fdio.IsType(&st, unix.S_IFDIR) && !(global && rel == davfs.GlobalAgents):
		return a.subdir(pfd, name, zname, rel, depth, &st)
	case fdio.IsType(&st, unix.S_IFREG) && st.Nlink == 1 && !(global && rel == davfs.GlobalSkills):
		return a.file(pfd, name, zname, rel, &st)
	}
	a.st.Skipped++
	return nil
}

func (a *archiver) subdir(pfd int, name, zname, rel string, depth int, st *unix.Stat_t) error {
	fd, err := a.fs.OpenAt(a.t, pfd, name, fdio.DirRead)
	if fdio.Errno(err) == unix.ENOENT {
		return nil
	}
	if err != nil {
		a.st.Skipped++ // replaced by a link or a mount meanwhile
		return nil
	}
	defer unix.Close(fd)
	var cur unix.Stat_t
	if err := unix.Fstat(fd, &cur); err != nil || cur.Ino != st.Ino || cur.Dev != st.Dev {
		a.st.Skipped++
		return nil
	}
	if err := a.dirEntry(zname+"/", &cur); err != nil {
		return err
	}
	return a.dir(fd, zname+"/", rel, depth)
}

func (a *archiver) dirEntry(zname string, st *unix.Stat_t) error {
	h := &zip.FileHeader{Name: zname, Method: zip.Store, Modified: mtime(st)}
	h.SetMode(iofs.ModeDir | iofs.FileMode(fileMode(st)))
	if _, err := a.zw.CreateHeader(h); err != nil {
		return err
	}
	a.st.Dirs++
	return nil
}

// file archives one regular file: the bytes of one fd, opened without
// following a link and checked by fstat to be the inode lstat'ed, up to
// the size it had then (a file growing meanwhile is cut there).
func (a *archiver) file(pfd int, name, zname, rel string, st *unix.Stat_t) error {
	fd, err := a.fs.OpenAt(a.t, pfd, name, fdio.File)
	if fdio.Errno(err) == unix.ENOENT {
		return nil
	}
	if err != nil {
		a.st.Skipped++
		return nil
	}
	defer unix.Close(fd)
	var cur unix.Stat_t
	if err := unix.Fstat(fd, &cur); err != nil || cur.Ino != st.Ino || cur.Dev != st.Dev ||
		!fdio.IsType(&cur, unix.S_IFREG) || cur.Nlink != 1 {
		a.st.Skipped++
		return nil
	}
	h := &zip.FileHeader{Name: zname, Method: zip.Deflate, Modified: mtime(&cur)}
	if a.opts.Store || cur.Size == 0 {
		h.Method = zip.Store
	}
	h.SetMode(iofs.FileMode(fileMode(&cur)))
	zf, err := a.zw.CreateHeader(h)
	if err != nil {
		return err
	}
	n, err := a.copy(zf, fd, cur.Size)
	if err != nil {
		return davfs.PathError(err, rel)
	}
	a.st.Files++
	a.st.Bytes += n
	return nil
}

// copy reads at most size bytes of fd into w with the archive's buffer.
func (a *archiver) copy(w io.Writer, fd int, size int64) (int64, error) {
	var n int64
	for n < size {
		if err := a.ctx.Err(); err != nil {
			return n, davfs.ContextError(a.ctx)
		}
		b := a.buf[:min(int64(len(a.buf)), size-n)]
		m, err := unix.Read(fd, b)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break // shrunk meanwhile: what was there
		}
		if _, err := w.Write(b[:m]); err != nil {
			return n, err
		}
		n += int64(m)
	}
	return n, nil
}

func mtime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()).UTC() }

func fileMode(st *unix.Stat_t) uint32 { return st.Mode & 0o777 }

// Ext is the file name extension a download of t gets.
const Ext = ".zip"

// Name is the download's file name: TopName plus Ext.
func Name(t davfs.Target) string { return path.Base(TopName(t)) + Ext }
