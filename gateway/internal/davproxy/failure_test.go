package davproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
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
