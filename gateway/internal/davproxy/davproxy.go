// Package davproxy is the gateway's WebDAV view: an http.Handler mounted at
// /dav/ that reverse-proxies /dav/{agent_id}/projects/... and
// /dav/{agent_id}/global/... to that agent's sidecar WebDAV server, which
// serves the same tree at /projects/... and /global/....
//
// What it guarantees:
//   - Read-mostly: unless Options.Writable is set, only OPTIONS, GET, HEAD and
//     PROPFIND reach a sidecar; everything else is answered 405 with an Allow
//     header. When writable, PUT, DELETE and MOVE of an existing resource need
//     If-Match and creating one needs "If-None-Match: *", otherwise 428 (see
//     precondition.go for how existence is learnt).
//   - The client only ever sees /dav/{agent_id}/... paths: PROPFIND hrefs
//     (rewritten while streaming, never buffered whole), Location,
//     Content-Location and Destination are translated both ways, and a
//     Destination in another agent, workspace or host is refused.
//   - No sidecar address reaches the client: absolute hrefs become paths,
//     Server and any header naming the upstream host are dropped, and a
//     sidecar that cannot be reached gives 503 with a message naming only the
//     agent.
//   - Towards the sidecar, Authorization, Cookie and any client X-Operator are
//     removed; X-Operator and X-Request-ID come from the Options getters.
//   - Bodies stream both ways (FlushInterval -1); nothing is held in memory
//     beyond a copy buffer, except small (≤ 64 KiB) error bodies. A GET's
//     file content goes from the sidecar's socket to the client's with
//     splice(2) where it can (splice.go).
//
// What it does not do: authenticate (the gateway's auth middleware runs in
// front and sets the identity read by Options.Operator), compare revisions
// (the sidecar is the authority for If-Match and answers 412 itself), or look
// inside file content.
package davproxy

import (
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure the WebDAV view. Agents is required; everything else has
// a safe default.
type Options struct {
	// Agents resolves an agent ID to its sidecar WebDAV endpoint
	// (webdav base URL, e.g. http://agent-codex-a-sidecar:9092). ok=false
	// means no such agent (404); ok=true with a nil endpoint means the agent
	// exists but has no WebDAV view (404 with a message saying so).
	Agents func(agentID string) (davEndpoint *url.URL, ok bool)
	// AgentIDs lists the configured agents, for PROPFIND /dav/. Agents
	// without a davEndpoint are left out. Nil lists none.
	AgentIDs func() []string
	// Writable is webdav.writable.
	Writable bool
	// Operator returns the authenticated identity set by the auth
	// middleware. It is sent to the sidecar as X-Operator (any client value
	// is replaced).
	Operator func(r *http.Request) string
	// RequestID returns the request's ID; sent to the sidecar as
	// X-Request-ID and set on the response when the response has none yet.
	RequestID func(r *http.Request) string
	// OnMutation is the audit hook: called exactly once for every request
	// with a mutating method (PUT, DELETE, MKCOL, COPY, MOVE, PROPPATCH,
	// LOCK, UNLOCK), after the response, including refused ones (405, 428,
	// 403, 404, 503...).
	OnMutation func(r *http.Request, m Mutation)
	// Logger gets proxy errors; nil discards.
	Logger hclog.Logger
	// Registerer gets the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Transport reaches the sidecars; nil uses a tuned *http.Transport.
	Transport http.RoundTripper
	// Now is the clock for durations; nil uses time.Now.
	Now func() time.Time
}

// Mutation describes one mutation attempt for the audit log. Paths are
// relative to the workspace root (a project directory, or the global root),
// never absolute host paths; in the GLOBAL scope anything outside skills/ and
// AGENTS.md is "[redacted]".
type Mutation struct {
	AgentID         string
	Action          string // "webdav.PUT", "webdav.MOVE", ...
	Scope           string // "PROJECT" or "GLOBAL"; "" when the path names neither
	Project         string // PROJECT scope only
	SourcePath      string
	DestinationPath string // COPY and MOVE only, when the Destination is in the same workspace
	Status          int    // HTTP status returned to the client
	Duration        time.Duration
	RequestID       string
	Operator        string
	// Reason is a short machine-readable word for refusals made by the
	// gateway itself ("read_only", "precondition_required",
	// "destination_refused", "unknown_agent", "sidecar_unavailable", ...);
	// empty when the sidecar answered.
	Reason string
}

// Redacted replaces GLOBAL paths outside skills/ and AGENTS.md in Mutation.
const Redacted = "[redacted]"

type handler struct {
	opts    Options
	log     hclog.Logger
	now     func() time.Time
	proxy   *httputil.ReverseProxy
	rt      http.RoundTripper
	raw     *rawPool // GETs with splice (splice.go); nil with a custom Transport
	metrics *metrics
	bufs    sync.Pool
}

// New returns the WebDAV view handler. It expects request paths that start
// with /dav/ (or are exactly /dav); for any other path it answers OPTIONS
// with the DAV headers (so the gateway may route "OPTIONS /" here, which
// Windows' WebDAV client sends first) and 404 otherwise.
func New(opts Options) (http.Handler, error) {
	if opts.Agents == nil {
		return nil, errors.New("davproxy: Options.Agents is required")
	}
	h := &handler{opts: opts, log: opts.Logger, now: opts.Now, rt: opts.Transport}
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	h.log = h.log.Named("davproxy")
	if h.now == nil {
		h.now = time.Now
	}
	if h.rt == nil {
		h.rt = newTransport()
		h.raw = newRawPool()
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	h.metrics = m
	h.bufs.New = func() any { b := make([]byte, copyBufferSize); return &b }
	h.proxy = &httputil.ReverseProxy{
		Rewrite:        h.rewrite,
		Transport:      h.rt,
		FlushInterval:  -1,
		ModifyResponse: h.modifyResponse,
		ErrorHandler:   h.proxyError,
		BufferPool:     (*bufferPool)(&h.bufs),
		ErrorLog:       h.log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	}
	return h, nil
}

const copyBufferSize = 256 << 10

type bufferPool sync.Pool

func (p *bufferPool) Get() []byte  { return *((*sync.Pool)(p).Get().(*[]byte)) }
func (p *bufferPool) Put(b []byte) { (*sync.Pool)(p).Put(&b) }
