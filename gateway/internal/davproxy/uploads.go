package davproxy

import (
	"net/http"
	"strconv"
	"sync"
)

// UploadRetryAfter is the Retry-After (seconds) of a 429 TOO_MANY_UPLOADS.
const UploadRetryAfter = 2

// uploadSlots bounds the request bodies in flight per agent (issue #23: a
// few hundred trickling uploads held a thousand file descriptors). A slot
// is taken before anything reaches the sidecar and given back when the
// body has been read to its end, or failed, or the request ended, so a
// body that was fully sent stops counting while the sidecar commits it.
type uploadSlots struct {
	max int // <= 0: no cap
	mu  sync.Mutex
	n   map[string]int // by agent ID
}

// acquire takes a slot of agent and returns its release (idempotent), or
// false when the agent is at the cap.
func (u *uploadSlots) acquire(agent string) (func(), bool) {
	if u.max <= 0 {
		return func() {}, true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[agent] >= u.max {
		return nil, false
	}
	u.n[agent]++
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			defer u.mu.Unlock()
			if u.n[agent]--; u.n[agent] <= 0 {
				delete(u.n, agent)
			}
		})
	}, true
}

// hasBody: the request carries a body (a declared length, or chunked).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// takeUploadSlot holds a slot of the agent for r's body, or answers 429
// TOO_MANY_UPLOADS with Retry-After itself (before any of the body is
// read) and returns false. The returned release must run when the request
// ends; it also runs when the body ends first.
func (h *handler) takeUploadSlot(w *recorder, r *http.Request, st *state) (func(), bool) {
	if !hasBody(r) || st.body == nil {
		return func() {}, true
	}
	release, ok := h.uploads.acquire(st.route.agentID)
	if !ok {
		h.metrics.uploadsRefused.WithLabelValues(st.route.agentID).Inc()
		w.Header().Set("Retry-After", strconv.Itoa(UploadRetryAfter))
		// The body stays unread: the server closes the connection rather
		// than drain a large one.
		w.Header().Set("Connection", "close")
		h.refuse(w, http.StatusTooManyRequests, "TOO_MANY_UPLOADS",
			"too many uploads to agent "+strconv.Quote(st.route.agentID)+" are in progress; retry later")
		return nil, false
	}
	g := h.metrics.uploadsInFlight.WithLabelValues(st.route.agentID)
	g.Inc()
	var once sync.Once
	done := func() { once.Do(func() { release(); g.Dec() }) }
	st.body.onEnd = done
	return done, true
}

// end runs onEnd once the body reached EOF or failed.
func (c *countingBody) end(err error) {
	if err != nil && c.onEnd != nil {
		c.onEnd()
	}
}
