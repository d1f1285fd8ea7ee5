package davhandler

import (
	"mime"
	"net/http"
	"path"

	"github.com/agentworkspace/files/davfs"
)

// get serves GET and HEAD with http.ServeContent over davfs.OpenReader:
// Range, If-Match, If-None-Match, If-Modified-Since work; a small file is
// served from the one read that hashed it, a larger one with sendfile on
// plain connections. ETag is the revision.
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
	f, e, err := q.h.fs.OpenReader(q.ctx(), t.ws, t.rel)
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
	http.ServeContent(q.w, q.r, e.Name, e.ModTime, f)
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
