package davhandler

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/agentworkspace/files/davfs"
)

// request is one WebDAV request in flight.
type request struct {
	h      *handler
	sw     statusWriter // w points here: one allocation per request
	w      *statusWriter
	r      *http.Request
	rid    string
	reason davfs.Reason // for the log line
	detail error        // for the log line only, never sent
}

const allowHeader = "OPTIONS, GET, HEAD, PUT, DELETE, MKCOL, COPY, MOVE, PROPFIND, PROPPATCH, LOCK, UNLOCK"

func (q *request) serve() {
	switch q.r.Method {
	case http.MethodOptions:
		q.options()
	case http.MethodGet, http.MethodHead:
		q.get()
	case http.MethodPut:
		q.put()
	case http.MethodDelete:
		q.delete()
	case "MKCOL":
		q.mkcol()
	case "COPY", "MOVE":
		q.copyMove()
	case "PROPFIND":
		q.propfind()
	case "PROPPATCH":
		q.proppatch()
	case "LOCK":
		q.lock()
	case "UNLOCK":
		q.unlock()
	default:
		q.w.Header().Set("Allow", allowHeader)
		q.status(http.StatusMethodNotAllowed, "")
	}
}

// prefix is the path under which the client sees this tree (the gateway
// serves it at /dav/{agent_id} and says so in X-Forwarded-Prefix; the
// gateway is the only client on the internal network). Hrefs carry it and
// Destination / If resource tags have it stripped.
func (q *request) prefix() string {
	p := q.r.Header.Get("X-Forwarded-Prefix")
	if p == "" || p[0] != '/' || strings.ContainsAny(p, "\"<>\x00 ?#") || len(p) > 256 {
		return ""
	}
	return strings.TrimRight(p, "/")
}

// local strips the client-visible prefix from a URL path.
func (q *request) local(p string) string {
	if pre := q.prefix(); pre != "" {
		if p == pre {
			return "/"
		}
		if strings.HasPrefix(p, pre+"/") {
			return p[len(pre):]
		}
	}
	return p
}

func (q *request) ctx() context.Context { return q.r.Context() }

// status writes a plain-text error response.
func (q *request) status(code int, msg string) {
	if msg == "" {
		msg = http.StatusText(code)
	}
	h := q.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	q.w.WriteHeader(code)
	if q.r.Method != http.MethodHead {
		_, _ = q.w.Write([]byte(msg + "\n"))
	}
}

// fail answers err with its WebDAV status; creating says the method creates
// the target, so a missing parent is 409.
func (q *request) fail(err error, creating bool) {
	code := statusFor(err, creating)
	q.detail = err
	var de *davfs.Error
	if errors.As(err, &de) {
		q.reason = de.Reason
		switch de.Reason {
		case davfs.ReasonDenylisted, davfs.ReasonSymlink, davfs.ReasonOutsideGlobal,
			davfs.ReasonInvalidPath, davfs.ReasonPathTooLong, davfs.ReasonPathTooDeep,
			davfs.ReasonProtected, davfs.ReasonMultipleLinks:
			q.h.metrics.rejections.WithLabelValues(string(de.Reason)).Inc()
		case davfs.ReasonTooLarge:
			q.h.metrics.sizeRejects.WithLabelValues("too_large").Inc()
		}
	}
	q.status(code, safeMessage(err, code))
}

// davError answers with an RFC 4918 precondition element in a DAV:error body.
func (q *request) davError(code int, cond string) {
	q.w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	q.w.WriteHeader(code)
	_, _ = q.w.Write([]byte(`<?xml version="1.0" encoding="utf-8"?>` + "\n" +
		`<D:error xmlns:D="DAV:"><D:` + cond + `/></D:error>` + "\n"))
}

func (q *request) options() {
	h := q.w.Header()
	h.Set("DAV", "1, 2")
	h.Set("MS-Author-Via", "DAV")
	h.Set("Allow", allowHeader)
	h.Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusOK)
}

// quoteETag turns a revision into a strong ETag.
func quoteETag(rev string) string {
	if rev == "" {
		return ""
	}
	return `"` + rev + `"`
}

// etagValue strips W/ and quotes from an entity tag.
func etagValue(t string) (v string, weak bool) {
	t = strings.TrimSpace(t)
	if strings.HasPrefix(t, "W/") {
		weak = true
		t = t[2:]
	}
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		t = t[1 : len(t)-1]
	}
	return t, weak
}

// splitETags splits an If-Match / If-None-Match list.
func splitETags(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
