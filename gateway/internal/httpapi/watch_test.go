package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/metrics"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
	"github.com/agentworkspace/files/gateway/internal/session"
)

// A gateway without live changes answers with a code and reason that agree
// with the one error table (not Unimplemented with INTERNAL).
func TestWatchNotAvailableAgreesWithErrtable(t *testing.T) {
	s, _ := newServer(t)
	r := httptest.NewRequest(http.MethodGet, APIPrefix+"/agents/codex-a/watch?workspace.scope=PROJECT&workspace.project_name=demo&directory=", nil)
	r.Header.Set("Authorization", "Bearer tok")
	w := serve(s, r)
	var body struct {
		Code    int `json:"code"`
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body.Details) != 1 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	row, ok := errtable.Lookup(body.Details[0].Reason)
	if !ok || codes.Code(body.Code) != row.Code || w.Code != row.REST || body.Details[0].Reason != "NOT_SUPPORTED" {
		t.Fatalf("%d code %d reason %s: disagrees with the table (%+v)", w.Code, body.Code, body.Details[0].Reason, row)
	}
}

// floodWatcher serves streams that send events as fast as they are taken
// (or, with idle, only a READY), and counts the open ones.
type floodWatcher struct {
	idle bool
	open atomic.Int64
}

func (f *floodWatcher) Watch(ctx context.Context, agentID string, req *workspacev1.WatchRequest) (mgmt.WatchRecv, error) {
	f.open.Add(1)
	context.AfterFunc(ctx, func() { f.open.Add(-1) })
	n := 0
	return func() (*workspacev1.WatchEvent, error) {
		n++
		if n > 1 && f.idle {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return &workspacev1.WatchEvent{Id: "e-" + strconv.Itoa(n), Kind: workspacev1.WatchEventKind_WATCH_EVENT_KIND_MODIFIED,
			Path: "src/" + strings.Repeat("x", 200), Directory: "src"}, nil
	}, nil
}

func watchServer(t *testing.T, w Watcher, opts func(*Options)) *httptest.Server {
	return watchServerSessions(t, w, session.New(nil, 0, 0), opts)
}

func watchServerSessions(t *testing.T, w Watcher, sessions *session.Store, opts func(*Options)) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(config.Auth{Tokens: []config.Token{{Operator: "alice", Role: "admin", SHA256: config.HashToken("tok")}}}, sessions)
	o := Options{Auth: a, Service: &fakeService{}, Metrics: m, Gatherer: reg, Watch: w, Stopping: make(chan struct{})}
	opts(&o)
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

const watchPath = APIPrefix + "/agents/codex-a/watch?workspace.scope=PROJECT&workspace.project_name=demo&directory=src"

// waitFor waits (generously) for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A client that stops reading loses its stream once a write has waited
// WatchWriteTimeout, instead of holding the handler forever.
func TestWatchStalledClientEndsStream(t *testing.T) {
	fw := &floodWatcher{}
	srv := watchServer(t, fw, func(o *Options) { o.WatchWriteTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	// The request, then never a read.
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\r\n", watchPath); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stream to open", func() bool { return fw.open.Load() == 1 })
	waitFor(t, "the stalled stream to end", func() bool { return fw.open.Load() == 0 })
}

// At most WatchStreams streams per agent: one more is refused, retryably,
// and a slot freed is taken again.
func TestWatchStreamsCappedPerAgent(t *testing.T) {
	fw := &floodWatcher{idle: true}
	srv := watchServer(t, fw, func(o *Options) { o.WatchStreams = 2 })
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+watchPath, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return resp, cancel
	}
	r1, cancel1 := open()
	r2, _ := open()
	if r1.StatusCode != 200 || r2.StatusCode != 200 {
		t.Fatalf("streams: %d %d", r1.StatusCode, r2.StatusCode)
	}
	r3, _ := open()
	b, _ := io.ReadAll(r3.Body)
	if r3.StatusCode != http.StatusTooManyRequests || r3.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "TOO_MANY_STREAMS") {
		t.Fatalf("third stream: %d %s", r3.StatusCode, b)
	}
	cancel1()
	waitFor(t, "the first stream to end", func() bool { return fw.open.Load() == 1 })
	deadline := time.Now().Add(20 * time.Second)
	for {
		r4, _ := open()
		if r4.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a slot was freed: %d", r4.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A session's stream ends at the session's expiry, even between
// heartbeats (here an hour apart), with UNAUTHENTICATED. (Expiry is kept
// in whole seconds: the 2 s session lives at least 1 s.)
func TestWatchEndsAtSessionExpiry(t *testing.T) {
	fw := &floodWatcher{idle: true}
	srv := watchServerSessions(t, fw, session.New(nil, 2*time.Second, 0), func(o *Options) { o.WatchHeartbeat = time.Hour })
	resp, err := http.Post(srv.URL+APIPrefix+"/session", "application/json", strings.NewReader(`{"token":"tok"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == session.CookieName {
			cookie = c
		}
	}
	if resp.StatusCode != 200 || cookie == nil {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+watchPath, nil)
	req.AddCookie(cookie)
	st, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Body.Close()
	if st.StatusCode != 200 {
		t.Fatalf("watch: %d", st.StatusCode)
	}
	// The whole stream, until the server ends it (or the 20 s context does).
	b, _ := io.ReadAll(st.Body)
	end := strings.Index(string(b), "event: end\ndata: ")
	if end < 0 || !strings.Contains(string(b[end:]), `"code":16`) || !strings.Contains(string(b[end:]), "UNAUTHENTICATED") {
		t.Fatalf("stream did not end with UNAUTHENTICATED: %q", b)
	}
}
