package davproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A sidecar that dies in the middle of a body must not look like a
// complete answer to the client: the client sees the connection end early,
// and the gateway keeps serving.
func TestSidecarDiesMidBody(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/projects/p/ok.txt" {
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
	upURL, _ := url.Parse(up.URL)
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return upURL, true }})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(h)
	defer gw.Close()

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
}

// A sidecar that cannot be reached gives 503 naming the agent only, and
// the gateway's log line names the cause without the sidecar's address,
// on the splice path (GET) and the proxy path (PROPFIND) alike.
func TestUnreachableSidecarLogsNoAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	upURL, _ := url.Parse("http://" + addr)
	var logs strings.Builder
	var mu sync.Mutex
	log := hclog.New(&hclog.LoggerOptions{Output: &lockedWriter{w: &logs, mu: &mu}, Level: hclog.Debug})
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return upURL, true }, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(h)
	defer gw.Close()
	for _, method := range []string{http.MethodGet, "PROPFIND"} {
		req, _ := http.NewRequest(method, gw.URL+"/dav/a/projects/p/f.txt", nil)
		req.Header.Set("Depth", "0")
		resp, err := gw.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(b), addr) {
			t.Errorf("%s: %d %q", method, resp.StatusCode, b)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the cause is not logged:\n%s", logs.String())
	}
	_, port, _ := net.SplitHostPort(addr)
	if strings.Contains(logs.String(), addr) || strings.Contains(logs.String(), ":"+port) {
		t.Errorf("the sidecar address reached the log:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
