package davproxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

const (
	allowRead  = "OPTIONS, GET, HEAD, PROPFIND"
	allowWrite = "OPTIONS, GET, HEAD, PROPFIND, PUT, DELETE, MKCOL, COPY, MOVE, PROPPATCH, LOCK, UNLOCK"
	davClasses = "1, 2"
)

var (
	readMethods = map[string]bool{http.MethodOptions: true, http.MethodGet: true, http.MethodHead: true, "PROPFIND": true}
	// mutationMethods are audited through OnMutation.
	mutationMethods = map[string]bool{
		http.MethodPut: true, http.MethodDelete: true, "MKCOL": true, "COPY": true, "MOVE": true,
		"PROPPATCH": true, "LOCK": true, "UNLOCK": true,
	}
)

func (h *handler) allow() string {
	if h.opts.Writable {
		return allowWrite
	}
	return allowRead
}

// state is what the proxy hooks need to know about the request being served.
type state struct {
	route     route
	target    *url.URL
	operator  string
	requestID string
	rec       *recorder
	// destination is the vetted sidecar path for COPY/MOVE.
	destination string
}

type stateKey struct{}

func stateOf(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey{}).(*state)
	return st
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := h.now()
	rec := &recorder{ResponseWriter: w}
	var inBytes countingBody
	if r.Body != nil && r.Body != http.NoBody {
		inBytes.ReadCloser = r.Body
		r.Body = &inBytes
	}
	rt, perr := parseRoute(r.URL.EscapedPath())
	st := &state{route: rt, rec: rec}
	if h.opts.Operator != nil {
		st.operator = h.opts.Operator(r)
	}
	if h.opts.RequestID != nil {
		st.requestID = h.opts.RequestID(r)
		if st.requestID != "" && w.Header().Get("X-Request-ID") == "" {
			w.Header().Set("X-Request-ID", st.requestID)
		}
	}
	var m *Mutation
	if mutationMethods[r.Method] {
		m = &Mutation{
			AgentID: rt.agentID, Action: "webdav." + r.Method, Scope: rt.scope, Project: rt.project,
			SourcePath: rt.auditPath(), RequestID: st.requestID, Operator: st.operator,
		}
		if rt.kind != routeWorkspace {
			m.SourcePath = ""
		}
	}
	defer func() {
		d := h.now().Sub(start)
		status := rec.statusCode()
		h.metrics.observe(r.Method, status, d, inBytes.n, rec.n)
		if m != nil && h.opts.OnMutation != nil {
			m.Status, m.Duration, m.Reason = status, d, rec.reason
			h.opts.OnMutation(r, *m)
		}
	}()
	if perr != nil {
		h.refuse(rec, http.StatusBadRequest, "bad_path", "invalid WebDAV path")
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))

	switch rt.kind {
	case routeOutside:
		if r.Method == http.MethodOptions {
			h.davOptions(rec)
			return
		}
		h.refuse(rec, http.StatusNotFound, "not_found", "not found")
		return
	case routeRoot:
		h.serveRoot(rec, r)
		return
	}

	target, ok := h.lookup(rec, rt.agentID)
	if !ok {
		return
	}
	st.target = target
	switch rt.kind {
	case routeAgent:
		h.serveAgentRoot(rec, r, rt)
		return
	case routeUnknown:
		h.refuse(rec, http.StatusNotFound, "not_found", "not found: WebDAV paths are /dav/{agent_id}/projects/... and /dav/{agent_id}/global/...")
		return
	}

	if !readMethods[r.Method] {
		if !h.opts.Writable || !mutationMethods[r.Method] {
			h.methodNotAllowed(rec, "read_only")
			return
		}
		if r.Method == "COPY" || r.Method == "MOVE" {
			dst, ok := h.checkDestination(rec, r, rt)
			if !ok {
				return
			}
			if m != nil {
				m.DestinationPath = dst.auditPath()
			}
		}
		if r.Method == http.MethodPut || r.Method == http.MethodDelete || r.Method == "MOVE" || r.Method == "LOCK" {
			if !h.checkPrecondition(rec, r, st) {
				return
			}
		}
	}
	if h.serveGet(rec, r, st) {
		return
	}
	h.proxy.ServeHTTP(rec, r)
}

// lookup resolves an agent, answering 404/503 itself when it cannot.
func (h *handler) lookup(w *recorder, agentID string) (*url.URL, bool) {
	ep, ok := h.opts.Agents(agentID)
	if !ok {
		h.refuse(w, http.StatusNotFound, "unknown_agent", fmt.Sprintf("unknown agent %q", agentID))
		return nil, false
	}
	if ep == nil {
		h.refuse(w, http.StatusNotFound, "no_webdav", fmt.Sprintf("agent %q has no WebDAV view (no sidecar davEndpoint configured)", agentID))
		return nil, false
	}
	if (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "" {
		h.log.Error("agent has an unusable davEndpoint", "agent_id", agentID)
		h.metrics.unavailable.WithLabelValues(agentID).Inc()
		h.refuse(w, http.StatusServiceUnavailable, "sidecar_unavailable", fmt.Sprintf("the WebDAV service of agent %q is unavailable", agentID))
		return nil, false
	}
	return ep, true
}

// refuse answers with a short plain-text message. reason feeds metrics and
// Mutation.Reason.
func (h *handler) refuse(w *recorder, status int, reason, msg string) {
	w.reason = reason
	switch status {
	case http.StatusMethodNotAllowed, http.StatusPreconditionRequired, http.StatusForbidden, http.StatusBadGateway,
		http.StatusPreconditionFailed:
		h.metrics.rejections.WithLabelValues(reason).Inc()
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}

func (h *handler) methodNotAllowed(w *recorder, reason string) {
	w.Header().Set("Allow", h.allow())
	msg := "method not allowed: the WebDAV view is read-only"
	if h.opts.Writable {
		msg = "method not allowed here"
		if reason == "read_only" {
			reason = "method_not_allowed"
		}
	}
	h.refuse(w, http.StatusMethodNotAllowed, reason, msg)
}

func (h *handler) davOptions(w *recorder) {
	w.Header().Set("DAV", davClasses)
	w.Header().Set("MS-Author-Via", "DAV")
	w.Header().Set("Allow", h.allow())
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// isXMLContentType is true for text/xml and application/xml (and +xml).
func isXMLContentType(ct string) bool {
	ct = strings.ToLower(ct)
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	return mt == "text/xml" || mt == "application/xml" || strings.HasSuffix(mt, "+xml")
}
