package davproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// The per-agent transport cache: one *http.Transport per agent, reused
// across requests; another for another agent; a new one (the old one's idle
// connections closed) once the agent's timeout changes; DefaultTimeout when
// the timeout is not positive or Options.Timeout is nil; Options.Transport,
// when set, for everyone.
func TestTransportFor(t *testing.T) {
	closed := make(chan struct{}, 16)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	up.Start()
	defer up.Close()
	upURL, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	timeouts := map[string]time.Duration{"a": 3 * time.Second, "b": 4 * time.Second, "zero": 0, "neg": -time.Second}
	setTimeout := func(id string, d time.Duration) { mu.Lock(); timeouts[id] = d; mu.Unlock() }
	hh, err := New(Options{
		Agents:  func(string) (*url.URL, bool) { return upURL, true },
		Timeout: func(id string) time.Duration { mu.Lock(); defer mu.Unlock(); return timeouts[id] },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := hh.(*handler)
	gw := httptest.NewServer(h)
	defer gw.Close()

	transport := func(id string) *http.Transport {
		t.Helper()
		tr, ok := h.transportFor(id).(*http.Transport)
		if !ok {
			t.Fatalf("transportFor(%q) is %T, want *http.Transport", id, h.transportFor(id))
		}
		return tr
	}
	get := func(path string) {
		t.Helper()
		resp, err := gw.Client().Get(gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		if b := readAll(t, resp.Body); resp.StatusCode != http.StatusOK || b != "ok" {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, b)
		}
	}

	// Requests through the handler use (and keep) the cached transport.
	get("/dav/a/projects/p/x.txt")
	a := transport("a")
	get("/dav/a/projects/p/y.txt")
	if a2 := transport("a"); a2 != a {
		t.Error("agent a got a new transport on a later request")
	}
	if a.ResponseHeaderTimeout != 3*time.Second {
		t.Errorf("agent a's header timeout %v, want 3s", a.ResponseHeaderTimeout)
	}
	b := transport("b")
	if b == a {
		t.Error("agents a and b share a transport")
	}
	if b.ResponseHeaderTimeout != 4*time.Second {
		t.Errorf("agent b's header timeout %v, want 4s", b.ResponseHeaderTimeout)
	}

	select {
	case <-closed:
		t.Fatal("a connection to the sidecar closed before any timeout changed")
	default:
	}

	// A changed timeout: a new transport with it, and the old one's idle
	// connection (from the GETs above) closed; b is untouched.
	setTimeout("a", 7*time.Second)
	a3 := transport("a")
	if a3 == a {
		t.Fatal("agent a kept its transport after its timeout changed")
	}
	if a3.ResponseHeaderTimeout != 7*time.Second {
		t.Errorf("agent a's new header timeout %v, want 7s", a3.ResponseHeaderTimeout)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("the replaced transport's idle connection to the sidecar was not closed")
	}
	if transport("a") != a3 {
		t.Error("agent a's new transport was not kept")
	}
	if transport("b") != b {
		t.Error("agent b's transport changed with agent a's timeout")
	}
	get("/dav/a/projects/p/x.txt") // the new transport serves

	// No positive timeout: DefaultTimeout, and still one transport.
	for _, id := range []string{"zero", "neg"} {
		z := transport(id)
		if z.ResponseHeaderTimeout != DefaultTimeout {
			t.Errorf("agent %s: header timeout %v, want DefaultTimeout %v", id, z.ResponseHeaderTimeout, DefaultTimeout)
		}
		if transport(id) != z {
			t.Errorf("agent %s got a new transport on a later call", id)
		}
	}
	if z := transport("zero"); z == transport("neg") || z == a3 || z == b {
		t.Error("agents with the default timeout share a transport")
	}

	// Options.Timeout nil: DefaultTimeout as well.
	hn, err := New(Options{Agents: func(string) (*url.URL, bool) { return upURL, true }})
	if err != nil {
		t.Fatal(err)
	}
	if tr := hn.(*handler).transportFor("a").(*http.Transport); tr.ResponseHeaderTimeout != DefaultTimeout {
		t.Errorf("without Options.Timeout: header timeout %v, want %v", tr.ResponseHeaderTimeout, DefaultTimeout)
	}

	// Options.Transport: used for every agent, nothing cached.
	rt := roundTripper(http.DefaultTransport.RoundTrip)
	ho, err := New(Options{Agents: func(string) (*url.URL, bool) { return upURL, true }, Transport: &rt})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if got := ho.(*handler).transportFor(id); got != http.RoundTripper(&rt) {
			t.Errorf("with Options.Transport, agent %s got %T", id, got)
		}
	}
	if n := len(ho.(*handler).transports); n != 0 {
		t.Errorf("with Options.Transport, %d transports were made", n)
	}
}
