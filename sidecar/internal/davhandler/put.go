package davhandler

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/agentworkspace/files/davfs"
)

// errBodyTooLarge is returned by limitReader once the body passes the limit.
var errBodyTooLarge = errors.New("davhandler: request body too large")

// limitReader fails (rather than truncating) when more than n bytes come,
// so davfs sees a read error and commits nothing.
type limitReader struct {
	r        io.Reader
	n        int64
	tooLarge bool
	readErr  bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		l.tooLarge = true
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		l.tooLarge = true
		return n, errBodyTooLarge
	}
	if err != nil && err != io.EOF {
		l.readErr = true
	}
	return n, err
}

// put writes the body atomically through davfs.WriteStream: a temp file in
// the target's directory, fsynced, renamed over the target under the
// mutation lock after the precondition is checked again. Nothing is written
// when the body is too large, cut short, or the precondition fails.
func (q *request) put() {
	t := resolve(q.r.URL.Path)
	if t.kind != kindEntry || t.isWorkspaceRoot() {
		q.status(http.StatusForbidden, "cannot PUT here: the projects level and workspace roots are read-only")
		return
	}
	if q.r.Header.Get("Content-Range") != "" {
		q.h.metrics.sizeRejects.WithLabelValues("content_range").Inc()
		q.status(http.StatusBadRequest, "partial PUT (Content-Range) is not supported")
		return
	}
	max := q.h.opts.MaxUploadSize
	if q.r.ContentLength > max {
		q.h.metrics.sizeRejects.WithLabelValues("too_large").Inc()
		q.reason = davfs.ReasonTooLarge
		q.w.Header().Set("Connection", "close")
		q.status(http.StatusRequestEntityTooLarge, "the body exceeds the upload limit of "+strconv.FormatInt(max, 10)+" bytes")
		return
	}
	var pre davfs.Precondition
	hdr := q.r.Header
	if hdr.Get("If-Match") != "" || hdr.Get("If-None-Match") != "" || hdr.Get("If") != "" || q.h.locks.count.Load() > 0 {
		// Only conditional requests and lock checks need the current state;
		// a blind PUT goes straight to davfs (one resolution, no revision
		// computed for the bytes about to be replaced).
		cur, err := q.stat(t)
		if err != nil {
			q.fail(err, true)
			return
		}
		if cur.exists && cur.dir {
			q.status(http.StatusMethodNotAllowed, "cannot PUT over a collection")
			return
		}
		var ok bool
		if pre, ok = q.preconditions(t, cur, []lockReq{{name: t.href, member: !cur.exists}}); !ok {
			return
		}
	}
	// A PUT without If-Match / If-None-Match replaces whatever is there
	// (RFC 9110): nothing is pinned for the commit.
	body := &limitReader{r: q.r.Body, n: max}
	e, created, err := q.h.fs.WriteStream(q.ctx(), t.ws, t.rel, body, max, pre)
	if err != nil {
		switch {
		case body.tooLarge:
			q.h.metrics.sizeRejects.WithLabelValues("too_large").Inc()
			q.reason = davfs.ReasonTooLarge
			q.w.Header().Set("Connection", "close")
			q.status(http.StatusRequestEntityTooLarge, "the body exceeds the upload limit of "+strconv.FormatInt(max, 10)+" bytes")
		case body.readErr:
			q.detail = err
			q.status(http.StatusBadRequest, "the request body was cut short; nothing was written")
		case davfs.ReasonOf(err) == davfs.ReasonNotAFile:
			q.detail = err
			q.status(http.StatusMethodNotAllowed, "cannot PUT over a collection")
		default:
			q.fail(err, true)
		}
		return
	}
	h := q.w.Header()
	h.Set("ETag", quoteETag(e.Revision))
	h.Set("Content-Length", "0")
	if created {
		q.w.WriteHeader(http.StatusCreated)
	} else {
		q.w.WriteHeader(http.StatusNoContent)
	}
}
