package davproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A streamed response reaches the client as the sidecar sends it, not when
// it ends: the stand-in sidecar writes a first chunk, flushes, and then
// blocks until the test has read that chunk through the handler (or gives
// up after a few seconds, failing the test).
//
// ReverseProxy (FlushInterval -1) flushes with http.NewResponseController,
// which reaches the client's writer only through the recorder's Unwrap: the
// recorder embeds http.ResponseWriter, which does not promote Flush. Without
// Unwrap the flush silently does nothing and the chunk (and even the status
// line) waits in net/http's buffers until the sidecar finishes.
func TestStreamedResponseIsFlushed(t *testing.T) {
	const first = "first chunk\n"
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, first)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "rest\n")
	}))
	defer up.Close()
	gw := proxyTo(t, up.URL, time.Second, hclog.NewNullLogger(), nil)
	defer close(release) // before up.Close and gw.Close, which wait for the handlers

	type result struct {
		status int
		chunk  string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := gw.Client().Get(gw.URL + "/dav/a/projects/p/stream.log")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b := make([]byte, len(first))
		_, err = io.ReadFull(resp.Body, b)
		got <- result{status: resp.StatusCode, chunk: string(b), err: err}
	}()
	select {
	case r := <-got:
		if r.err != nil || r.status != http.StatusOK || r.chunk != first {
			t.Fatalf("first chunk: status %d, %q, err %v", r.status, r.chunk, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first chunk did not reach the client while the sidecar held the response open: the proxy does not flush")
	}
}
