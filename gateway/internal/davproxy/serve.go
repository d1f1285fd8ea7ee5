package davproxy

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentworkspace/files/internal/davwire"
)

// readMethod reports whether m is a read method of davwire's table.
func readMethod(m string) bool { w, ok := davwire.Methods[m]; return ok && !w }

// mutationMethod reports whether m is a write method of davwire's table
// the gateway's view serves (audited through OnMutation); POST, which
// x/net/webdav serves like GET, it refuses.
func mutationMethod(m string) bool { return davwire.Methods[m] && m != http.MethodPost }

func (h *handler) allow() string { return davwire.Allow(h.opts.Writable) }

// state is what the proxy hooks need to know about the request being served.
type state struct {
	route     route
	target    *url.URL
	operator  string
	requestID string
	rec       *recorder
	body      *countingBody // the client's request body, nil without one
}

type stateKey struct{}

func stateOf(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey{}).(*state)
	return st
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := h.now()
	rec := &recorder{ResponseWriter: w}
	rt, perr := parseRoute(r.URL.EscapedPath())
	st := h.newState(r, rt, rec)
	m := newMutation(r.Method, st)
	// r as it is when the request ends (with its state in the context).
	defer func() { h.finish(r, start, st, m) }()
	if perr != nil {
		h.refuse(rec, http.StatusBadRequest, "INVALID_PATH", perr.Error())
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	h.route(rec, r, st, m)
}

// newState is the request's state: its route, its body counted, its
// operator and request ID (echoed in the response's header).
func (h *handler) newState(r *http.Request, rt route, rec *recorder) *state {
	st := &state{route: rt, rec: rec}
	if r.Body != nil && r.Body != http.NoBody {
		st.body = &countingBody{ReadCloser: r.Body}
		r.Body = st.body
	}
	if h.opts.Operator != nil {
		st.operator = h.opts.Operator(r)
	}
	if h.opts.RequestID != nil {
		st.requestID = h.opts.RequestID(r)
		if st.requestID != "" && rec.ResponseWriter.Header().Get(davwire.RequestIDHeader) == "" {
			rec.ResponseWriter.Header().Set(davwire.RequestIDHeader, st.requestID)
		}
	}
	return st
}

// newMutation is the audit record of a mutation method, nil for a read.
func newMutation(method string, st *state) *Mutation {
	if !mutationMethod(method) {
		return nil
	}
	rt := st.route
	return &Mutation{
		AgentID: rt.Agent, Action: "webdav." + method, Scope: rt.Scope, Project: rt.Project,
		SourcePath: rt.AuditPath(), RequestID: st.requestID, Operator: st.operator,
	}
}

// finish records the request's metrics and, for a mutation, its audit.
func (h *handler) finish(r *http.Request, start time.Time, st *state, m *Mutation) {
	rec := st.rec
	d := h.now().Sub(start)
	status := cmp.Or(rec.status, http.StatusOK)
	var in int64
	if st.body != nil {
		in = st.body.n
	}
	h.metrics.observe(r.Method, status, d, in, rec.n)
	if m != nil && h.opts.OnMutation != nil {
		m.Status, m.Duration = status, d
		m.Code, m.Reason = rec.outcome(status)
		m.Unconditional, m.KeptVersions = rec.unconditional, strings.Join(rec.kept, ",")
		m.AutoCheckpoints = strings.Join(rec.autos, ",")
		h.opts.OnMutation(r, *m)
	}
}

// route answers what the view answers itself (outside /dav/, the roots,
// an unknown agent or name, a refused method or Destination, no upload
// slot) and proxies the rest to the agent's sidecar.
func (h *handler) route(rec *recorder, r *http.Request, st *state, m *Mutation) {
	rt := st.route
	switch rt.Kind {
	case routeOutside:
		if r.Method == http.MethodOptions {
			h.davOptions(rec)
			return
		}
		h.refuse(rec, http.StatusNotFound, "NOT_FOUND", "not found")
		return
	case routeRoot:
		h.serveRoot(rec, r)
		return
	}

	target, ok := h.lookup(rec, rt.Agent)
	if !ok {
		return
	}
	st.target = target
	switch rt.Kind {
	case routeAgent:
		h.serveAgentRoot(rec, r, rt)
		return
	case routeUnknown:
		h.refuse(rec, http.StatusNotFound, "NOT_FOUND", "not found: WebDAV paths are /dav/{agent_id}/projects/... and /dav/{agent_id}/global/...")
		return
	}

	if !readMethod(r.Method) {
		if _, rest := restPut(r); !(h.opts.Writable || rest) || !mutationMethod(r.Method) {
			h.methodNotAllowed(rec)
			return
		}
		if r.Method == "COPY" || r.Method == "MOVE" {
			dst, ok := h.checkDestination(rec, r, rt)
			if !ok {
				return
			}
			m.DestinationPath = dst.AuditPath()
		}
	}
	release, ok := h.takeUploadSlot(rec, r, st)
	if !ok {
		return
	}
	defer release()
	rec.pre = rec.ResponseWriter.Header().Clone()
	h.proxy.ServeHTTP(rec, r)
}

// lookup resolves an agent, answering 404/503 itself when it cannot.
func (h *handler) lookup(w *recorder, agentID string) (*url.URL, bool) {
	ep, ok := h.opts.Agents(agentID)
	if !ok {
		h.refuse(w, http.StatusNotFound, "AGENT_NOT_FOUND", fmt.Sprintf("unknown agent %q", agentID))
		return nil, false
	}
	if ep == nil && h.opts.Unreachable != nil && h.opts.Unreachable(agentID) {
		h.metrics.unavailable.WithLabelValues(agentID).Inc()
		h.refuse(w, http.StatusServiceUnavailable, "SIDECAR_UNAVAILABLE", fmt.Sprintf("agent %q has no ready sidecar now", agentID))
		return nil, false
	}
	if ep == nil {
		h.refuse(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("agent %q has no WebDAV view (no sidecar davEndpoint configured)", agentID))
		return nil, false
	}
	if (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "" || (ep.Path != "" && ep.Path != "/") ||
		!davwire.ValidPrefix("/dav/"+agentID) {
		// Paths go to the sidecar unchanged, so a davEndpoint with a path
		// of its own cannot serve this view.
		h.log.Error("agent has an unusable davEndpoint (an http(s) URL without a path is required)", "agent_id", agentID)
		h.metrics.unavailable.WithLabelValues(agentID).Inc()
		h.refuse(w, http.StatusServiceUnavailable, "SIDECAR_UNAVAILABLE", fmt.Sprintf("the WebDAV service of agent %q is unavailable", agentID))
		return nil, false
	}
	return ep, true
}

// refuse answers with a short plain-text message. reason is the errtable
// reason, for the audit and (lower-cased) the rejection metric.
func (h *handler) refuse(w *recorder, status int, reason, msg string) {
	w.reason = reason
	switch status {
	case http.StatusMethodNotAllowed, http.StatusPreconditionRequired, http.StatusForbidden, http.StatusBadGateway,
		http.StatusPreconditionFailed, http.StatusBadRequest, http.StatusTooManyRequests:
		h.metrics.rejections.WithLabelValues(strings.ToLower(reason)).Inc()
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "no-store")
	hdr.Del("Content-Length")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}

// methodNotAllowed refuses a write on the read-only view, or a method the
// view does not serve at all.
func (h *handler) methodNotAllowed(w *recorder) {
	w.Header().Set("Allow", h.allow())
	if h.opts.Writable {
		h.refuse(w, http.StatusMethodNotAllowed, "NOT_SUPPORTED", "method not allowed here")
		return
	}
	h.refuse(w, http.StatusMethodNotAllowed, "READ_ONLY", "method not allowed: the WebDAV view is read-only")
}

func (h *handler) davOptions(w *recorder) {
	// The DAV compliance the view advertises: class 2 (locks) only where
	// clients may write.
	dav := "1"
	if h.opts.Writable {
		dav = "1, 2"
	}
	w.Header().Set("DAV", dav)
	w.Header().Set("MS-Author-Via", "DAV")
	w.Header().Set("Allow", h.allow())
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}
