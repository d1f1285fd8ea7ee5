package davproxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// randomBytes is n bytes that a copy with any offset error would not
// reproduce.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	_, _ = r.Read(b)
	return b
}

func rawPoolOf(t *testing.T, srv *httptest.Server) *rawPool {
	t.Helper()
	h, ok := srv.Config.Handler.(*handler)
	if !ok || h.raw == nil {
		t.Fatal("the handler has no GET pool")
	}
	return h.raw
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSpliceGet runs GETs through the splice path against both backends:
// content byte for byte, what is and is not spliced, the sanitized
// headers both ways, and one pooled sidecar connection for all of it.
func TestSpliceGet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, false, be)
		raw := rawPoolOf(t, e.srv)
		data := randomBytes(8<<20 + 123)
		e.a.writeFile(t, "projects/demo/big.bin", data)
		e.a.writeFile(t, "projects/demo/empty.txt", nil)
		const big = "/dav/a/projects/demo/big.bin"

		var etag string
		t.Run("whole file", func(t *testing.T) {
			before := raw.splices.Load()
			r := e.do(t, "GET", big, nil)
			if r.status != 200 || r.body != string(data) {
				t.Fatalf("GET: %d, %d bytes (want %d, identical)", r.status, len(r.body), len(data))
			}
			if got := raw.splices.Load() - before; got != 1 {
				t.Errorf("%d responses spliced, want 1", got)
			}
			if got := r.header.Get("Content-Length"); got != fmt.Sprint(len(data)) {
				t.Errorf("Content-Length %q", got)
			}
			if got := r.header.Get("X-Request-Id"); got != "rid-GET" {
				t.Errorf("X-Request-ID %q, want the gateway's", got)
			}
			if got := r.header.Get("Content-Security-Policy"); got != contentCSP {
				t.Errorf("Content-Security-Policy %q", got)
			}
			if etag = r.header.Get("Etag"); etag == "" {
				t.Fatal("no ETag")
			}
		})
		t.Run("range", func(t *testing.T) {
			before := raw.splices.Load()
			r := e.do(t, "GET", big, nil, "Range", "bytes=1000-2000999")
			if r.status != 206 || r.body != string(data[1000:2001000]) {
				t.Fatalf("ranged GET: %d, %d bytes", r.status, len(r.body))
			}
			if got, want := r.header.Get("Content-Range"), fmt.Sprintf("bytes 1000-2000999/%d", len(data)); got != want {
				t.Errorf("Content-Range %q, want %q", got, want)
			}
			if got := raw.splices.Load() - before; got != 1 {
				t.Errorf("%d responses spliced, want 1", got)
			}
		})
		type getCase struct {
			name, method, path string
			hdr                []string
			status             int
			body               string
		}
		cases := []getCase{
			{"small file", "GET", "/dav/a/projects/demo/README.md", nil, 200, "# demo\n"},
			{"empty file", "GET", "/dav/a/projects/demo/empty.txt", nil, 200, ""},
			{"HEAD", "HEAD", big, nil, 200, ""},
			{"not modified", "GET", big, []string{"If-None-Match", "{etag}"}, 304, ""},
			{"not found", "GET", "/dav/a/projects/demo/missing.bin", nil, 404, ""},
		}
		if be == realSidecar { // x/net/webdav has no denylist
			cases = append(cases, getCase{"forbidden", "GET", "/dav/a/projects/demo/.git/config", nil, 403, ""})
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				hdr := slicesReplace(c.hdr, "{etag}", etag)
				before := raw.splices.Load()
				r := e.do(t, c.method, c.path, nil, hdr...)
				if r.status != c.status || (c.body != "" && r.body != c.body) {
					t.Fatalf("%s %s: %d %q", c.method, c.path, r.status, r.body)
				}
				if c.method == "HEAD" && r.header.Get("Content-Length") != fmt.Sprint(len(data)) {
					t.Errorf("HEAD Content-Length %q", r.header.Get("Content-Length"))
				}
				if got := raw.splices.Load() - before; got != 0 {
					t.Errorf("%d responses spliced, want 0", got)
				}
			})
		}
		if e.a.fake != nil { // it records the request headers
			t.Run("request headers", func(t *testing.T) {
				r := e.do(t, "GET", big, nil, "Authorization", "Basic YTpi", "Cookie", "s=1", "X-Operator", "mallory",
					"X-Forwarded-For", "10.0.0.1", "X-Request-ID", "client-made", "Connection", "X-Hop", "X-Hop", "1")
				if r.status != 200 {
					t.Fatalf("GET: %d", r.status)
				}
				got := e.a.fake.lastHeaders()
				for _, k := range []string{"Authorization", "Cookie", "X-Forwarded-For", "X-Hop", "Connection"} {
					if v := got.Get(k); v != "" {
						t.Errorf("sidecar got %s: %q", k, v)
					}
				}
				if got.Get("X-Operator") != "alice" || got.Get("X-Request-Id") != "rid-GET" {
					t.Errorf("sidecar got X-Operator %q, X-Request-ID %q", got.Get("X-Operator"), got.Get("X-Request-Id"))
				}
			})
		}
		// Every GET above ran in turn and read its response to the end, so
		// all of them used the one connection.
		if got := raw.dials.Load(); got != 1 {
			t.Errorf("%d sidecar connections dialed for sequential GETs, want 1", got)
		}
	})
}

func slicesReplace(s []string, old, new string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strings.ReplaceAll(v, old, new)
	}
	return out
}

// relay is a TCP forwarder on a fixed loopback address in front of a
// sidecar whose address changes on restart (as a Service address stays
// put). A connection ends on both sides when either side closes.
type relay struct {
	ln     net.Listener
	target atomic.Value // string
	mu     sync.Mutex
	conns  []net.Conn
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rl := &relay{ln: ln}
	rl.target.Store(target)
	t.Cleanup(func() {
		ln.Close()
		rl.mu.Lock()
		defer rl.mu.Unlock()
		for _, c := range rl.conns {
			c.Close()
		}
	})
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			go rl.pipe(down)
		}
	}()
	return rl
}

func (rl *relay) pipe(down net.Conn) {
	up, err := net.Dial("tcp", rl.target.Load().(string))
	if err != nil {
		down.Close()
		return
	}
	rl.mu.Lock()
	rl.conns = append(rl.conns, up, down)
	rl.mu.Unlock()
	go func() {
		_, _ = io.Copy(up, down)
		up.Close()
		down.Close()
	}()
	_, _ = io.Copy(down, up)
	up.Close()
	down.Close()
}

// A sidecar restart closes the pooled connection while it is idle; the
// next GET finds it dead before any response byte and retries once on a
// fresh connection.
func TestSpliceSidecarRestart(t *testing.T) {
	up := newUpstream(t, realSidecar)
	data := randomBytes(4 << 20)
	up.writeFile(t, "projects/demo/big.bin", data)
	rl := newRelay(t, up.base.Host)
	ep := &url.URL{Scheme: "http", Host: rl.ln.Addr().String()}
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return ep, true }})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(h)
	defer gw.Close()
	raw := rawPoolOf(t, gw)

	get := func() {
		t.Helper()
		resp, err := gw.Client().Get(gw.URL + "/dav/a/projects/demo/big.bin")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !bytes.Equal(b, data) {
			t.Fatalf("GET: %d, %d bytes, %v", resp.StatusCode, len(b), err)
		}
	}
	get()
	up.real.Restart()
	u, err := url.Parse(up.real.DavURL)
	if err != nil {
		t.Fatal(err)
	}
	rl.target.Store(u.Host)
	get()
	if d, s := raw.dials.Load(), raw.splices.Load(); d != 2 || s != 2 {
		t.Errorf("%d dials, %d splices; want 2 and 2 (one stale connection retried)", d, s)
	}
	if got := raw.retries.Load(); got != 1 {
		t.Errorf("%d retries, want 1", got)
	}
}

// A client that goes away in the middle of a spliced body ends the
// exchange: the sidecar connection is closed (not pooled) and nothing is
// left running.
func TestSpliceClientGone(t *testing.T) {
	up := newUpstream(t, realSidecar)
	f := &patternReader{left: 32 << 20}
	b, _ := io.ReadAll(f)
	up.writeFile(t, "projects/demo/big.bin", b)
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return up.base, true }})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(h)
	defer gw.Close()
	raw := rawPoolOf(t, gw)
	base := runtime.NumGoroutine()

	conn, err := net.Dial("tcp", gw.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /dav/a/projects/demo/big.bin HTTP/1.1\r\nHost: gateway\r\n\r\n")
	if _, err := io.ReadFull(conn, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if raw.splices.Load() != 1 || raw.open.Load() != 1 {
		t.Fatalf("splices %d, open sidecar connections %d; want 1 and 1", raw.splices.Load(), raw.open.Load())
	}
	conn.Close()
	waitFor(t, "the sidecar connection to close", func() bool { return raw.open.Load() == 0 })
	waitFor(t, "the handler goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

// A sidecar that fails is bounded by the head timeout (503 naming only the
// agent); once the body is under way, a stall is bounded by the client
// (cancelling the request closes the sidecar connection) and a sidecar that
// closes early leaves a short body and a connection that is not pooled.
func TestSpliceSidecarFails(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/projects/p/stall-head" {
			w.Header().Set("Content-Length", "1000000")
			_, _ = io.WriteString(w, strings.Repeat("x", 1000))
			w.(http.Flusher).Flush()
		}
		if r.URL.Path == "/projects/p/short-body" {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	upURL, _ := url.Parse(up.URL)
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return upURL, true }})
	if err != nil {
		t.Fatal(err)
	}
	h.(*handler).raw.headerTimeout = 200 * time.Millisecond
	gw := httptest.NewServer(h)
	defer gw.Close()
	defer close(release) // first: gw.Close waits for handlers stuck on the sidecar
	raw := rawPoolOf(t, gw)
	client := &http.Client{Timeout: 5 * time.Second}

	t.Run("head stalls", func(t *testing.T) {
		resp, err := client.Get(gw.URL + "/dav/a/projects/p/stall-head")
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		if resp.StatusCode != 503 || !strings.Contains(body, `agent "a" is unavailable`) || strings.Contains(body, upURL.Host) {
			t.Errorf("stalled head: %d %q", resp.StatusCode, body)
		}
		waitFor(t, "the timed-out sidecar connection to close", func() bool { return raw.open.Load() == 0 })
	})
	t.Run("body stalls", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", gw.URL+"/dav/a/projects/p/stall-body", nil)
		before := raw.splices.Load()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil || resp.StatusCode != 200 {
			t.Fatalf("stalled body: %d, %v", resp.StatusCode, err)
		}
		if got := raw.splices.Load() - before; got != 1 {
			t.Errorf("%d splices, want 1", got)
		}
		cancel()
		waitFor(t, "the stalled sidecar connection to close", func() bool { return raw.open.Load() == 0 })
	})
	t.Run("short body", func(t *testing.T) {
		resp, err := client.Get(gw.URL + "/dav/a/projects/p/short-body")
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil || n >= 1000000 {
			t.Errorf("short body read as complete: %d bytes, %v", n, err)
		}
		waitFor(t, "the sidecar connection to close", func() bool { return raw.open.Load() == 0 })
	})
}

// With a custom Transport every request goes through the ReverseProxy (and
// that Transport).
func TestSpliceNotUsed(t *testing.T) {
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return nil, false }, Transport: http.DefaultTransport})
	if err != nil {
		t.Fatal(err)
	}
	if h.(*handler).raw != nil {
		t.Error("a custom Transport still gets a GET pool")
	}
}

// Idle connections to a sidecar are closed once idle for idleTimeout, even
// when no request for that sidecar comes again (a sidecar replaced or
// removed must not keep connections open for the gateway's life).
func TestSpliceIdleConnectionsExpire(t *testing.T) {
	up := newUpstream(t, realSidecar)
	up.writeFile(t, "projects/demo/f.bin", randomBytes(64<<10))
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return up.base, true }})
	if err != nil {
		t.Fatal(err)
	}
	h.(*handler).raw.idleTimeout = 300 * time.Millisecond
	gw := httptest.NewServer(h)
	defer gw.Close()
	raw := rawPoolOf(t, gw)
	for range 3 {
		resp, err := gw.Client().Get(gw.URL + "/dav/a/projects/demo/f.bin")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if raw.open.Load() != 1 {
		t.Fatalf("%d sidecar connections open after 3 sequential GETs, want 1 pooled", raw.open.Load())
	}
	waitFor(t, "the idle sidecar connection to be closed", func() bool { return raw.open.Load() == 0 })
	raw.mu.Lock()
	n, janitor := raw.nIdle, raw.janitor
	raw.mu.Unlock()
	if n != 0 || janitor != nil {
		t.Fatalf("after expiry: %d idle, janitor scheduled %v", n, janitor != nil)
	}
}

// A sidecar that sends more than its Content-Length (a bug, or a body the
// gateway could not see the end of) must not have the surplus read as the
// response to the next GET on the pooled connection: like http.Transport
// ("unsolicited response on idle HTTP channel"), a pooled connection with
// bytes waiting is closed, not reused.
func TestSpliceSurplusBytesAreNotTheNextResponse(t *testing.T) {
	const forged = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nFORGED"
	for _, c := range []struct {
		name  string
		body  int           // Content-Length of the first response
		delay time.Duration // before the surplus is sent
	}{
		{"beyond the head buffer", 100 << 10, 0},
		{"after the body", 5, 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						defer conn.Close()
						br := bufio.NewReader(conn)
						for {
							req, err := http.ReadRequest(br)
							if err != nil {
								return
							}
							if req.URL.Path == "/projects/p/first" {
								fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", c.body, strings.Repeat("a", c.body))
								time.Sleep(c.delay)
								_, _ = io.WriteString(conn, forged)
								continue
							}
							_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
						}
					}()
				}
			}()
			ep := &url.URL{Scheme: "http", Host: ln.Addr().String()}
			h, err := New(Options{Agents: func(string) (*url.URL, bool) { return ep, true }})
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(h)
			defer gw.Close()
			get := func(name string) string {
				t.Helper()
				resp, err := gw.Client().Get(gw.URL + "/dav/a/projects/p/" + name)
				if err != nil {
					t.Fatal(err)
				}
				return readAll(t, resp.Body)
			}
			if b := get("first"); len(b) != c.body {
				t.Fatalf("first GET: %d bytes, want %d", len(b), c.body)
			}
			time.Sleep(2 * c.delay)
			if b := get("second"); b != "second" {
				t.Fatalf("second GET answered with %q", b)
			}
		})
	}
}
