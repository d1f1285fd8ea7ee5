package davproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// File content is most of what the WebDAV view moves, and
// httputil.ReverseProxy copies every byte of it through user space twice
// (read from the sidecar socket, write to the client socket). For a plain
// GET, serveGet instead talks HTTP/1.1 to the sidecar over its own
// keep-alive connections (rawPool) and, once the response head is
// processed exactly as the proxy would (modifyResponse), hands the body to
// the client connection's ReadFrom, which on Linux moves it socket to
// socket with splice(2) without it entering the process.
//
// It takes only what it can do that way: a GET without a body or Upgrade,
// from a plain-HTTP/1.x client, to a plain-http sidecar endpoint, with the
// default transport; everything else goes through the ReverseProxy. Of the
// responses, only a 200 or 206 with a Content-Length is spliced; others
// (errors, 304, chunked) are copied like the proxy copies them. Response
// trailers and 1xx responses are dropped (the sidecar sends neither).
//
// It assumes that the ResponseWriters wrapping the server's own (found by
// Unwrap) pass the body through unchanged, as the recorder and echo's
// Response do: the spliced bytes bypass them, and only the recorder's byte
// count is kept up to date.

// rawPool holds idle keep-alive connections to sidecar WebDAV endpoints,
// by host:port. Its settings mirror newTransport.
type rawPool struct {
	dialer        net.Dialer
	headerTimeout time.Duration // request write + response head, like ResponseHeaderTimeout
	idleTimeout   time.Duration
	maxIdle       int // per address

	mu      sync.Mutex
	idle    map[string][]*rawConn
	nIdle   int         // idle connections over all addresses (at most maxIdleTotal)
	janitor *time.Timer // set while idle connections wait to expire (sweep)

	// For tests and debugging.
	dials   atomic.Int64 // connections dialed
	open    atomic.Int64 // connections dialed and not yet closed
	splices atomic.Int64 // response bodies handed to ReadFrom
	retries atomic.Int64 // stale pooled connections retried on a fresh one
}

func newRawPool() *rawPool {
	return &rawPool{
		dialer:        net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		headerTimeout: 2 * time.Minute,
		idleTimeout:   90 * time.Second,
		maxIdle:       16,
		idle:          map[string][]*rawConn{},
	}
}

// maxIdleTotal caps the idle connections over all sidecars (as
// newTransport's MaxIdleConns).
const maxIdleTotal = 256

// rawConn is one connection to a sidecar. Reads go through br, which reads
// through the rawConn itself so that a response head can be bounded.
type rawConn struct {
	pool     *rawPool
	addr     string
	tc       *net.TCPConn
	br       *bufio.Reader
	bw       *bufio.Writer
	reused   bool
	idleAt   time.Time
	headLeft int64       // bytes br may still read; bounds a response head
	stop     func() bool // stops the context watch of the current exchange
}

// maxHeadBytes bounds a response head (http.Transport's default is 10 MiB;
// a sidecar's is well under 4 KiB).
const maxHeadBytes = 1 << 20

var (
	errHeadTooLarge = errors.New("response head too large")
	// errNoResponse marks a failure before any byte of the response arrived
	// (on a reused connection: most likely the sidecar closed it while idle).
	errNoResponse = errors.New("no response from the sidecar")
)

func (c *rawConn) Read(p []byte) (int, error) {
	if c.headLeft <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > c.headLeft {
		p = p[:c.headLeft]
	}
	n, err := c.tc.Read(p)
	c.headLeft -= int64(n)
	return n, err
}

func (c *rawConn) close() {
	if c.tc.Close() == nil {
		c.pool.open.Add(-1)
	}
}

// get returns an idle connection to addr, or dials one (always dials when
// fresh is set).
func (p *rawPool) get(ctx context.Context, addr string, fresh bool) (*rawConn, error) {
	if !fresh {
		p.mu.Lock()
		for l := p.idle[addr]; len(l) > 0; l = p.idle[addr] {
			c := l[len(l)-1]
			p.idle[addr] = l[:len(l)-1]
			p.nIdle--
			if time.Since(c.idleAt) < p.idleTimeout && !c.hasBytesWaiting() {
				p.mu.Unlock()
				c.reused = true
				return c, nil
			}
			c.close()
		}
		p.mu.Unlock()
	}
	nc, err := p.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return nil, errors.New("sidecar dial: not a TCP connection")
	}
	p.dials.Add(1)
	p.open.Add(1)
	c := &rawConn{pool: p, addr: addr, tc: tc, bw: bufio.NewWriterSize(tc, 4<<10)}
	c.br = bufio.NewReaderSize(c, 16<<10)
	return c, nil
}

// release ends an exchange: the connection goes back to the pool only when
// reusable (its response fully read, nothing more buffered) and the context
// watch had not fired.
func (p *rawPool) release(c *rawConn, reusable bool) {
	if c.stop != nil && !c.stop() {
		reusable = false // the watch fired: the deadline is in the past
	}
	c.stop = nil
	if !reusable || c.br.Buffered() != 0 {
		c.close()
		return
	}
	c.idleAt = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle[c.addr]) >= p.maxIdle || p.nIdle >= maxIdleTotal {
		c.close()
		return
	}
	p.idle[c.addr] = append(p.idle[c.addr], c)
	p.nIdle++
	if p.janitor == nil {
		p.janitor = time.AfterFunc(p.idleTimeout, p.sweep)
	}
}

// sweep closes the connections idle for idleTimeout or longer (a sidecar
// that went away, or a quiet period), and comes back while any remain.
func (p *rawPool) sweep() {
	p.mu.Lock()
	var expired []*rawConn
	now := time.Now()
	next := time.Duration(-1)
	for addr, l := range p.idle {
		keep := l[:0]
		for _, c := range l {
			if age := now.Sub(c.idleAt); age >= p.idleTimeout {
				expired = append(expired, c)
				p.nIdle--
			} else {
				keep = append(keep, c)
				if left := p.idleTimeout - age; next < 0 || left < next {
					next = left
				}
			}
		}
		if len(keep) == 0 {
			delete(p.idle, addr)
		} else {
			p.idle[addr] = keep
		}
	}
	p.janitor = nil
	if next >= 0 {
		p.janitor = time.AfterFunc(next, p.sweep)
	}
	p.mu.Unlock()
	for _, c := range expired {
		c.close()
	}
}

// dropIdle closes the idle connections to addr (after one turned out stale,
// the others, from the same sidecar run, are too).
func (p *rawPool) dropIdle(addr string) {
	p.mu.Lock()
	l := p.idle[addr]
	delete(p.idle, addr)
	p.nIdle -= len(l)
	p.mu.Unlock()
	for _, c := range l {
		c.close()
	}
}

// roundTrip sends req and reads the response head. A reused connection that
// fails before any byte of the response arrived is retried once on a fresh
// one (GET is idempotent). On success the caller owns c and must release it.
func (p *rawPool) roundTrip(ctx context.Context, req *http.Request) (*rawConn, *http.Response, error) {
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	addr := net.JoinHostPort(req.URL.Hostname(), port)
	for fresh := false; ; fresh = true {
		c, err := p.get(ctx, addr, fresh)
		if err != nil {
			return nil, nil, err
		}
		resp, err := c.exchange(ctx, req, p.headerTimeout)
		if err == nil {
			return c, resp, nil
		}
		p.release(c, false)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		var ne net.Error
		if fresh || !c.reused || !errors.Is(err, errNoResponse) || (errors.As(err, &ne) && ne.Timeout()) {
			return nil, nil, err // a sidecar that timed out would only time out again
		}
		p.retries.Add(1)
		p.dropIdle(addr)
	}
}

// exchange writes req and reads the response head. Until release, a
// cancelled ctx sets the connection's deadline in the past, which aborts any
// read or write on it (a splice included).
func (c *rawConn) exchange(ctx context.Context, req *http.Request, timeout time.Duration) (*http.Response, error) {
	_ = c.tc.SetDeadline(time.Now().Add(timeout))
	c.stop = context.AfterFunc(ctx, func() { _ = c.tc.SetDeadline(time.Unix(1, 0)) })
	if err := req.Write(c.bw); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoResponse, err)
	}
	if err := c.bw.Flush(); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoResponse, err)
	}
	c.headLeft = maxHeadBytes
	if _, err := c.br.Peek(1); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoResponse, err)
	}
	var resp *http.Response
	for {
		var err error
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, errors.New("unexpected 101 response to a GET")
		}
		// 1xx (103 Early Hints...): wait for the final response.
	}
	c.headLeft = math.MaxInt64
	// Clear the head timeout, then look at ctx: a cancellation that came
	// before the clear is seen here, one after it sets the deadline again.
	_ = c.tc.SetDeadline(time.Time{})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return resp, nil
}

// serveGet serves r through rawPool when it can and reports whether it did;
// false leaves r untouched for the ReverseProxy.
func (h *handler) serveGet(w *recorder, r *http.Request, st *state) bool {
	if h.raw == nil || r.Method != http.MethodGet || st.target.Scheme != "http" ||
		r.ProtoMajor != 1 || r.TLS != nil || (r.Body != nil && r.Body != http.NoBody) || r.Header.Get("Upgrade") != "" {
		return false
	}
	rf := readerFromUnder(w)
	if rf == nil {
		return false
	}
	out := r.Clone(r.Context())
	out.Body, out.Close = nil, false
	removeHopByHop(out.Header) // Te included: trailers are not forwarded
	h.rewrite(&httputil.ProxyRequest{In: r, Out: out})

	c, resp, err := h.raw.roundTrip(r.Context(), out)
	if err != nil {
		h.proxyError(w, r, err)
		return true
	}
	reusable := false
	defer func() { h.raw.release(c, reusable) }()

	removeHopByHop(resp.Header)
	body := &upstreamBody{r: resp.Body}
	if resp.Body != http.NoBody {
		resp.Body = body // Close is a no-op: release decides the connection's fate
	}
	if err := h.modifyResponse(resp); err != nil {
		h.proxyError(w, r, err)
		return true
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)

	if (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent) &&
		resp.ContentLength > 0 && len(resp.TransferEncoding) == 0 && resp.Body == body {
		err = h.spliceBody(w, rf, c, resp.ContentLength)
		reusable = err == nil && !resp.Close
	} else {
		err = h.copyBody(w, resp.Body)
		reusable = err == nil && !resp.Close && (body.eof || resp.Body == http.NoBody)
	}
	if err != nil {
		// The status line is out: all that is left is to cut the client's
		// connection, as the ReverseProxy does (http.ErrAbortHandler).
		if r.Context().Err() == nil {
			h.log.Warn("sidecar WebDAV response body failed", "agent_id", st.route.agentID, "request_id", st.requestID, "error", scrubErr(err))
		}
		if r.Context().Value(http.ServerContextKey) != nil {
			panic(http.ErrAbortHandler)
		}
	}
	return true
}

// spliceBody sends the n-byte body: what br already holds by Write, the
// rest by rf.ReadFrom straight from the sidecar's socket.
func (h *handler) spliceBody(w *recorder, rf io.ReaderFrom, c *rawConn, n int64) error {
	if k := int(min(int64(c.br.Buffered()), n)); k > 0 {
		b, _ := c.br.Peek(k)
		m, err := w.Write(b)
		_, _ = c.br.Discard(m)
		n -= int64(m)
		if err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	h.raw.splices.Add(1)
	// Head and buffered bytes go out now (FlushInterval -1): a client sees
	// the status even if the sidecar then fails.
	w.Flush()
	lr := &io.LimitedReader{R: c.tc, N: n}
	m, err := rf.ReadFrom(lr)
	w.n += m
	if err == nil && lr.N > 0 {
		err = io.ErrUnexpectedEOF // the sidecar closed early
	}
	return err
}

// copyBody copies like the ReverseProxy with FlushInterval -1.
func (h *handler) copyBody(w *recorder, src io.Reader) error {
	bp := h.bufs.Get().(*[]byte)
	defer h.bufs.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			w.Flush()
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// upstreamBody notes whether the response body was read to its end (the
// connection can then carry another request).
type upstreamBody struct {
	r   io.ReadCloser
	eof bool
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *upstreamBody) Close() error { return nil }

// readerFromUnder returns the innermost ResponseWriter under w that is an
// io.ReaderFrom (net/http's own, which splices from a *net.TCPConn).
func readerFromUnder(w http.ResponseWriter) io.ReaderFrom {
	var rf io.ReaderFrom
	for range 16 { // bounded: a wrapper cycle must not hang the request
		if f, ok := w.(io.ReaderFrom); ok {
			rf = f
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	return rf
}

// removeHopByHop drops the headers that only concern one connection
// (RFC 9110 §7.6.1), as httputil.ReverseProxy does both ways.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, k := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		h.Del(k)
	}
}
