package davproxy

import (
	"net/http"
	"strconv"

	"github.com/agentworkspace/files/gateway/internal/uploads"
)

// takeUploadSlot holds a slot of the agent for r's body, or answers 429
// TOO_MANY_UPLOADS with Retry-After itself (before any of the body is
// read, nothing sent to the sidecar) and returns false. The returned
// release must run when the request ends; it also runs when the body ends
// first.
func (h *handler) takeUploadSlot(w *recorder, r *http.Request, st *state) (func(), bool) {
	if !uploads.HasBody(r) || st.body == nil {
		return func() {}, true
	}
	release, ok := h.opts.Uploads.Acquire(st.route.Agent, "webdav")
	if !ok {
		uploads.Refuse(w.Header())
		h.refuse(w, http.StatusTooManyRequests, uploads.Reason,
			"too many uploads to agent "+strconv.Quote(st.route.Agent)+" are in progress; retry later")
		return nil, false
	}
	st.body.onEnd = release
	return release, true
}

// end runs onEnd once the body reached EOF or failed.
func (c *countingBody) end(err error) {
	if err != nil && c.onEnd != nil {
		c.onEnd()
	}
}
