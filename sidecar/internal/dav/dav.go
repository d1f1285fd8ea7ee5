// Package dav is the sidecar's WebDAV server: golang.org/x/net/webdav's
// Handler over the adapter's FileSystem (NewFileSystem, fs.go: WebDAV names
// onto davfs calls), inside one thin handler that does only what the
// library cannot:
//
//   - request IDs (X-Request-ID in and out), one log line per request (no
//     content, no host paths) and the sidecar_webdav_* metrics;
//   - refusing unsafe request paths, Destinations and If: resource tags
//     before the library sees them (dot or empty segments, encoded "/" or
//     "\", control characters, invalid UTF-8 → 400 INVALID_PATH). Nothing
//     is cleaned: what is logged and audited is what is acted on;
//   - If-Match / If-None-Match and the entity tags of If: lists handed
//     through the request's FileSystem (RequestState) to davfs, which
//     checks them at commit under its mutation lock; a replacing or removing write with neither a
//     precondition nor a held lock gets 428 (unless
//     Options.AllowUnconditionalWrites, or the gateway's
//     X-Workspace-Unconditional-Writes: keep with checkpoints enabled:
//     then what it replaces is first kept as a per-file version, and
//     X-Workspace-Kept-Versions names it); a create needs none and is
//     checked as If-None-Match: *;
//   - locks: x/net's in-memory lock system (exclusive only), with the
//     revision of each locked resource pinned when the lock was taken, so a
//     client that locks before it writes (Finder, Windows, davfs2) cannot
//     overwrite a change made meanwhile elsewhere; bounded in number, owner
//     size and timeout; refused on the virtual levels;
//   - the library's 404/405/500 refined into the statuses of the one error
//     table (contracts/errtable), every error response naming its reason in
//     X-Workspace-Error-Reason;
//   - bounds: PUT bodies (MaxUploadSize, 413), XML bodies (1 MiB), property
//     names per request (256), Depth: infinity PROPFIND refused (403);
//   - the gateway's wire contract: X-Forwarded-Prefix becomes the library's
//     Prefix (hrefs come out under /dav/{agent_id}), X-Workspace-Read-Only
//     makes a read-only view (DAV: 1, no DAV:supportedlock, writes 405);
//   - Cache-Control: no-store on GET, HEAD and PROPFIND, and GET's
//     Content-Type from the file name (never sniffed);
//   - the one fast path the issue allows (propfind_fast.go): a Depth 0/1
//     PROPFIND of DAV: live properties on a workspace collection is
//     streamed from davfs.ReadDirChunks, after every check above, with
//     x/net's answer (TestPropfindFastPathMatchesXNet proves it equal);
//     everything else falls through to the library.
//
// Dead properties are not stored; see fs_file.go (PROPPATCH) and
// docs/webdav-conformance.md.
package dav

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/davfs/usage"
	"github.com/agentworkspace/files/internal/davwire"
)

// Options configures New. Zero values take safe defaults.
type Options struct {
	// Logger receives one line per request. Nil: a null logger.
	Logger hclog.Logger
	// Registerer receives the metrics. Nil: kept but not registered.
	Registerer prometheus.Registerer
	// MaxUploadSize bounds a PUT body (413 above it; davfs enforces it while
	// streaming too). 0: 100 MiB.
	MaxUploadSize int64
	// AllowUnconditionalWrites lets a write replace or remove an existing
	// resource without If-Match, an If: entity tag or a held lock (the
	// behaviour of plain x/net/webdav, which litmus expects). Off in
	// production: such a write gets 428.
	AllowUnconditionalWrites bool
	// MaxLocks bounds the locks held at once (507 LOCK_LIMIT above). 0:
	// DefaultMaxLocks.
	MaxLocks int
	// MaxLocksPerOperator bounds the locks one operator (X-Operator) holds
	// at once (507 LOCK_LIMIT above), so one cannot fill the table. 0:
	// DefaultMaxLocksPerOperator.
	MaxLocksPerOperator int
	// MaxLockTimeout caps the timeout a LOCK may ask for (or refresh to).
	// 0: DefaultMaxLockTimeout.
	MaxLockTimeout time.Duration
	// DisablePropfindFastPath leaves every PROPFIND to x/net/webdav
	// (propfind_fast.go answers Depth 0/1 PROPFINDs of live properties on
	// a workspace collection itself otherwise). For tests and benchmarks.
	DisablePropfindFastPath bool
	// Usage answers the quota properties (quota.go). Nil: left out.
	Usage *usage.Cache
	// Now is the clock of durations in logs and metrics. Nil: time.Now.
	// (Locks use x/net/webdav's clock, time.Now.)
	Now func() time.Time
}

// Lock defaults. A client refreshes a lock well before it expires (Finder,
// Windows and davfs2 every few minutes), so 10 minutes costs them nothing,
// and a lock left behind by one that went away frees its name soon.
const (
	DefaultMaxLocks            = 1024
	DefaultMaxLocksPerOperator = 64
	DefaultMaxLockTimeout      = 10 * time.Minute
)

// Handler is the WebDAV server of one sidecar.
type Handler struct {
	dfs       *davfs.FS
	ck        *checkpoint.Store
	opts      Options
	metrics   *metrics
	locks     *lockPins
	names     *nameQueue // writes to one name wait for each other
	ridPrefix string
	ridSeq    atomic.Uint64
	fastPath  atomic.Uint64 // PROPFINDs propfind_fast.go answered (tests look)

	// requests holds the requests of reads (GET, HEAD, OPTIONS, PROPFIND)
	// that ended (reqpool.go): a small GET then allocates neither the
	// request nor its parts. Writes are never returned to it: an upload's
	// goroutine may still hold the request's FileSystem when the handler
	// returns (fs_file.go, startUpload).
	requests sync.Pool
}

// New returns the WebDAV handler over fs and its checkpoint store ck (nil:
// checkpoints off).
func New(fs *davfs.FS, ck *checkpoint.Store, opts Options) *Handler {
	ck = orDisabled(fs, ck)
	opts.Logger = cmp.Or(opts.Logger, hclog.NewNullLogger())
	if opts.MaxUploadSize <= 0 {
		opts.MaxUploadSize = 100 << 20
	}
	if opts.MaxLocks <= 0 {
		opts.MaxLocks = DefaultMaxLocks
	}
	if opts.MaxLocksPerOperator <= 0 {
		opts.MaxLocksPerOperator = DefaultMaxLocksPerOperator
	}
	if opts.MaxLockTimeout <= 0 {
		opts.MaxLockTimeout = DefaultMaxLockTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	var b [6 + 16]byte // request IDs', then lock tokens' random part
	_, _ = rand.Read(b[:])
	return &Handler{
		dfs:       fs,
		ck:        ck,
		opts:      opts,
		metrics:   newMetrics(opts.Registerer),
		locks:     newLockPins(opts.MaxLocks, opts.MaxLocksPerOperator, hex.EncodeToString(b[6:])+"-"),
		names:     newNameQueue(),
		ridPrefix: hex.EncodeToString(b[:6]) + "-",
	}
}

// request is one request in flight.
type request struct {
	h        *Handler
	r        *http.Request
	rec      *recorder
	ctx      context.Context
	fs       webdav.FileSystem // the request's FileSystem (RequestState)
	errs     *ErrorLog
	prefix   string
	src, dst string // WebDAV names (prefix stripped, unescaped, no trailing slash)
	hdr      davfs.Precondition
	ifRevs   map[string]string // name → revision an If: list's entity tag matched
	tokens   []string          // lock tokens the request holds (confirmed)
	newLock  string            // token a LOCK created
	libErr   error             // what the library told its Logger
	reason   string            // errtable reason of an error response
	aborted  bool              // a streamed answer broke off: end the connection

	keep   string           // the method, when the gateway says unconditionalWrites: keep
	quota  *Quota           // a PROPFIND's quota properties (quota.go)
	uncond *Unconditional   // what keeping did
	autos  *AutoCheckpoints // automatic checkpoints its deletes took

	dstRemoved bool     // COPY/MOVE: this request removed the destination (guardFS)
	refused    *refusal // a FileSystem call refused the request itself

	rid string // the request ID

	// The request's parts, held in it (one allocation, or none from
	// the handler's pool, instead of one each): rec, errs and fs point here.
	recv   recorder
	errLog ErrorLog
	dfs    davFS
	nml    noMultiLinks
	lib    webdav.Handler
	locks  requestLocks
	wire   requestWire
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	q := h.begin(w, r)
	q.serve()
	q.usageChanged()
	q.rec.filter.flush() // ends a response the library left open
	status := cmp.Or(q.rec.status, http.StatusOK)
	d := h.opts.Now().Sub(start)
	h.metrics.observe(r.Method, status, q.reason, d)
	aborted := q.aborted
	h.logRequest(q, status, d)
	q.done()
	if aborted {
		// After the log line: the client must not take what was sent
		// for a complete answer.
		panic(http.ErrAbortHandler)
	}
}

// begin sets the request ID and makes the request's state and FileSystem.
func (h *Handler) begin(w http.ResponseWriter, r *http.Request) *request {
	var rid string
	if v := r.Header[requestIDKey]; len(v) > 0 {
		rid = v[0] // Header.Get, without canonicalising the key again
	}
	if !safeID(rid) {
		var b [48]byte
		rid = string(strconv.AppendUint(append(b[:0], h.ridPrefix...), h.ridSeq.Add(1), 36))
	}
	// Set's key, assigned directly: canonicalising the constant on every
	// request costs an allocation.
	w.Header()[requestIDKey] = []string{rid}
	q := newRequest(h, w, r)
	q.rid = rid
	st := RequestState{Preconditions: q.wire.precondition, Errors: q.errs, Operator: r.Header.Get(davwire.OperatorHeader)}
	if r.Method == "PROPFIND" && h.opts.Usage != nil {
		q.quota = &Quota{Usage: h.opts.Usage, FS: h.dfs}
		st.Quota = q.quota
	}

	switch r.Method {
	case "DELETE", "MOVE", "COPY":
		// The handler's and the library's own looks at the target before
		// a delete are not a client's read of its revision (recursive
		// deletes keep work newer than the revision the client read).
		st.ForMutation = true
		fallthrough
	case http.MethodPut:
		if r.Header.Get(davwire.UnconditionalHeader) == davwire.UnconditionalKeep {
			q.keep = r.Method
		}
	case http.MethodGet, http.MethodHead, http.MethodPost:
		// The file is opened to be read or seeked: open it once.
		st.ContentReads = true
	case "PROPFIND":
		st.ListingReuse = true
	}
	if davwire.Methods[r.Method] { // only writes keep versions or take checkpoints
		q.uncond, q.autos = &Unconditional{}, &AutoCheckpoints{}
		st.Kept, st.AutoCheckpoints = q.uncond, q.autos
	}
	if r.Method == http.MethodOptions || r.Method == http.MethodPut {
		w.Header().Set(davwire.MaxUploadHeader, strconv.FormatInt(h.opts.MaxUploadSize, 10))
	}
	q.dfs.init(h.dfs, h.ck, st)
	q.nml = noMultiLinks{&q.dfs}
	q.fs = &q.nml
	return q
}

// The constant values of a read's headers, shared by every response
// (nothing appends to or edits a header's values in place; Set replaces
// them).
var (
	noStore = []string{"no-store"}
	noSniff = []string{"nosniff"}
)

// requestIDKey is davwire.RequestIDHeader's canonical form.
var requestIDKey = http.CanonicalHeaderKey(davwire.RequestIDHeader)

// logRequest writes the request's log line, at debug for a successful
// read, at error for a 5xx or an aborted answer.
func (h *Handler) logRequest(q *request, status int, d time.Duration) {
	r := q.r
	level := hclog.Debug
	switch {
	case status >= 500 || q.aborted:
		level = hclog.Error
	case r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != "PROPFIND" && r.Method != http.MethodOptions:
		level = hclog.Info
	}
	if level < h.opts.Logger.GetLevel() {
		return
	}
	args := []any{
		"method", r.Method, "path", r.URL.Path, "status", status,
		"duration_ms", strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64),
		"request_id", q.rid, "operator", r.Header.Get(davwire.OperatorHeader),
	}
	if q.reason != "" {
		args = append(args, "reason", q.reason)
	}
	if q.libErr != nil && status >= 400 {
		args = append(args, "error", q.libErr.Error())
	}
	h.opts.Logger.Log(level, "webdav request", args...)
}

// tooLarge is the message of a refused upload, with the limit.
func (h *Handler) tooLarge() string {
	return "the upload is larger than the upload limit (services.project.maxUploadSize: " +
		strconv.FormatInt(h.opts.MaxUploadSize, 10) + " bytes)"
}

// safeID accepts a client's request ID of up to 128 printable ASCII bytes.
func safeID(s string) bool {
	return s != "" && len(s) <= 128 && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' })
}

// workspaceOf is the workspace part of a name: "/projects/{p}", "/global",
// or the name itself for the levels above.
func workspaceOf(name string) string {
	if ws := davwire.Locate(strings.Split(strings.Trim(name, "/"), "/")).Workspace(); ws != "" {
		return ws
	}
	return name
}

func (q *request) serve() {
	if !q.checkHeaders() || !q.parseNames() || !q.checkMethod() {
		return
	}
	readOnly, ok := q.readOnlyView()
	if !ok || !q.prepareMethod() || !q.readXMLBody(readOnly) {
		return
	}
	if q.r.Method == http.MethodGet && q.r.URL.Query().Has(DownloadQuery) && q.download() {
		return
	}
	if davwire.Methods[q.r.Method] { // a write
		release, ok := q.queueWrite()
		if !ok {
			q.fail(499, "", "the client went away") // client closed request
			return
		}
		defer release()
		if !q.headerPreconditions() || !q.linkChecks() {
			return
		}
	}
	q.runLibrary()
}

// checkHeaders refuses a bad X-Forwarded-Prefix and headers that are not
// valid UTF-8, and takes the prefix. False: the request is answered.
func (q *request) checkHeaders() bool {
	r := q.r
	if vals, ok := r.Header[http.CanonicalHeaderKey(davwire.PrefixHeader)]; ok {
		if len(vals) != 1 || !davwire.ValidPrefix(vals[0]) {
			q.fail(http.StatusBadRequest, "INVALID_ARGUMENT", "invalid "+davwire.PrefixHeader)
			return false
		}
		q.prefix = vals[0]
	}
	for _, k := range utf8Headers {
		if vals := r.Header[k]; len(vals) > 0 && !utf8.ValidString(joined(vals)) {
			q.fail(http.StatusBadRequest, "INVALID_ARGUMENT", "the "+k+" header must be valid UTF-8")
			return false
		}
	}
	return true
}

// utf8Headers are the request headers that must be valid UTF-8, in
// canonical form (looked up without canonicalising them again).
var utf8Headers = [...]string{"Destination", "If", "Lock-Token", "If-Match", "If-None-Match", "Timeout", "Overwrite", "Depth"}

// joined is a header's values as one string (the one value itself).
func joined(vals []string) string {
	if len(vals) == 1 {
		return vals[0]
	}
	return strings.Join(vals, "")
}

// parseNames takes the request's WebDAV names (the path and, for COPY and
// MOVE, the Destination) and checks every path an If header names. False:
// the request is answered.
func (q *request) parseNames() bool {
	r := q.r
	if strings.HasPrefix(r.RequestURI, "//") {
		// net/http reads "//a/b" as host "a", path "/b": refuse rather
		// than act on a path the client did not write.
		q.fail(http.StatusBadRequest, "INVALID_PATH", "the path must not contain empty segments")
		return false
	}
	var ok bool
	if q.src, ok = q.name(r.URL.EscapedPath()); !ok {
		return false
	}
	if r.Method == "COPY" || r.Method == "MOVE" {
		u, err := url.Parse(r.Header.Get("Destination"))
		if err != nil || r.Header.Get("Destination") == "" {
			q.fail(http.StatusBadRequest, "INVALID_ARGUMENT", "missing or malformed Destination header")
			return false
		}
		if u.Host != "" && u.Host != r.Host {
			q.fail(http.StatusBadGateway, "INVALID_ARGUMENT", "the Destination is on another server")
			return false
		}
		if q.dst, ok = q.name(u.EscapedPath()); !ok {
			return false
		}
	}
	tags, ok := ifResourceTags(r.Header.Get("If"))
	if !ok {
		q.fail(http.StatusBadRequest, "INVALID_ARGUMENT", "malformed If header")
		return false
	}
	for _, t := range tags {
		u, err := url.Parse(t)
		if err != nil {
			q.fail(http.StatusBadRequest, "INVALID_ARGUMENT", "malformed If header")
			return false
		}
		if u.Host == "" || u.Host == r.Host {
			if _, ok := q.name(u.EscapedPath()); !ok {
				return false
			}
		}
	}
	return true
}

// checkMethod refuses a method that is not served and a COPY or MOVE
// outside one workspace or into itself. False: the request is answered.
func (q *request) checkMethod() bool {
	r, hdr := q.r, q.rec.Header()
	if _, ok := davwire.Methods[r.Method]; !ok { // not served
		hdr.Set("Allow", davwire.Allow(true)) // the gateway's header for the same refusal
		q.fail(http.StatusMethodNotAllowed, "NOT_SUPPORTED", "method not supported")
		return false
	}
	if q.dst != "" {
		switch {
		case workspaceOf(q.src) != workspaceOf(q.dst):
			q.fail(http.StatusForbidden, "READ_ONLY", "entries can only be copied or moved within one workspace")
			return false
		case q.src == q.dst:
			q.fail(http.StatusForbidden, "MOVE_INTO_SELF", "source and destination are the same")
			return false
		case strings.HasPrefix(q.dst, q.src+"/"):
			q.fail(http.StatusForbidden, "MOVE_INTO_SELF", "cannot copy or move a collection into itself")
			return false
		}
	}
	return true
}

// readOnlyView answers OPTIONS and refuses writes when the gateway's view is
// read-only (PROPFIND then hides locks). False: the request is answered.
func (q *request) readOnlyView() (readOnly, ok bool) {
	r, hdr := q.r, q.rec.Header()
	readOnly = r.Header.Get(davwire.ReadOnlyHeader) == "true"
	if readOnly {
		switch r.Method {
		case http.MethodOptions:
			hdr.Set("DAV", "1")
			hdr.Set("MS-Author-Via", "DAV")
			hdr.Set("Allow", davwire.AllowRead)
			hdr.Set("Content-Length", "0")
			q.rec.WriteHeader(http.StatusOK)
			return readOnly, false
		case http.MethodGet, http.MethodHead:
		case "PROPFIND":
			q.rec.filter = &lockFilter{w: q.rec.w}
		default:
			hdr.Set("Allow", davwire.AllowRead)
			q.fail(http.StatusMethodNotAllowed, "READ_ONLY", "this WebDAV view is read-only")
			return readOnly, false
		}
	}
	return readOnly, true
}

// prepareMethod sets the method's headers and checks its own limits (Depth,
// virtual levels, upload size), before the library sees the request. False:
// the request is answered.
func (q *request) prepareMethod() bool {
	r, hdr := q.r, q.rec.Header()
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost:
		// Canonical keys, assigned directly: the hot path of small GETs.
		hdr["Cache-Control"] = noStore
		hdr["Content-Type"] = []string{ContentType(path.Base(q.src))}
		hdr["X-Content-Type-Options"] = noSniff
	case "PROPFIND":
		hdr.Set("Cache-Control", "no-store")
		switch r.Header.Get("Depth") {
		case "0", "1":
		case "", "infinity":
			q.failXML(http.StatusForbidden, "NOT_SUPPORTED", "propfind-finite-depth")
			return false
		default:
			q.fail(http.StatusBadRequest, "INVALID_ARGUMENT", "Depth must be 0 or 1")
			return false
		}
	case "PROPPATCH":
		if virtualLevel(q.src, true) {
			q.fail(http.StatusForbidden, "READ_ONLY", "this level has no writable properties")
			return false
		}
	case "LOCK":
		if virtualLevel(q.src, false) {
			q.fail(http.StatusForbidden, "READ_ONLY", "this level cannot be locked")
			return false
		}
		r.Header.Set("Timeout", "Second-"+strconv.Itoa(int(q.lockTimeout().Seconds())))
	case http.MethodPut:
		if r.Header.Get("Content-Range") != "" {
			q.fail(http.StatusBadRequest, "INVALID_ARGUMENT", "partial PUT (Content-Range) is not supported")
			return false
		}
		if r.ContentLength > q.h.opts.MaxUploadSize {
			q.fail(http.StatusRequestEntityTooLarge, "TOO_LARGE", q.h.tooLarge())
			return false
		}
		// A body without Content-Length is cut off while it streams; the
		// upload then commits nothing (davfs aborts on a failed read).
		r.Body = http.MaxBytesReader(q.rec.w, r.Body, q.h.opts.MaxUploadSize)
	case "MOVE":
		if r.Header.Get("Overwrite") == "" {
			r.Header.Set("Overwrite", "T") // RFC 4918 §10.6; x/net reads a missing header as F
		}
	}
	return true
}

// readXMLBody buffers the XML body of PROPFIND, PROPPATCH and LOCK within
// its limit and serves a PROPFIND on the fast path when it can. False: the
// request is answered.
func (q *request) readXMLBody(readOnly bool) bool {
	r := q.r
	switch r.Method {
	case "PROPFIND", "PROPPATCH", "LOCK":
		body, refused, malformed := bufferXMLBody(r)
		switch {
		case refused != "":
			q.fail(http.StatusRequestEntityTooLarge, "TOO_LARGE", refused)
			return false
		case malformed != "":
			q.fail(http.StatusBadRequest, "INVALID_ARGUMENT", malformed)
			return false
		}
		if r.Method == "PROPFIND" && q.quota != nil && askedFor(body) {
			q.quota.asked.Store(true) // never on the fast path: not a live property there
		} else if r.Method == "PROPFIND" && !q.h.opts.DisablePropfindFastPath && q.propfindFast(body, readOnly) {
			return false
		}
	}
	return true
}

// runLibrary hands the request to x/net/webdav over the request's file
// system and locks, then answers a held-back failure or finishes a write.
func (q *request) runLibrary() {
	r := q.r
	fsys := q.fs
	if q.dst != "" {
		fsys = guardFS{FileSystem: fsys, q: q}
	}
	q.locks = requestLocks{p: q.h.locks, q: q}
	q.lib = webdav.Handler{Prefix: q.prefix, FileSystem: fsys, LockSystem: &q.locks, Logger: q.wire.libLog}
	q.lib.ServeHTTP(q.rec, r)
	if q.rec.status >= 400 { // held back
		q.fail(q.refine(q.rec.status, q.libErr))
		return
	}
	q.afterWrite()
}

// name checks an escaped request path (or Destination, or If: tag) and
// returns its WebDAV name. It answers the request itself when refused.
func (q *request) name(escaped string) (string, bool) {
	rest, ok := underPrefix(escaped, q.prefix)
	if !ok {
		q.fail(http.StatusNotFound, "NOT_FOUND", "not under "+davwire.PrefixHeader)
		return "", false
	}
	if msg := checkPath(rest); msg != "" {
		q.fail(http.StatusBadRequest, "INVALID_PATH", msg)
		return "", false
	}
	n, _ := url.PathUnescape(rest) // checkPath validated every escape
	return cleanName(n), true
}

// cleanName drops one trailing slash (davfs names have none). Paths here
// were checked: no dot or empty segment is left to clean.
func cleanName(n string) string {
	if len(n) > 1 {
		n = strings.TrimSuffix(n, "/")
	}
	return n
}

// virtualLevel reports whether name is "/", "/projects", "/global" or, with
// roots, a project's root directory.
func virtualLevel(name string, roots bool) bool {
	switch name {
	case "/", "/projects", "/global":
		return true
	}
	rest, ok := strings.CutPrefix(name, "/projects/")
	return roots && ok && !strings.Contains(rest, "/")
}

// lockTimeout is the LOCK's Timeout, capped by MaxLockTimeout ("Infinite"
// and a missing header get the cap).
func (q *request) lockTimeout() time.Duration {
	max := q.h.opts.MaxLockTimeout
	if v := splitList(q.r.Header.Get("Timeout")); len(v) > 0 {
		if s, ok := strings.CutPrefix(v[0], "Second-"); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && time.Duration(n) < max/time.Second {
				return time.Duration(n) * time.Second
			}
		}
	}
	return max
}

// headerPreconditions evaluates If-Match / If-None-Match against the
// Request-URI and keeps what davfs must re-check at commit.
func (q *request) headerPreconditions() bool {
	if v := q.r.Header.Get("If-Match"); v != "" {
		tags := splitList(v)
		if len(tags) == 1 && tags[0] != "*" {
			rev, ok := unquoteETag(tags[0])
			if !ok || (q.r.Method == "COPY" && rev != q.currentRevision(q.src)) {
				// A weak tag never matches strongly; COPY only reads its
				// source, so nothing re-checks it later.
				q.fail(http.StatusPreconditionFailed, "REVISION_MISMATCH", "If-Match: the resource has changed")
				return false
			}
			q.hdr.IfMatch = rev
		} else {
			cur := q.currentRevision(q.src)
			matched, concrete := false, false
			for _, t := range tags {
				if v, ok := unquoteETag(t); t == "*" || (ok && v == cur) {
					matched = cur != ""
					concrete = concrete || t != "*"
				}
			}
			if !matched {
				q.fail(http.StatusPreconditionFailed, "REVISION_MISMATCH", "If-Match: the resource has changed or does not exist")
				return false
			}
			// "If-Match: *" only says the resource exists: it names no
			// revision the client read, so where a precondition is
			// required it is none (428 unless a tag or a lock says more).
			if concrete || q.h.opts.AllowUnconditionalWrites {
				q.hdr.IfMatch = cur
			}
		}
	}
	if v := q.r.Header.Get("If-None-Match"); v != "" {
		if strings.TrimSpace(v) == "*" {
			q.hdr.IfNoneMatch = true
		} else if cur := q.currentRevision(q.src); cur != "" {
			for _, t := range splitList(v) {
				if rv, ok := unquoteETag(strings.TrimPrefix(t, "W/")); ok && rv == cur {
					q.fail(http.StatusPreconditionFailed, "REVISION_MISMATCH", "If-None-Match: the resource matches")
					return false
				}
			}
		}
	}
	return true
}

// linkChecks refuses, before the library acts, a COPY of a file with more
// than one hard link and a COPY or MOVE that would replace one (x/net
// deletes an existing destination before it copies; davfs refuses the
// replacement again at that delete).
func (q *request) linkChecks() bool {
	multi := func(name string) bool {
		fi, err := q.fs.Stat(q.ctx, name)
		if err != nil {
			return false
		}
		e, ok := fi.Sys().(davfs.Entry)
		return ok && e.Reason == davfs.NotEditableMultipleLinks
	}
	if (q.r.Method == "COPY" && multi(q.src)) || (q.dst != "" && q.r.Header.Get("Overwrite") != "F" && multi(q.dst)) {
		q.fail(http.StatusForbidden, "MULTIPLE_LINKS", "a file with more than one hard link is never copied or replaced")
		return false
	}
	return true
}

// currentRevision is the name's revision now, its ETag without the quotes
// ("" when it cannot be stat'ed, mismatch when its FileInfo names none).
func (q *request) currentRevision(name string) string {
	fi, err := q.fs.Stat(q.ctx, name)
	if err != nil {
		return ""
	}
	if r, ok := fi.(Revisioner); ok {
		return r.Revision()
	}
	return mismatch
}

// mismatch is a revision no resource has: a pin that can no longer hold.
const mismatch = "\x00changed"

func both(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return mismatch
}

// precondition is what davfs must check when this request writes name
// (RequestState.Preconditions).
func (q *request) precondition(name string) davfs.Precondition {
	p := davfs.Precondition{Required: !q.h.opts.AllowUnconditionalWrites}
	if p.Required {
		p.Keep = q.keep
	}
	m := q.r.Method
	if q.dstRemoved && (name == q.dst || strings.HasPrefix(name, q.dst+"/")) {
		// This request just removed the destination (guardFS): what it
		// writes there, or under it, now is a create, whatever the name's
		// pin or entity tag was.
		p.IfNoneMatch = true
		return p
	}
	if name == q.src && m != "COPY" && m != "LOCK" {
		p.IfMatch, p.IfNoneMatch = q.hdr.IfMatch, q.hdr.IfNoneMatch
	}
	if (m == "COPY" || m == "MOVE") && name == q.dst {
		p.Replacing = true
	}
	if v, ok := q.ifRevs[name]; ok {
		p.IfMatch = both(p.IfMatch, v)
	}
	for _, tok := range q.tokens {
		rev, created, known, ok := q.h.locks.pin(tok, name)
		if !ok {
			continue
		}
		if !known {
			// First write of a member of a depth-infinity lock, or of a
			// name that did not exist when it was locked: it must not have
			// changed since the lock was taken.
			fi, err := q.fs.Stat(q.ctx, name)
			if err != nil {
				break // missing: a create, checked as If-None-Match
			}
			// Judged by ctime, which no client sets: a mv, cp -p or touch -d
			// of an older file into the locked tree keeps an old mtime.
			changed := fi.ModTime()
			if e, ok := fi.Sys().(davfs.Entry); ok && !e.ChangeTime.IsZero() {
				changed = e.ChangeTime
			}
			rev = mismatch
			if !changed.After(created) {
				rev = q.currentRevision(name)
			}
		}
		p.IfMatch = both(p.IfMatch, rev)
		break
	}
	return p
}

// keptHeaders names, on success and on error alike, the automatic
// checkpoints the request's deletes took (davwire.AutoCheckpointHeader: a
// delete that failed after its checkpoint still left that checkpoint) and
// the versions a write kept because it went ahead without a precondition
// (davwire.KeptHeader: a MOVE or COPY that removed its destination, then
// could not finish, still names the version, so the gateway's audit of the
// failure says where what it removed is kept). Only a successful answer
// says KeptNone: the write went ahead by keeping and replaced nothing.
func (q *request) keptHeaders(failed bool) {
	if ids := q.autos.IDs(); len(ids) > 0 {
		q.rec.Header().Set(davwire.AutoCheckpointHeader, strings.Join(ids, ","))
	}
	switch used, ids := q.uncond.Used(); {
	case len(ids) > 0:
		q.rec.Header().Set(davwire.KeptHeader, strings.Join(ids, ","))
	case used && !failed:
		q.rec.Header().Set(davwire.KeptHeader, davwire.KeptNone)
	}
}

// afterWrite moves the pins of the locks the request held to what it
// wrote, and pins what a LOCK created.
func (q *request) afterWrite() {
	if q.rec.status >= 300 { // 0: the library wrote 200
		return
	}
	if _, _, known, ok := q.h.locks.pin(q.newLock, q.src); ok && !known { // "": no lock
		if rev := q.currentRevision(q.src); rev != "" {
			q.h.locks.move(q.newLock, q.src, rev)
		}
	}
	for _, tok := range q.tokens {
		switch q.r.Method {
		case http.MethodPut:
			rev, _ := unquoteETag(q.rec.Header().Get("ETag"))
			q.h.locks.move(tok, q.src, rev)
		case http.MethodDelete, "MOVE":
			q.h.locks.move(tok, q.src, "")
		}
		if q.dst != "" { // COPY, MOVE
			q.h.locks.move(tok, q.dst, q.currentRevision(q.dst))
		}
	}
}
