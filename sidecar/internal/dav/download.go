package dav

import (
	"bufio"
	"errors"
	"net/http"
	"path"
	"strings"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/archive"
)

// DownloadQuery is the query parameter of a GET that downloads: a file
// as an attachment (the library's GET, with Range and ETag), a folder as a
// .zip streamed while it is read (davfs/archive).
const DownloadQuery = "download"

// download answers a GET with ?download. True: it answered (a folder's
// zip, or a refusal); false: a file, with its Content-Disposition set,
// which the library serves.
func (q *request) download() bool {
	ws, rel, ok := downloadWorkspace(q.src)
	if !ok {
		q.fail(http.StatusBadRequest, "INVALID_PATH", "only a file or folder of a workspace can be downloaded")
		return true
	}
	t, err := q.h.dfs.Resolve(ws, rel)
	if err != nil {
		q.failErr(err)
		return true
	}
	if !t.IsRoot() {
		e, err := q.h.dfs.StatTarget(t)
		if err != nil {
			q.failErr(err)
			return true
		}
		if e.Type != davfs.TypeDirectory {
			q.rec.Header().Set("Content-Disposition", ContentDisposition(t.Name()))
			return false
		}
	}
	q.zip(t)
	return true
}

// downloadWorkspace is WebDAVWorkspace, with /global the GLOBAL root.
func downloadWorkspace(name string) (davfs.Workspace, string, bool) {
	if name == "/global" {
		return davfs.Workspace{Scope: davfs.ScopeGlobal}, "", true
	}
	return WebDAVWorkspace(name)
}

// zip streams t's archive. Until its first byte the request can still be
// refused; after that an error ends the connection, so the client never
// takes a truncated archive for a whole one.
func (q *request) zip(t davfs.Target) {
	h := q.rec.Header()
	lw := &lazyWriter{q: q, start: func() {
		h.Set("Content-Type", "application/zip")
		h.Set("Content-Disposition", ContentDisposition(archive.Name(t)))
		h.Del("Content-Length")
		q.rec.WriteHeader(http.StatusOK)
	}}
	bw := bufio.NewWriterSize(lw, 64<<10)
	_, err := archive.Write(q.ctx, q.h.dfs, t, bw, archive.Options{})
	if err == nil {
		err = bw.Flush()
	}
	switch {
	case err == nil:
		if !lw.started {
			lw.start()
		}
	case !lw.started:
		q.failErr(err)
	default:
		q.libErr, q.reason, q.aborted = err, "INTERNAL", true
	}
}

// failErr answers a davfs error by the one error table.
func (q *request) failErr(err error) {
	var de *davfs.Error
	if !errors.As(err, &de) {
		q.libErr = err
		q.fail(http.StatusInternalServerError, "INTERNAL", http.StatusText(http.StatusInternalServerError))
		return
	}
	st := errtable.WebDAVStatus(string(de.Reason), false)
	msg := de.Message
	if st >= 500 || msg == "" {
		msg = http.StatusText(st)
	}
	q.fail(st, string(de.Reason), msg)
}

// lazyWriter sends the status on its first Write.
type lazyWriter struct {
	q       *request
	start   func()
	started bool
}

func (w *lazyWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.started = true
		w.start()
	}
	return w.q.rec.w.Write(p)
}

// ContentDisposition is an attachment header for name (RFC 6266): an
// ASCII fallback filename (anything but printable ASCII, quotes,
// backslashes and separators replaced by "_") and the exact name as an
// RFC 8187 filename* (UTF-8, percent-encoded).
func ContentDisposition(name string) string {
	name = path.Base(name)
	var b strings.Builder
	for _, r := range name {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' || r == '/' || r == '%' || r == ';' {
			b.WriteByte('_')
			continue
		}
		b.WriteRune(r)
	}
	return `attachment; filename="` + b.String() + `"; filename*=UTF-8''` + rfc8187(name)
}

// rfc8187 percent-encodes everything but RFC 8187's attr-char.
func rfc8187(s string) string {
	const attr, hex = "!#$&+-.^_`|~", "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || strings.IndexByte(attr, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
