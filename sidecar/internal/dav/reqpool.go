package dav

import (
	"net/http"

	"github.com/agentworkspace/files/davfs"
)

// requestWire is what a pooled request keeps from one use to the next:
// the closures over the request itself that its parts are handed (the
// FileSystem's Preconditions, the recorder's before, the library's
// Logger). They read only the request's current fields.
type requestWire struct {
	precondition func(name string) davfs.Precondition
	before       func()
	libLog       func(*http.Request, error)
}

// wiredRequest is a new request with its wiring.
func wiredRequest() *request {
	q := &request{}
	q.wire = requestWire{
		precondition: q.precondition,
		before:       func() { q.keptHeaders(false) },
		libLog:       func(_ *http.Request, err error) { q.libErr = err },
	}
	return q
}

// newRequest is a request for r, every field zero but its wiring: nothing
// of an earlier request survives into it.
func newRequest(h *Handler, w http.ResponseWriter, r *http.Request) *request {
	var q *request
	if pooled(r.Method) {
		q, _ = h.requests.Get().(*request) // nil: the pool is empty
	}
	if q == nil {
		q = wiredRequest()
	}
	q.clear()
	q.h, q.r, q.ctx = h, r, r.Context()
	q.recv = recorder{w: w, before: q.wire.before}
	q.rec, q.errs = &q.recv, &q.errLog
	return q
}

// pooled reports whether a request of method returns to the handler's pool.
func pooled(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "PROPFIND":
		return true
	}
	return false
}

// done ends the request: a read's goes back to the handler's pool,
// emptied (it keeps no reference to the request, its response or its
// files), unless its answer broke off (the handler then panics; nothing
// is reused).
func (q *request) done() {
	if !pooled(q.r.Method) || q.aborted {
		return
	}
	h := q.h
	q.clear()
	h.requests.Put(q)
}

// clear zeroes every field of q but its wiring.
func (q *request) clear() { *q = request{wire: q.wire} }
