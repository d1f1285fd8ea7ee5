package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
)

// Live changes for browsers (issue #16, docs/live-changes.md):
//
//	GET /api/v1/agent-gateway/agents/{agent_id}/watch
//	    ?workspace.scope=PROJECT&workspace.project_name=demo
//	    &directory=&directory=src        (repeated; "" is the root)
//	    &resume_after=<event id>          (or the Last-Event-ID header)
//
// answered with Server-Sent Events: "event: change", "id: <event id>",
// "data: <WatchEvent as JSON>", a ": ping" comment every WatchHeartbeat,
// and "event: end" with the error body when the sidecar stream ends (the
// client reconnects and resumes). Errors before the first event are
// ordinary REST errors with the table's HTTP status. It is authenticated
// and authorised like every API route (requireAdmin); it is a GET, so a
// cookie session needs no CSRF header, and it changes nothing.

// WatchHeartbeat is the comment interval that keeps proxies from closing
// an idle stream.
const WatchHeartbeat = 15 * time.Second

// Watcher opens an agent's watch stream (mgmt.Service).
type Watcher interface {
	Watch(ctx context.Context, agentID string, req *workspacev1.WatchRequest) (mgmt.WatchRecv, error)
}

// WatchMetrics are the gateway's live-change figures.
type WatchMetrics struct {
	Streams *prometheus.GaugeVec
	Events  *prometheus.CounterVec
	Ends    *prometheus.CounterVec
}

// NewWatchMetrics registers the figures on reg.
func NewWatchMetrics(reg prometheus.Registerer) (*WatchMetrics, error) {
	m := &WatchMetrics{
		Streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agent_gateway_watch_streams", Help: "Open live-change (SSE) streams by agent.",
		}, []string{"agent_id"}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_watch_events_total", Help: "Live-change events relayed to browsers, by agent and kind.",
		}, []string{"agent_id", "kind"}),
		Ends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_watch_stream_ends_total", Help: "Live-change streams ended by the sidecar side (the client resumes), by agent and gRPC code.",
		}, []string{"agent_id", "code"}),
	}
	for _, c := range []prometheus.Collector{m.Streams, m.Events, m.Ends} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

var watchParams = map[string]bool{"workspace.scope": true, "workspace.project_name": true, "directory": true, "resume_after": true}

// watchRequest decodes the query strictly: unknown or repeated single
// parameters are refused, paths go to the sidecar unchanged (davfs refuses
// dot and empty segments; nothing is normalised here).
func watchRequest(r *http.Request) (*workspacev1.WatchRequest, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, mgmt.Error(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, "the query does not parse")
	}
	for k, v := range q {
		if !watchParams[k] {
			return nil, mgmt.Error(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, "unknown query parameter "+truncateParam(k))
		}
		if k != "directory" && len(v) > 1 {
			return nil, mgmt.Error(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, k+" given more than once")
		}
	}
	// The enum's names, as the REST routes take them (PROJECT or GLOBAL).
	scope := workspacev1.WorkspaceScope(workspacev1.WorkspaceScope_value[q.Get("workspace.scope")])
	if scope == workspacev1.WorkspaceScope_WORKSPACE_SCOPE_UNSPECIFIED {
		return nil, mgmt.Error(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_WORKSPACE, "workspace.scope must be PROJECT or GLOBAL")
	}
	if len(q["directory"]) == 0 {
		return nil, mgmt.Error(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, "name at least one directory")
	}
	ws := &workspacev1.WorkspaceRef{Scope: scope, ProjectName: q.Get("workspace.project_name")}
	req := &workspacev1.WatchRequest{Workspace: ws, Directories: q["directory"], ResumeAfter: q.Get("resume_after")}
	// EventSource's own reconnect sends the last id it saw: newer than the URL's.
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		req.ResumeAfter = id
	}
	return req, nil
}

func truncateParam(k string) string {
	k = strings.ToValidUTF8(k, "?")
	if len(k) > 64 {
		return k[:64]
	}
	return k
}

// WatchWriteTimeout bounds each write of a watch stream: a client that
// stops reading ends its stream instead of holding the handler (which
// would then never see Stopping).
const WatchWriteTimeout = 30 * time.Second

// DefaultWatchStreams caps the open watch streams per agent and gateway.
const DefaultWatchStreams = 256

// watchReauthEvery is how often, at most, the credentials are checked again
// before a write (besides every heartbeat).
const watchReauthEvery = time.Second

// streamAuth checks the stream's request again as requireAdmin did when it
// connected: a session signed out or expired, an operator removed or no
// longer admin end the stream.
func (s *Server) streamAuth(r *http.Request) *status.Status {
	id, err := s.opts.Auth.Authenticate(r)
	if err != nil {
		s.authFailure("401")
		return status.New(codes.Unauthenticated, "authentication required: the session or credentials are no longer valid")
	}
	if !id.Admin() {
		s.authFailure("403")
		return status.New(codes.PermissionDenied, "admin role required")
	}
	return nil
}

// watchSlot takes one of agentID's stream slots; false when all are taken.
func (s *Server) watchSlot(agentID string) (release func(), ok bool) {
	max := s.opts.WatchStreams
	if max <= 0 {
		max = DefaultWatchStreams
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watchOpen[agentID] >= max {
		return nil, false
	}
	if s.watchOpen == nil {
		s.watchOpen = map[string]int{}
	}
	s.watchOpen[agentID]++
	return func() {
		s.watchMu.Lock()
		defer s.watchMu.Unlock()
		if s.watchOpen[agentID]--; s.watchOpen[agentID] <= 0 {
			delete(s.watchOpen, agentID)
		}
	}, true
}

func (s *Server) watch(c echo.Context) error {
	r := c.Request()
	w := c.Response()
	if s.opts.Watch == nil {
		// The errtable row of NOT_SUPPORTED: FailedPrecondition, 409.
		return s.writeError(c, codes.FailedPrecondition, workspacev1.ErrorReason_NOT_SUPPORTED, "live changes are not available in this build")
	}
	agentID := c.Param("agent_id")
	req, err := watchRequest(r)
	if err != nil {
		respond(w, r, s.marshaler, status.Convert(err), 0)
		return nil
	}
	release, ok := s.watchSlot(agentID)
	if !ok {
		// Retryable: the portal backs off and reconnects.
		w.Header().Set("Retry-After", "5")
		return s.writeError(c, codes.ResourceExhausted, workspacev1.ErrorReason_TOO_MANY_STREAMS, "too many live-change streams for this agent; retry later")
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	recv, err := s.opts.Watch.Watch(ctx, agentID, req)
	if err != nil {
		respond(w, r, s.marshaler, status.Convert(err), 0)
		return nil
	}
	if m := s.opts.WatchMetrics; m != nil {
		m.Streams.WithLabelValues(agentID).Inc()
		defer m.Streams.WithLabelValues(agentID).Dec()
	}
	h := w.Header() // Cache-Control: no-store, as on every API response (securityHeaders)
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The deadline is the connection's: clear it for a kept-alive next request.
	defer rc.SetWriteDeadline(time.Time{})
	// Reconnect quickly after a gateway restart (EventSource's own retry).
	if !s.streamWrite(w, rc, []byte("retry: 1000\n\n")) {
		return nil
	}

	if end := s.streamEvents(ctx, w, rc, r, agentID, recv); end != nil {
		s.writeEnd(w, rc, agentID, end)
	}
	return nil
}

// watchItem is one answer of the sidecar's stream: an event or its end.
type watchItem struct {
	ev  *workspacev1.WatchEvent
	err error
}

// pumpWatch receives the sidecar's stream into a channel until recv fails
// or ctx ends.
func pumpWatch(ctx context.Context, recv mgmt.WatchRecv) <-chan watchItem {
	events := make(chan watchItem, 16)
	go func() {
		for {
			ev, err := recv()
			select {
			case events <- watchItem{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return events
}

// sessionExpiry fires when the session that authenticated r expires (never
// for other credentials); stop releases its timer.
func (s *Server) sessionExpiry(r *http.Request) (expired <-chan time.Time, stop func()) {
	if id, ok := auth.FromContext(r.Context()); ok && id.Session != nil {
		t := time.NewTimer(max(id.Session.Expires.Sub(s.now()), 0))
		return t.C, func() { t.Stop() }
	}
	return nil, func() {}
}

// streamEvents writes the stream's events and heartbeats until it ends. It
// returns why, to be sent as "event: end", or nil when the stream is over
// without a word (the client went away or stopped reading).
func (s *Server) streamEvents(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, r *http.Request, agentID string, recv mgmt.WatchRecv) *status.Status {
	events := pumpWatch(ctx, recv)
	interval := s.opts.WatchHeartbeat
	if interval <= 0 {
		interval = WatchHeartbeat
	}
	beat := time.NewTicker(interval)
	defer beat.Stop()
	// A session ends the stream when it expires, whatever comes before.
	expired, stop := s.sessionExpiry(r)
	defer stop()
	var end *status.Status // why the stream ends, sent as "event: end"
	lastAuth := time.Now()
	for end == nil {
		var out []byte
		select {
		case <-ctx.Done():
			return nil
		case <-s.opts.Stopping:
			// The gateway is stopping: end the stream so Shutdown does not
			// wait for it; the browser reconnects to the next gateway.
			end = status.New(codes.Unavailable, "the gateway is restarting; reconnect and resume")
		case <-expired:
			end = status.New(codes.Unauthenticated, "the session expired; sign in again")
		case <-beat.C:
			if end = s.streamAuth(r); end == nil {
				lastAuth = time.Now()
				out = []byte(": ping\n\n")
			}
		case it := <-events:
			var ok bool
			if out, end, ok = s.changeFrame(r, agentID, it, &lastAuth); !ok {
				return nil
			}
		}
		if end == nil && !s.streamWrite(w, rc, out) {
			return nil
		}
	}
	return end
}

// changeFrame turns one item of the sidecar's stream into its "event:
// change" frame, checking the credentials again at most every
// watchReauthEvery (lastAuth is when they last passed). end is why the
// stream ends instead; ok false ends it without a word.
func (s *Server) changeFrame(r *http.Request, agentID string, it watchItem, lastAuth *time.Time) (out []byte, end *status.Status, ok bool) {
	if it.err != nil {
		return nil, status.Convert(it.err), true
	}
	if time.Since(*lastAuth) >= watchReauthEvery {
		if end := s.streamAuth(r); end != nil {
			return nil, end, true
		}
		*lastAuth = time.Now()
	}
	data, err := s.marshaler.Marshal(it.ev)
	if err != nil {
		return nil, nil, false
	}
	if m := s.opts.WatchMetrics; m != nil {
		m.Events.WithLabelValues(agentID, strings.TrimPrefix(it.ev.GetKind().String(), "WATCH_EVENT_KIND_")).Inc()
	}
	return fmt.Appendf(make([]byte, 0, len(data)+len(it.ev.GetId())+32), "event: change\nid: %s\ndata: %s\n\n", it.ev.GetId(), data), nil, true
}

// streamWrite writes and flushes out under a fresh write deadline; false
// means the stream is over (the client is gone or not reading).
func (s *Server) streamWrite(w http.ResponseWriter, rc *http.ResponseController, out []byte) bool {
	d := s.opts.WatchWriteTimeout
	if d <= 0 {
		d = WatchWriteTimeout
	}
	if err := rc.SetWriteDeadline(time.Now().Add(d)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return false
	}
	if _, err := w.Write(out); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// writeEnd sends the reason the stream ends as "event: end" (the REST error
// body); the client reconnects with the last id it holds.
func (s *Server) writeEnd(w http.ResponseWriter, rc *http.ResponseController, agentID string, st *status.Status) {
	if m := s.opts.WatchMetrics; m != nil {
		m.Ends.WithLabelValues(agentID, st.Code().String()).Inc()
	}
	data, err := marshalError(s.marshaler, withReason(st))
	if err != nil {
		return
	}
	s.streamWrite(w, rc, append(append([]byte("event: end\ndata: "), data...), "\n\n"...))
}
