package davproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/internal/davwire"
)

// capturedLog is a logger whose output a test reads.
type capturedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (c *capturedLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.Write(p)
}

func (c *capturedLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

func (c *capturedLog) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: c, Level: hclog.Trace, JSONFormat: true})
}

// assertNoAddress fails when the log names addr, its port or its host.
func (c *capturedLog) assertNoAddress(t *testing.T, addrs ...string) {
	t.Helper()
	s := c.String()
	for _, addr := range addrs {
		_, port, _ := net.SplitHostPort(addr)
		if strings.Contains(s, addr) || (port != "" && strings.Contains(s, ":"+port)) {
			t.Errorf("the sidecar address %s reached the log:\n%s", addr, s)
		}
	}
	if addrRE.MatchString(s) {
		t.Errorf("an address reached the log:\n%s", s)
	}
}

// mutations records OnMutation calls.
type mutations struct {
	mu  sync.Mutex
	got []Mutation
}

func (m *mutations) record(_ *http.Request, mu Mutation) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, mu)
}

// expectOne fails unless exactly one mutation with this outcome arrived.
func (m *mutations) expectOne(t *testing.T, status int, code codes.Code, reason string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.got) != 1 || m.got[0].Status != status || m.got[0].Code != code || m.got[0].Reason != reason {
		t.Errorf("mutations %+v, want one %d %s %s", m.got, status, code, reason)
	}
}

// proxyTo is the handler in front of one upstream, as agent "a".
func proxyTo(t *testing.T, upstream string, timeout time.Duration, log hclog.Logger, onMutation func(*http.Request, Mutation)) *httptest.Server {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{
		Agents:     func(string) (*url.URL, bool) { return u, true },
		Timeout:    func(string) time.Duration { return timeout },
		Writable:   true,
		Logger:     log,
		OnMutation: onMutation,
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(h)
	t.Cleanup(gw.Close)
	return gw
}

// A sidecar that dies in the middle of a body must not look like a
// complete answer to the client: the client sees the connection end early,
// the gateway keeps serving, and its log names no address (ReverseProxy's
// own "read error during body copy" line carries the connection's).
func TestSidecarDiesMidBody(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dav/a/projects/p/ok.txt" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, strings.Repeat("x", 1000))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer up.Close()
	var logs capturedLog
	gw := proxyTo(t, up.URL, time.Second, logs.logger(), nil)

	resp, err := gw.Client().Get(gw.URL + "/dav/a/projects/p/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil || n >= 1000000 {
		t.Errorf("truncated body read as complete: %d bytes, err %v", n, err)
	}
	resp, err = gw.Client().Get(gw.URL + "/dav/a/projects/p/ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok" {
		t.Errorf("after a failure: %d %q", resp.StatusCode, b)
	}
	time.Sleep(50 * time.Millisecond) // the copy error is logged as the handler returns
	if !strings.Contains(logs.String(), "sidecar WebDAV response failed") {
		t.Errorf("the failed body copy is not logged:\n%s", logs.String())
	}
	logs.assertNoAddress(t, strings.TrimPrefix(up.URL, "http://"))
}

// A sidecar that cannot be reached gives 503 naming the agent only, and
// the gateway's log line names the cause without the sidecar's address.
func TestUnreachableSidecarLogsNoAddress(t *testing.T) {
	addr := refusingAddr(t)
	var logs capturedLog
	var muts mutations
	gw := proxyTo(t, "http://"+addr, time.Second, logs.logger(), muts.record)
	for _, method := range []string{http.MethodGet, "PROPFIND", http.MethodPut} {
		req, _ := http.NewRequest(method, gw.URL+"/dav/a/projects/p/f.txt", strings.NewReader("x"))
		req.Header.Set("Depth", "0")
		resp, err := gw.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), `agent "a"`) || strings.Contains(string(b), addr) {
			t.Errorf("%s: %d %q", method, resp.StatusCode, b)
		}
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the cause is not logged:\n%s", logs.String())
	}
	logs.assertNoAddress(t, addr)
	muts.expectOne(t, 503, codes.Unavailable, "SIDECAR_UNAVAILABLE")
}

// A hung sidecar (connection accepted, no response headers) gets 504
// within its sidecar.timeout, for a read and for a write with a body, and
// the log names no address.
func TestHungSidecarTimesOut(t *testing.T) {
	f := NewContractSidecar(t)
	var logs capturedLog
	var muts mutations
	const timeout = 300 * time.Millisecond
	gw := proxyTo(t, f.URL, timeout, logs.logger(), muts.record)
	for _, method := range []string{http.MethodGet, "PROPFIND", http.MethodPut} {
		req, _ := http.NewRequest(method, gw.URL+"/dav/a/projects/demo/stall", strings.NewReader("body"))
		req.Header.Set("If-None-Match", "*")
		start := time.Now()
		resp, err := gw.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(b), `agent "a"`) {
			t.Errorf("%s: %d %q", method, resp.StatusCode, b)
		}
		if took > timeout+2*time.Second {
			t.Errorf("%s: answered after %v, timeout %v", method, took, timeout)
		}
	}
	logs.assertNoAddress(t, strings.TrimPrefix(f.URL, "http://"))
	muts.expectOne(t, 504, codes.DeadlineExceeded, "SIDECAR_UNAVAILABLE")
}

// The header timeout never cuts a body: a GET that streams for several
// times the timeout completes.
func TestLongGetOutlivesTimeout(t *testing.T) {
	f := NewContractSidecar(t)
	f.DripSize, f.DripTime = 4<<20, 1500*time.Millisecond
	const timeout = 200 * time.Millisecond
	gw := proxyTo(t, f.URL, timeout, nil, nil)
	start := time.Now()
	resp, err := gw.Client().Get(gw.URL + "/dav/a/projects/demo/drip")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || n != f.DripSize {
		t.Fatalf("GET: %d, %d of %d bytes, %v", resp.StatusCode, n, f.DripSize, err)
	}
	if took := time.Since(start); took < 3*timeout {
		t.Fatalf("the body took %v: not longer than the timeout, the test proves nothing", took)
	}
}

// failingBody yields some bytes, then the error a body deadline gives.
type failingBody struct{ left int }

func (b *failingBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, errBodyTimeout
	}
	n := min(len(p), b.left)
	b.left -= n
	return n, nil
}

func (b *failingBody) Close() error { return nil }

var errBodyTimeout = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

// A client body that stops (the gateway's body deadline fired) is the
// client's failure: 408, never the 200 of an empty answer, and the sidecar
// is not blamed.
func TestStalledClientBodyIs408(t *testing.T) {
	f := NewContractSidecar(t)
	u, _ := url.Parse(f.URL)
	var muts mutations
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return u, true }, Writable: true, OnMutation: muts.record})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("PUT", "/dav/a/projects/demo/stalled.bin", &failingBody{left: 1000})
	req.ContentLength = 1 << 20
	req.Header.Set("If-None-Match", "*")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusRequestTimeout {
		t.Errorf("stalled body: %d %q", w.Code, w.Body.String())
	}
	muts.expectOne(t, 408, codes.InvalidArgument, "INVALID_ARGUMENT")
	if _, err := os.Stat(filepath.Join(f.Root, "projects/demo/stalled.bin")); err == nil {
		t.Error("the stalled upload left a file")
	}
}

// A keep write that kept a version and then failed is audited with the
// version (the sidecar names it on the error answer); the header never
// reaches the client.
func TestKeptVersionAuditedOnError(t *testing.T) {
	const id = "18ed2d2b7de31ce03c4d8b75"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(davwire.UnconditionalHeader) != davwire.UnconditionalKeep {
			t.Errorf("%s without the keep header", r.Method)
		}
		w.Header().Set(davwire.KeptHeader, id)
		w.Header().Set(davwire.ReasonHeader, "REVISION_MISMATCH")
		w.WriteHeader(http.StatusPreconditionFailed)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	var muts mutations
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return u, true }, Writable: true, KeepUnconditional: true, OnMutation: muts.record})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("DELETE", "/dav/a/projects/demo/d", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusPreconditionFailed || w.Header().Get(davwire.KeptHeader) != "" {
		t.Fatalf("answer %d, kept header %q", w.Code, w.Header().Get(davwire.KeptHeader))
	}
	muts.expectOne(t, 412, codes.Aborted, "REVISION_MISMATCH")
	if m := muts.got[0]; !m.Unconditional || m.KeptVersions != id {
		t.Fatalf("mutation %+v: want unconditional with version %s", m, id)
	}
}
