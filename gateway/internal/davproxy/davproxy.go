// Package davproxy is the gateway's WebDAV view: an http.Handler mounted at
// /dav/ that reverse-proxies (net/http/httputil.ReverseProxy)
// /dav/{agent_id}/projects/... and /dav/{agent_id}/global/... to that
// agent's sidecar WebDAV server, and answers /dav/ and /dav/{agent_id}/
// itself (virtual.go).
//
// The wire contract with the sidecar (internal/davwire):
//   - Request paths and Destination headers are forwarded unchanged; the
//     proxy sets X-Forwarded-Prefix: /dav/{agent_id} (after deleting any
//     client copy) and the sidecar emits its hrefs under it. The client's
//     Host is kept, so the sidecar's Destination host check matches.
//   - X-Workspace-Read-Only: true when the view is read-only;
//     X-Workspace-Unconditional-Writes: keep on writes with
//     webdav.unconditionalWrites: keep, and the sidecar's
//     X-Workspace-Kept-Versions answer is audited and stripped.
//   - The sidecar names the errtable reason of every error response in
//     X-Workspace-Error-Reason; the proxy strips it and audits with it.
//
// What it guarantees:
//   - Read-only unless Options.Writable: only OPTIONS, GET, HEAD and
//     PROPFIND reach a sidecar; everything else is answered 405 with an
//     Allow header.
//   - Unsafe request paths and Destinations (dot or empty segments, encoded
//     separators, invalid UTF-8) are refused with 400 and a reason, never
//     normalised; a Destination in another agent or workspace is 403, on
//     another host 502.
//   - Statuses pass through faithfully, 1xx included: the client gets one
//     100 Continue, only once the sidecar sent its own, and the final
//     status follows it.
//   - Towards the sidecar, Authorization, Cookie, the CSRF header and any
//     client X-Operator, X-Request-ID, X-Forwarded-* and X-Workspace-*
//     headers are removed; X-Operator and X-Request-ID come from the
//     Options getters.
//   - No sidecar address reaches the client or the log: a sidecar that
//     cannot be reached gives 503 (504 when it sends no response headers
//     within its timeout) with a message naming only the agent; log lines
//     carry the cause without the address; a response header naming the
//     sidecar's host is dropped.
//   - Bodies stream both ways (FlushInterval -1); the header timeout never
//     cuts a body.
//   - At most limits.uploadsPerAgent (Options.Uploads) request bodies are in flight per
//     agent; one more is answered 429 TOO_MANY_UPLOADS (Retry-After)
//     before any of it is read or anything reaches the sidecar.
//
// What it does not do: authenticate (the gateway's auth middleware runs in
// front and sets the identity read by Options.Operator), check
// preconditions or revisions (the sidecar is the authority: it answers 428
// and 412 itself), or look inside bodies.
package davproxy

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/uploads"
)

// Options configure the WebDAV view. Agents is required; everything else has
// a safe default.
type Options struct {
	// Agents resolves an agent ID to its sidecar WebDAV endpoint
	// (webdav base URL, e.g. https://agent-codex-a-sidecar:9092, without a
	// path). ok=false means no such agent (404); ok=true with a nil
	// endpoint means the agent exists but has no WebDAV view (404 with a
	// message saying so). The handler never modifies the returned URL
	// (the outbound request's URL is a copy of it), so the same *url.URL
	// may be returned on every call and shared.
	Agents func(agentID string) (davEndpoint *url.URL, ok bool)
	// Unreachable, when set, tells a known agent with no endpoint now (a
	// discovered agent without a ready address: 503) from one that has no
	// WebDAV view at all (404).
	Unreachable func(agentID string) bool
	// Timeout is the agent's sidecar.timeout: how long the proxy waits for
	// the sidecar's response headers (after the request body is sent)
	// before answering 504. Nil or a non-positive value uses
	// DefaultTimeout.
	Timeout func(agentID string) time.Duration
	// AgentIDs lists the configured agents, for PROPFIND /dav/, in any
	// order; it may include agents without a davEndpoint (the gateway
	// passes every configured agent). The root listing sorts the IDs and
	// leaves out those that Agents resolves to no endpoint. Nil lists none.
	AgentIDs func() []string
	// Writable is webdav.writable.
	Writable bool
	// KeepUnconditional is webdav.unconditionalWrites: keep (with
	// Writable): every write request tells the sidecar to let a write
	// without a precondition through once what it replaces is kept as a
	// per-file version (davwire.UnconditionalHeader).
	KeepUnconditional bool
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
	// Uploads bounds the request bodies in flight per agent (the gateway's
	// limits.uploadsPerAgent, shared with REST): one over it is answered
	// 429 TOO_MANY_UPLOADS with Retry-After, unread. Nil: no cap.
	Uploads *uploads.Slots
	// Logger gets proxy errors; nil discards.
	Logger hclog.Logger
	// Registerer gets the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Transport, when set, reaches every sidecar (tests); nil gives each
	// agent a tuned *http.Transport with its Timeout and TLS.
	Transport http.RoundTripper
	// TLS is the client config for an agent's sidecar (mutual TLS, the
	// sidecar's name checked); nil or a nil config dials without TLS (an
	// https:// endpoint then fails verification against the system roots).
	TLS func(agentID string) *tls.Config
	// Now is the clock for durations; nil uses time.Now.
	Now func() time.Time
}

// DefaultTimeout is the header timeout when Options.Timeout gives none
// (the gateway's default sidecar.timeout).
const DefaultTimeout = 10 * time.Second

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
	// Reason is the errtable reason of a failure: the one the sidecar named
	// in X-Workspace-Error-Reason, or the gateway's own for its refusals;
	// empty on success (and when a sidecar error named none).
	Reason string
	// Unconditional: the write went ahead without a precondition because
	// of KeepUnconditional; KeptVersions are the IDs (comma-separated) of
	// the per-file versions the sidecar kept of what it replaced (empty
	// for a write that replaced nothing).
	Unconditional bool
	KeptVersions  string
	// AutoCheckpoints are the IDs (comma-separated) of the automatic
	// checkpoints the sidecar took before the request's delete (a
	// recursive DELETE, or the removal of a COPY or MOVE destination
	// directory), whatever its outcome.
	AutoCheckpoints string
	// Code is the gRPC code of the outcome: OK below 400,
	// errtable.For(Reason).Code for a failure with a reason,
	// DeadlineExceeded for a sidecar that timed out, Canceled when the
	// client went away, Unknown for a sidecar error without a reason.
	Code codes.Code
}

// Redacted replaces GLOBAL paths outside skills/ and AGENTS.md in Mutation.
const Redacted = audit.Redacted

type handler struct {
	opts    Options
	log     hclog.Logger
	now     func() time.Time
	proxy   *httputil.ReverseProxy
	metrics *metrics
	bufs    sync.Pool

	mu         sync.Mutex
	transports map[string]*http.Transport // by agent ID, each with its timeout
}

// New returns the WebDAV view handler. It expects request paths that start
// with /dav/ (or are exactly /dav); for any other path it answers OPTIONS
// with the DAV headers (so the gateway may route "OPTIONS /" here, which
// Windows' WebDAV client sends first) and 404 otherwise.
func New(opts Options) (http.Handler, error) {
	if opts.Agents == nil {
		return nil, errors.New("davproxy: Options.Agents is required")
	}
	h := &handler{opts: opts, log: cmp.Or(opts.Logger, hclog.NewNullLogger()).Named("davproxy"), now: opts.Now, transports: map[string]*http.Transport{}}
	if h.now == nil {
		h.now = time.Now
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	h.metrics = m
	h.bufs.New = func() any { b := make([]byte, copyBufferSize); return &b }
	h.proxy = &httputil.ReverseProxy{
		Rewrite:        h.rewrite,
		Transport:      roundTripper(h.roundTrip),
		FlushInterval:  -1,
		ModifyResponse: h.modifyResponse,
		ErrorHandler:   h.proxyError,
		BufferPool:     (*bufferPool)(&h.bufs),
		// ReverseProxy logs body copy errors itself, with the connection's
		// addresses in them: scrubbed (transport.go).
		ErrorLog: log.New(scrubWriter{h.log}, "", 0),
	}
	return h, nil
}

const copyBufferSize = 256 << 10

type bufferPool sync.Pool

func (p *bufferPool) Get() []byte  { return *((*sync.Pool)(p).Get().(*[]byte)) }
func (p *bufferPool) Put(b []byte) { (*sync.Pool)(p).Put(&b) }

type reasonKey struct{}

// WithReason marks a request the gateway hands the view itself (the REST
// download): its error answer keeps the sidecar's errtable reason in
// davwire.ReasonHeader, which the caller turns into a REST error and
// removes.
func WithReason(ctx context.Context) context.Context {
	return context.WithValue(ctx, reasonKey{}, true)
}

type restPutKey struct{}

// RESTPut is how the gateway's REST upload writes one file through this
// view whatever webdav.writable says (REST writes are the admin's, as
// every REST mutation; webdav.writable governs the WebDAV clients): a PUT
// whose context carries it is proxied as on a writable view; with keep,
// the sidecar is told to keep what it replaces as a per-file version
// (honoured with checkpoints on; 428 otherwise).
type RESTPut struct{ Keep bool }

// WithRESTPut marks a PUT the REST upload hands the view.
func WithRESTPut(ctx context.Context, p RESTPut) context.Context {
	return context.WithValue(ctx, restPutKey{}, p)
}

// restPut is r's RESTPut, if it is a PUT carrying one.
func restPut(r *http.Request) (RESTPut, bool) {
	p, ok := r.Context().Value(restPutKey{}).(RESTPut)
	return p, ok && r.Method == http.MethodPut
}
