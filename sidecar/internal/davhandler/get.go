package davhandler

import (
	"mime"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// get serves GET and HEAD over davfs.OpenReaderBuf. A small file is served
// from the one read that hashed it: without Range or conditional headers
// by writeWhole, otherwise by http.ServeContent (Range, If-Match,
// If-None-Match, If-Modified-Since work); a larger one by ServeContent
// with sendfile on plain connections. ETag is the revision.
func (q *request) get() {
	t := resolve(q.r.URL.Path)
	switch t.kind {
	case kindNone:
		q.status(http.StatusNotFound, "")
		return
	case kindRoot, kindProjects:
		q.notAFile()
		return
	}
	// A plain GET is answered from memory before get returns, so a small
	// file can be read into a pooled buffer: an HTTP/1 Write is done with
	// its bytes when it returns (the sidecar serves WebDAV over HTTP/1.1
	// only, TestDavServesHTTP1Only). Not otherwise: http.ServeContent may
	// still read a multi-range body in its own goroutine after the handler
	// returned.
	plain := plainGet(q.r)
	var buf []byte
	if plain {
		bp := q.h.small.Get().(*[]byte)
		defer q.h.small.Put(bp)
		buf = *bp
	}
	f, e, err := q.h.fs.OpenReaderBuf(q.ctx(), t.ws, t.rel, buf)
	if err != nil {
		if davfs.ReasonOf(err) == davfs.ReasonNotAFile || t.rel == "" {
			if rs, serr := q.stat(t); serr == nil && rs.dir {
				q.notAFile()
				return
			}
		}
		q.fail(err, false)
		return
	}
	defer f.Close()
	// Canonical keys assigned directly: this is the hottest path.
	h := q.w.Header()
	h["Etag"] = []string{quoteETag(e.Revision)}
	h["Content-Type"] = []string{contentType(e.Name)}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	if data, ok := davfs.ReaderBytes(f); ok && plain {
		q.writeWhole(h, e.ModTime, data)
		return
	}
	http.ServeContent(q.w, q.r, e.Name, e.ModTime, f)
}

// plainGet reports whether r has none of the headers that make
// http.ServeContent answer anything but the whole body (Range and the
// conditional headers).
func plainGet(r *http.Request) bool {
	for _, k := range [...]string{"Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"} {
		if _, ok := r.Header[k]; ok {
			return false
		}
	}
	return true
}

// writeWhole is http.ServeContent's answer to a plain GET or HEAD
// (plainGet) of a body held in memory, the same headers and status
// without its seeks, copies and header parsing (TestPlainGetMatchesServeContent).
func (q *request) writeWhole(h http.Header, modtime time.Time, data []byte) {
	if !modtime.IsZero() && !modtime.Equal(time.Unix(0, 0)) {
		h["Last-Modified"] = []string{string(appendHTTPTime(make([]byte, 0, len(http.TimeFormat)), modtime))}
	}
	h["Accept-Ranges"] = []string{"bytes"}
	h["Content-Length"] = []string{strconv.Itoa(len(data))}
	q.w.WriteHeader(http.StatusOK)
	if q.r.Method != http.MethodHead {
		_, _ = q.w.Write(data)
	}
}

// notAFile answers GET on a collection: there is no HTML listing, clients use
// PROPFIND.
func (q *request) notAFile() {
	q.w.Header().Set("Allow", "OPTIONS, PROPFIND, PROPPATCH, LOCK, UNLOCK, MKCOL, COPY, MOVE, DELETE")
	q.status(http.StatusMethodNotAllowed, "a collection has no body; use PROPFIND")
}

// contentType is by extension only, never sniffed.
func contentType(name string) string {
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}
