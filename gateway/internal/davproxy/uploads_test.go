package davproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway/internal/uploads"
)

// uploadProxy is the handler in front of upstream as agent "a", with one
// upload slot per agent; bodyIdle > 0 bounds each read of a request body
// (the gateway's httpServer.bodyIdleTimeout, here as the server's
// ReadTimeout).
func uploadProxy(t *testing.T, upstream string, bodyIdle time.Duration) (*httptest.Server, *uploads.Slots) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	slots, err := uploads.New(1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{
		Agents:   func(string) (*url.URL, bool) { return u, true },
		Timeout:  func(string) time.Duration { return 2 * time.Second },
		Writable: true,
		Uploads:  slots,
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewUnstartedServer(h)
	gw.Config.ReadTimeout = bodyIdle
	gw.Start()
	t.Cleanup(gw.Close)
	return gw, slots
}

// slotFreed waits until agent "a"'s only slot can be taken again.
func slotFreed(t *testing.T, slots *uploads.Slots, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if release, ok := slots.Acquire("a", "webdav"); ok {
			release()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the upload slot was never given back", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// trickle starts a chunked PUT on a raw connection and sends its first
// chunk; the body is left open.
func trickle(t *testing.T, gw *httptest.Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(gw.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, "PUT /dav/a/projects/p/f.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: *\r\n"+
		"Transfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// The upload slot comes back on every way a request with a body ends, not
// only at the body's end: the sidecar cannot be reached, the client goes
// away in the middle of its body, the sidecar answers without reading it.
func TestUploadSlotReleased(t *testing.T) {
	t.Run("sidecar unreachable", func(t *testing.T) {
		gw, slots := uploadProxy(t, "http://"+refusingAddr(t), 0)
		req, _ := http.NewRequest(http.MethodPut, gw.URL+"/dav/a/projects/p/f.txt", strings.NewReader("body"))
		req.Header.Set("If-None-Match", "*")
		resp, err := gw.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("PUT to an unreachable sidecar: %d", resp.StatusCode)
		}
		slotFreed(t, slots, "sidecar unreachable")
	})
	t.Run("client gone mid-body", func(t *testing.T) {
		reading := make(chan struct{})
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(reading)
			io.Copy(io.Discard, r.Body)
		}))
		defer up.Close()
		gw, slots := uploadProxy(t, up.URL, 0)
		conn := trickle(t, gw)
		<-reading
		if _, ok := slots.Acquire("a", "webdav"); ok {
			t.Fatal("a slot was free while a body was in flight")
		}
		conn.Close()
		slotFreed(t, slots, "client gone mid-body")
	})
	t.Run("sidecar answers unread", func(t *testing.T) {
		answered := make(chan struct{})
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(answered)
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusForbidden)
		}))
		defer up.Close()
		gw, slots := uploadProxy(t, up.URL, time.Second)
		trickle(t, gw)
		<-answered
		// The client's body stays open: it never sends its last chunk.
		// When the 403 is lost to the sidecar's reset (it closes with the
		// body unread, more often under load), net/http's Transport
		// returns its error only once its body writer's blocked read of
		// the client's body returns: at the client's next chunk that fails
		// to go through, or at the body's idle timeout. So the slot comes
		// back at once, or after that timeout at the latest; never only at
		// the body's end.
		slotFreed(t, slots, "sidecar answers unread")
	})
}
