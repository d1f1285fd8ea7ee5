// Package davhandler serves the sidecar's WebDAV view of one agent's volumes.
//
// It is a thin handler in the style of golang.org/x/net/webdav, answering
// every method directly over the davfs API, because plain x/net/webdav is
// unsafe or wrong exactly where this product needs it to be right:
//
//   - GET/HEAD/PROPFIND carry ETag == davfs revision; If-Match and
//     If-None-Match are honoured on PUT, DELETE, MOVE and COPY (412), and the
//     expectation is handed to davfs so it is checked again at commit time.
//   - PUT streams into davfs.WriteStream: atomic, bounded by MaxUploadSize
//     (413 up front from Content-Length and while streaming), aborted uploads
//     never commit, Content-Range is refused (400), chunked bodies work.
//   - davfs errors map to 403/404/409/412/413/423/507 (errors.go), never to
//     x/net/webdav's 404/405 defaults.
//   - PROPFIND streams Depth 0/1 multistatus XML straight from davfs.ReadDir;
//     Depth infinity is refused (403 propfind-finite-depth).
//   - The If: header is evaluated in full (lock tokens AND entity tags, Not),
//     which x/net/webdav's memLS does not do; locks (exclusive and shared)
//     live in memory, expire, and are capped by MaxLockTimeout.
//   - MOVE/COPY stay inside one workspace; the /projects/ level is read-only.
//
// What it does not do: dead properties set by PROPPATCH live in memory only
// (lost on restart, bounded in number); locks are not persisted and do not
// bind the gRPC surface (revisions protect that side).
package davhandler

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/davfs"
)

// Options configures New. Zero values take safe defaults.
type Options struct {
	// Logger receives one line per request (never content). Nil: a null logger.
	Logger hclog.Logger
	// Registerer receives the handler's metrics. Nil: metrics are kept but
	// not registered anywhere.
	Registerer prometheus.Registerer
	// MaxUploadSize bounds a PUT body (413 above it). 0: 100 MiB.
	MaxUploadSize int64
	// MaxLockTimeout caps the timeout a LOCK may ask for. 0: 1 hour.
	MaxLockTimeout time.Duration
	// Now is the clock for locks. Nil: time.Now.
	Now func() time.Time
	// MaxPageSize is the page size used to list /projects/. 0: 500.
	MaxPageSize int
}

const (
	defaultMaxUploadSize  = 100 << 20
	defaultMaxLockTimeout = time.Hour
)

// New returns the WebDAV handler over fs.
func New(fs *davfs.FS, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.MaxUploadSize <= 0 {
		opts.MaxUploadSize = defaultMaxUploadSize
	}
	if opts.MaxLockTimeout <= 0 {
		opts.MaxLockTimeout = defaultMaxLockTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxPageSize <= 0 {
		opts.MaxPageSize = 500
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &handler{
		ridPrefix: hex.EncodeToString(b[:]) + "-",
		fs:        fs,
		opts:      opts,
		log:       opts.Logger,
		metrics:   newMetrics(opts.Registerer),
		locks:     newLockManager(opts.Now),
		props:     newDeadProps(),
		bufs:      sync.Pool{New: func() any { return newPropWriter() }},
		chunks:    sync.Pool{New: func() any { return &propWriter{buf: make([]byte, 0, 192<<10)} }},
		small:     sync.Pool{New: func() any { b := make([]byte, smallBody); return &b }},
	}
}

type handler struct {
	ridPrefix string
	ridSeq    atomic.Uint64
	fs        *davfs.FS
	opts      Options
	log       hclog.Logger
	metrics   *metrics
	locks     *lockManager
	props     *deadProps
	bufs      sync.Pool // *propWriter with a bufio.Writer, one per response
	chunks    sync.Pool // *propWriter buffers for parallel rendering
	small     sync.Pool // *[]byte for small GET bodies
}

// statusWriter records the status for logs and metrics.
type statusWriter struct {
	http.ResponseWriter
	small  *sync.Pool // *[]byte of smallBody bytes
	status int
	bytes  int64
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(p)
	s.bytes += int64(n)
	return n, err
}

// smallBody is the size up to which a GET body is copied through one
// buffer instead of sendfile: for small files the sniff copy, the header
// flush and the sendfile calls cost more syscalls than a single write.
const smallBody = 32 << 10

// ReadFrom keeps sendfile working for big GETs through http.ServeContent
// (net/http hands an *os.File to the socket), and copies small ones in one
// write.
func (s *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if lr, ok := src.(*io.LimitedReader); ok && lr.N <= smallBody {
		bp := s.small.Get().(*[]byte)
		defer s.small.Put(bp)
		n, err := io.ReadFull(lr, (*bp)[:lr.N])
		if err == io.ErrUnexpectedEOF {
			err = nil
		}
		if n > 0 {
			w, werr := s.ResponseWriter.Write((*bp)[:n])
			s.bytes += int64(w)
			if werr != nil {
				return int64(w), werr
			}
		}
		return int64(n), err
	}
	if rf, ok := s.ResponseWriter.(io.ReaderFrom); ok {
		n, err := rf.ReadFrom(src)
		s.bytes += n
		return n, err
	}
	n, err := io.Copy(struct{ io.Writer }{s.ResponseWriter}, src)
	s.bytes += n
	return n, err
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rid := r.Header.Get("X-Request-ID")
	if rid == "" || len(rid) > 128 {
		// Unique per process: a random prefix chosen at New and a counter.
		rid = h.ridPrefix + strconv.FormatUint(h.ridSeq.Add(1), 36)
	}
	w.Header()["X-Request-Id"] = []string{rid}
	req := &request{h: h, r: r, rid: rid}
	req.sw = statusWriter{ResponseWriter: w, small: &h.small}
	req.w = &req.sw
	sw := req.w
	req.serve()
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	d := time.Since(start)
	h.metrics.observe(r.Method, sw.status, d)
	level := hclog.Debug
	if sw.status >= 500 {
		level = hclog.Error
	} else if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != "PROPFIND" && r.Method != http.MethodOptions {
		level = hclog.Info
	}
	if level < h.log.GetLevel() {
		return
	}
	args := []any{
		"method", r.Method, "path", r.URL.Path, "status", sw.status,
		"duration_ms", strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64),
		"request_id", rid, "operator", r.Header.Get("X-Operator"),
	}
	if req.reason != "" {
		args = append(args, "reason", string(req.reason))
	}
	if req.detail != nil {
		args = append(args, "error", req.detail.Error())
	}
	h.log.Log(level, "webdav request", args...)
}
