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

// A file is read in chunks into the reader's one buffer (chunk bytes,
// after at most maxCarry bytes of a line the chunk before left
// unfinished): memory per reader stays chunk+maxCarry whatever
// max_file_bytes allows. A line longer than maxCarry is searched in pieces
// (a match across a piece boundary is not found); a match is found within
// one line only, as ripgrep's line-oriented search does.
const (
	chunk    = 256 << 10
	maxCarry = 1 << 20
)

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
	if len(buf) == 0 {
		buf = make([]byte, chunk+maxCarry)
	}
	r.files.Add(1)
	line, carry := 1, 0
	for off := int64(0); off < want; {
		m, err := readAt(fd, buf[carry:carry+int(min(chunk, want-off))], off)
		if err != nil || m == 0 {
			break // unreadable, or shrunk since its fstat
		}
		data := buf[:carry+m]
		if off == 0 && bytes.IndexByte(data[:min(len(data), binaryBlock)], 0) >= 0 {
			r.binary.Add(1)
			return buf
		}
		off += int64(m)
		end := len(data)
		if off < want { // complete lines only; the rest waits for the next chunk
			if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
				end = i + 1
			} else if len(data) < maxCarry {
				carry = len(data)
				continue
			}
		}
		var ok bool
		if line, ok = r.lines(rel, data[:end], line); !ok {
			return buf
		}
		carry = copy(buf, data[end:])
	}
	if carry > 0 {
		r.lines(rel, buf[:carry], line)
	}
	return buf
}

// readAt fills b from fd at off, stopping early at the end of the file;
// it returns the bytes read.
func readAt(fd int, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// lines emits one result per matching line of b (the first match of the
// line), numbering from line; it returns the number of the line after b
// and false when the search ended.
func (r *run) lines(rel string, b []byte, line int) (int, bool) {
	counted := 0 // b[:counted] holds the newlines already in line
	for pos := 0; pos < len(b); {
		s, e := r.m.find(b[pos:])
		if s < 0 {
			break
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
			return line, false
		}
		pos = le + 1
	}
	return line + bytes.Count(b[counted:], nl), true
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
