package search

import (
	"bytes"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// reader reads the files the walk opened and matches their lines, until
// the jobs end; after a bound it only closes what is left.
func (r *run) reader() {
	var buf []byte
	for j := range r.jobs {
		if r.ctx.Err() == nil {
			buf = r.openFile(j, buf)
		}
		j.dir.release()
	}
}

// openFile opens j's name in its directory by the confined OpenAt (never
// following a symlink, never another mount) and searches it if the fd is
// a regular file with one link.
func (r *run) openFile(j job, buf []byte) []byte {
	fd, err := r.fs.OpenAt(r.t, j.dir.fd, j.name, fdio.File)
	if err != nil {
		return buf
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !fdio.IsType(&st, unix.S_IFREG) || st.Nlink != 1 {
		return buf
	}
	return r.file(fd, j.rel, st.Size, buf)
}

// file searches one file: at most MaxFileBytes of it, within what is left
// of MaxBytes, skipped when its first block holds a NUL byte. buf is the
// reader's buffer, returned for reuse.
func (r *run) file(fd int, rel string, size int64, buf []byte) []byte {
	want := min(size, r.o.MaxFileBytes)
	if size > r.o.MaxFileBytes {
		r.partial.Add(1)
	}
	if r.bytes.Add(want) > r.o.MaxBytes {
		r.bytes.Add(-want)
		r.stop(BoundBytes)
		return buf
	}
	if int64(cap(buf)) < want {
		buf = make([]byte, want)
	}
	b, err := readAt(fd, buf[:want])
	if err != nil {
		return buf
	}
	r.files.Add(1)
	if bytes.IndexByte(b[:min(len(b), binaryBlock)], 0) >= 0 {
		r.binary.Add(1)
		return buf
	}
	r.lines(rel, b)
	return buf
}

// readAt fills b from the start of fd, stopping early at the end of the
// file (it may have shrunk since its fstat).
func readAt(fd int, b []byte) ([]byte, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return b[:n], nil
}

// lines emits one result per matching line of b (the first match of the
// line), with its number and preview.
func (r *run) lines(rel string, b []byte) {
	line, counted := 1, 0 // b[:counted] holds line-1 newlines
	for pos := 0; pos < len(b); {
		s, e := r.m.find(b[pos:])
		if s < 0 {
			return
		}
		s, e = s+pos, e+pos
		line += bytes.Count(b[counted:s], nl)
		ls := bytes.LastIndexByte(b[:s], '\n') + 1
		le := len(b)
		if i := bytes.IndexByte(b[s:], '\n'); i >= 0 {
			le = s + i
		}
		counted = s
		if e > le {
			e = le
		}
		pv, ps, pe := preview(b[ls:le], s-ls, e-ls, r.o.MaxPreview)
		if !r.send(Result{Path: rel, Line: line, Preview: pv, MatchStart: ps, MatchEnd: pe}) {
			return
		}
		pos = le + 1
	}
}

var nl = []byte{'\n'}

// send emits res unless a bound or an error of emit ended the search.
func (r *run) send(res Result) bool {
	if r.results.Add(1) > int64(r.o.MaxResults) {
		r.results.Add(-1)
		r.stop(BoundResults)
		return false
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.emitErr != nil || r.ctx.Err() != nil {
		r.results.Add(-1)
		return false
	}
	if err := r.emit(res); err != nil {
		r.results.Add(-1)
		r.emitErr = err
		r.stopFn()
		return false
	}
	return true
}
