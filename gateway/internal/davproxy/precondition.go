package davproxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// checkPrecondition enforces the write rule for PUT, DELETE, MOVE and LOCK
// (only when LOCK would create the resource):
// changing or removing an existing resource needs If-Match, creating one
// needs "If-None-Match: *"; otherwise 428 Precondition Required.
//
// The gateway learns whether the target exists with a PROPFIND Depth 0 to
// the sidecar (one extra round trip per write; works for files and
// collections alike). It then settles what existence alone decides:
//   - exists, no If-Match: 412 if "If-None-Match: *" was sent, else 428;
//   - missing, If-Match sent: 412 (RFC 9110 §13.1.1);
//   - missing, PUT without "If-None-Match: *": 428;
//   - missing, DELETE/MOVE without headers: passed on (the sidecar says 404).
//
// Whether an If-Match value is current is left to the sidecar, which checks
// the revision again right before it renames or unlinks and answers 412;
// that answer is passed through. The WebDAV If header is not accepted in
// place of If-Match.
func (h *handler) checkPrecondition(w *recorder, r *http.Request, st *state) bool {
	ifMatch := strings.TrimSpace(r.Header.Get("If-Match")) != ""
	noneStar := strings.TrimSpace(r.Header.Get("If-None-Match")) == "*"
	if ifMatch && !strongETags(r.Header.Values("If-Match")) {
		// "If-Match: *" or a weak ETag names no revision: it would let a
		// write through without the lost-update check.
		h.refuse(w, http.StatusPreconditionRequired, "precondition_required",
			"precondition required: If-Match must name the current strong ETag (not * or W/)")
		return false
	}
	if r.Method == http.MethodPut && !ifMatch && !noneStar {
		h.preconditionRequired(w)
		return false
	}
	exists, status := h.probe(r, st)
	if r.Method == "LOCK" && status == 0 {
		// Locking an existing resource changes no content; locking a missing
		// one creates an empty file, which is a create like any other.
		if !exists && !noneStar {
			h.preconditionRequired(w)
			return false
		}
		return true
	}
	switch {
	case status != 0:
		if status >= 500 {
			h.metrics.unavailable.WithLabelValues(st.route.agentID).Inc()
			h.refuse(w, http.StatusServiceUnavailable, "sidecar_unavailable", "the WebDAV service of agent \""+st.route.agentID+"\" is unavailable")
		} else {
			h.refuse(w, status, "precondition_probe", http.StatusText(status))
		}
		return false
	case exists && ifMatch:
		return true
	case exists && noneStar:
		h.refuse(w, http.StatusPreconditionFailed, "exists", "precondition failed: the resource exists (If-None-Match: *)")
		return false
	case exists:
		h.preconditionRequired(w)
		return false
	case ifMatch:
		h.refuse(w, http.StatusPreconditionFailed, "not_found_if_match", "precondition failed: the resource does not exist (If-Match)")
		return false
	}
	// Missing: a DELETE or MOVE goes on (the sidecar answers 404), but if the
	// target appears before the sidecar acts it must not be removed or moved
	// unchecked.
	r.Header.Set("If-None-Match", "*")
	return true
}

// strongETags reports whether every If-Match value is a list of strong,
// quoted entity tags.
func strongETags(values []string) bool {
	n := 0
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
				return false
			}
			n++
		}
	}
	return n > 0
}

// probeTimeout bounds the existence check; a sidecar that cannot answer a
// Depth 0 PROPFIND in this time is treated as unavailable.
const probeTimeout = 30 * time.Second

func (h *handler) preconditionRequired(w *recorder) {
	h.refuse(w, http.StatusPreconditionRequired, "precondition_required",
		"precondition required: send If-Match with the current ETag to change or delete an existing resource, or If-None-Match: * to create a new one")
}

// probe asks the sidecar whether the request's target exists. status is
// non-zero when the answer is neither yes nor no (the sidecar's status, or
// 503 when it cannot be reached).
func (h *handler) probe(r *http.Request, st *state) (exists bool, status int) {
	u := sidecarURL(st.target, st.route.restEsc)
	ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PROPFIND", u.String(), http.NoBody)
	if err != nil {
		return false, http.StatusBadRequest
	}
	req.Header.Set("Depth", "0")
	if st.operator != "" {
		req.Header.Set("X-Operator", st.operator)
	}
	if st.requestID != "" {
		req.Header.Set("X-Request-ID", st.requestID)
	}
	resp, err := h.rt.RoundTrip(req)
	if err != nil {
		h.log.Warn("sidecar WebDAV probe failed", "agent_id", st.route.agentID, "request_id", st.requestID, "error", err)
		return false, http.StatusServiceUnavailable
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusMultiStatus, http.StatusOK:
		return true, 0
	case http.StatusNotFound:
		return false, 0
	}
	return false, resp.StatusCode
}
