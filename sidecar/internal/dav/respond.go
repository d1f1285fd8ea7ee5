package dav

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/davfs"
)

// recorder sits between x/net/webdav and the client. It passes successful
// responses through and holds back an error status (and the library's
// "Not Found"-style body), so that the request can answer it again with
// the status and reason of the one error table once the library has said
// which error it met (Handler.Logger).
type recorder struct {
	w      http.ResponseWriter
	filter *lockFilter // read-only view: drops DAV:supportedlock
	status int         // the library's; held back (and its body dropped) when >= 400
	before func()      // called right before a success status is sent
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if r.status != 0 {
		return
	}
	r.status = code
	if code >= 400 {
		return
	}
	r.before()
	r.w.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if r.status >= 400 {
		return len(p), nil
	}
	if r.filter != nil {
		return r.filter.Write(p)
	}
	return r.w.Write(p)
}

// ReadFrom keeps sendfile for GET bodies (http.ServeContent copies an
// *os.File into the ResponseWriter).
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if r.status >= 400 || r.filter != nil {
		return io.Copy(struct{ io.Writer }{r}, src)
	}
	return io.Copy(r.w, src)
}

func (r *recorder) Flush() {
	r.filter.flush()
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

// supportedLock is how x/net/webdav encodes DAV:supportedlock, byte for
// byte (its value is a constant, and nothing a client controls can contain
// it: names and hrefs are XML-escaped), for allprop and propname answers.
var supportedLock = [][]byte{
	[]byte(`<D:supportedlock><D:lockentry xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry></D:supportedlock>`),
	[]byte(`<D:supportedlock></D:supportedlock>`),
}

// lockFilter removes DAV:supportedlock from a multistatus stream: a
// read-only view offers no locks.
type lockFilter struct {
	w    io.Writer
	tail []byte // bytes held back: a prefix of a needle may continue in the next Write
}

func (f *lockFilter) Write(p []byte) (int, error) {
	buf := append(f.tail, p...)
	for _, n := range supportedLock {
		buf = bytes.ReplaceAll(buf, n, nil)
	}
	keep := 0
	for _, n := range supportedLock {
		for k := min(len(n)-1, len(buf)); k > keep; k-- {
			if bytes.HasSuffix(buf, n[:k]) {
				keep = k
				break
			}
		}
	}
	f.tail = append([]byte(nil), buf[len(buf)-keep:]...)
	if _, err := f.w.Write(buf[:len(buf)-keep]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes what Write held back; a nil filter has nothing.
func (f *lockFilter) flush() {
	if f != nil && len(f.tail) > 0 {
		_, _ = f.w.Write(f.tail)
		f.tail = nil
	}
}

// refine turns the library's error status and error into the status,
// reason and safe message the client gets.
func (q *request) refine(status int, err error) (int, string, string) {
	if rf := q.refused; rf != nil {
		return rf.status, rf.reason, rf.msg // guardFS answered it itself
	}
	de, ok := q.errs.Lookup(err)
	if !ok && status == http.StatusInternalServerError && err == nil {
		// http.ServeContent answers 500 itself when the file's first Seek
		// or Read fails; the FileSystem recorded why.
		de, ok = q.errs.Last()
	}
	if ok {
		reason := string(de.Reason)
		m := q.r.Method
		st := errtable.WebDAVStatus(reason, m == http.MethodPut || m == "MKCOL" || m == "LOCK")
		if de.Code == davfs.CodeNotFound && (status == http.StatusConflict || status == http.StatusNotFound) {
			st = status // the library knows a missing parent (409) from a missing target
		}
		msg := de.Message
		if st >= 500 || msg == "" {
			msg = http.StatusText(st)
		}
		return st, reason, msg
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, "TOO_LARGE", q.h.tooLarge()
	case errors.Is(err, errTooManyLocks):
		return http.StatusInsufficientStorage, "LOCK_LIMIT", "too many locks are held on this agent; unlock some first or wait for them to expire"
	case errors.Is(err, errOperatorLocks):
		return http.StatusInsufficientStorage, "LOCK_LIMIT", "this operator holds as many locks as allowed; unlock some first or wait for them to expire"
	case err == webdav.ErrLocked && status != http.StatusPreconditionFailed:
		return webdav.StatusLocked, "LOCKED", "the resource is locked"
	case errors.Is(err, os.ErrExist) && status == http.StatusPreconditionFailed:
		return status, "ALREADY_EXISTS", "the destination exists and Overwrite is F"
	}
	reason, ok := libraryReasons[status]
	if !ok {
		reason = "INTERNAL"
	}
	return status, reason, http.StatusText(status)
}

// libraryReasons are the reasons of the library's own error statuses, when
// no error of the FileSystem says more (INTERNAL for any other status).
var libraryReasons = map[int]string{
	http.StatusBadRequest: "INVALID_ARGUMENT", http.StatusUnsupportedMediaType: "INVALID_ARGUMENT",
	http.StatusRequestedRangeNotSatisfiable: "INVALID_ARGUMENT", http.StatusBadGateway: "INVALID_ARGUMENT",
	http.StatusForbidden: "FORBIDDEN", http.StatusNotFound: "NOT_FOUND", http.StatusConflict: "NOT_FOUND",
	http.StatusMethodNotAllowed:   "NOT_A_FILE", // GET of a collection
	http.StatusPreconditionFailed: "REVISION_MISMATCH", webdav.StatusLocked: "LOCKED",
	http.StatusNotImplemented: "NOT_SUPPORTED", // shared locks
}

// fail answers the request with an error. The reason header names the
// errtable reason; the body is the safe message only.
func (q *request) fail(status int, reason, msg string) {
	h := q.rec.w.Header()
	h.Del("Content-Encoding")
	h.Del("Content-Disposition")
	h.Del("Last-Modified")
	h.Set("X-Content-Type-Options", "nosniff")
	body := msg + "\n"
	h.Set("Content-Length", strconv.Itoa(len(body)))
	q.answer(status, reason, "text/plain; charset=utf-8", body)
}

// failXML answers with an RFC 4918 precondition element.
func (q *request) failXML(status int, reason, cond string) {
	q.answer(status, reason, "application/xml; charset=utf-8", `<?xml version="1.0" encoding="utf-8"?>`+"\n"+
		`<D:error xmlns:D="DAV:"><D:`+cond+`/></D:error>`+"\n")
}

// answer sends an error answer of fail or failXML.
func (q *request) answer(status int, reason, ctype, body string) {
	q.reason = reason
	h := q.rec.w.Header()
	h.Set("Content-Type", ctype)
	h.Set(errtable.ReasonHeader, reason)
	q.keptHeaders(true)
	q.rec.status = status
	q.rec.w.WriteHeader(status)
	if q.r.Method != http.MethodHead {
		_, _ = io.WriteString(q.rec.w, body)
	}
}
