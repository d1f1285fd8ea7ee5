package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name, id string
	data     map[string]any
}

func (e sseEvent) str(k string) string { s, _ := e.data[k].(string); return s }

type sseStream struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// openSSE opens the watch endpoint; hdr are extra header pairs.
func openSSE(t *testing.T, g *gatewaytest.Gateway, query string, hdr ...string) (*sseStream, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req := g.NewRequest(t, http.MethodGet, api+"/agents/codex-a/watch?"+query, nil)
	req = req.WithContext(ctx)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		return nil, resp
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 1024), cancel: cancel}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &ev.data)
			}
		}
	}()
	return s, resp
}

// next waits (generously) for the next event; ok is false when the stream ended.
func (s *sseStream) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		return ev, ok
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20s")
	}
	return sseEvent{}, false
}

func (s *sseStream) until(t *testing.T, path string) []sseEvent {
	t.Helper()
	var got []sseEvent
	for {
		ev, ok := s.next(t)
		if !ok {
			t.Fatalf("stream ended before an event for %q (got %v)", path, got)
		}
		got = append(got, ev)
		if ev.name == "change" && ev.str("path") == path && ev.str("kind") != "WATCH_EVENT_KIND_READY" {
			return got
		}
	}
}

func liveStack(t *testing.T) (*sidecartest.Sidecar, *gatewaytest.Gateway) {
	t.Helper()
	sc := sidecartest.Start(t, sidecartest.Options{})
	if err := os.MkdirAll(filepath.Join(sc.ProjectsDir, "demo/src"), 0o755); err != nil {
		t.Fatal(err)
	}
	sidecartest.Chown(t, sc.ProjectsDir)
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	return sc, g
}

// idBefore reports whether event id a ("<epoch>-<seq>") precedes b of the same epoch.
func idBefore(t *testing.T, a, b string) bool {
	t.Helper()
	ea, na, _ := strings.Cut(a, "-")
	eb, nb, _ := strings.Cut(b, "-")
	sa, err1 := strconv.ParseUint(na, 10, 64)
	sb, err2 := strconv.ParseUint(nb, 10, 64)
	if err1 != nil || err2 != nil || ea != eb {
		t.Fatalf("event ids %q, %q", a, b)
	}
	return sa < sb
}

const watchQuery = "workspace.scope=PROJECT&workspace.project_name=demo&directory=src&directory="

func TestWatchSSE(t *testing.T) {
	sc, g := liveStack(t)
	src := filepath.Join(sc.ProjectsDir, "demo/src")

	t.Run("auth, agent and bad input are refused like every call", func(t *testing.T) {
		for _, tc := range []struct {
			name, path, auth string
			status           int
			reason           string
		}{
			{"no credentials", "/agents/codex-a/watch?" + watchQuery, "", 401, "UNAUTHENTICATED"},
			{"not admin", "/agents/codex-a/watch?" + watchQuery, "Bearer " + g.UserToken, 403, "FORBIDDEN"},
			{"unknown agent", "/agents/nope/watch?" + watchQuery, "Bearer " + g.AdminToken, 404, "AGENT_NOT_FOUND"},
			{"dot segment", "/agents/codex-a/watch?workspace.scope=PROJECT&workspace.project_name=demo&directory=src/../src", "Bearer " + g.AdminToken, 400, "INVALID_PATH"},
			{"empty segment", "/agents/codex-a/watch?workspace.scope=PROJECT&workspace.project_name=demo&directory=src//x", "Bearer " + g.AdminToken, 400, "INVALID_PATH"},
			{"denylisted", "/agents/codex-a/watch?workspace.scope=PROJECT&workspace.project_name=demo&directory=node_modules", "Bearer " + g.AdminToken, 403, "DENYLISTED"},
			{"outside global", "/agents/codex-a/watch?workspace.scope=GLOBAL&directory=sessions", "Bearer " + g.AdminToken, 403, "OUTSIDE_GLOBAL"},
			{"no directory", "/agents/codex-a/watch?workspace.scope=PROJECT&workspace.project_name=demo", "Bearer " + g.AdminToken, 400, "INVALID_ARGUMENT"},
			{"unknown parameter", "/agents/codex-a/watch?" + watchQuery + "&x=1", "Bearer " + g.AdminToken, 400, "INVALID_ARGUMENT"},
			{"bad resume id", "/agents/codex-a/watch?" + watchQuery + "&resume_after=zz", "Bearer " + g.AdminToken, 400, "INVALID_ARGUMENT"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodGet, g.URL+api+tc.path, nil)
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				r := do(t, req)
				if r.Status != tc.status || r.reason(t) != tc.reason {
					t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.reason)
				}
			})
		}
	})

	s, resp := openSSE(t, g, watchQuery)
	if s == nil {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("watch stream Cache-Control %q, want no-store", cc)
	}
	ready, _ := s.next(t)
	if ready.str("kind") != "WATCH_EVENT_KIND_READY" || ready.id == "" {
		t.Fatalf("first event %+v", ready)
	}

	write := func(rel, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(src, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "SECRET-CONTENT-ONE")
	evs := s.until(t, "src/a.txt")
	last := evs[len(evs)-1]
	entry, _ := last.data["entry"].(map[string]any)
	if last.str("kind") != "WATCH_EVENT_KIND_CREATED" || entry["revision"] == "" || last.id == "" {
		t.Fatalf("created: %+v", last)
	}
	for _, ev := range evs {
		b, _ := json.Marshal(ev.data)
		if strings.Contains(string(b), "SECRET-CONTENT") {
			t.Fatalf("content in an event: %s", b)
		}
	}
	lastID := last.id
	parent := t

	t.Run("the gateway killed mid-stream: another gateway resumes with Last-Event-ID, nothing lost", func(t *testing.T) {
		// Started on the parent test: it serves the subtests after this one.
		g2 := gatewaytest.Start(parent, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
		g.Kill()
		for {
			if _, ok := s.next(t); !ok {
				break
			}
		}
		// An observer on the same directory tells when the sidecar has
		// published the change (into the history the resume replays from):
		// a real condition, not a while.
		obs, oresp := openSSE(t, g2, "workspace.scope=PROJECT&workspace.project_name=demo&directory=src")
		if obs == nil {
			t.Fatalf("observer: %d", oresp.StatusCode)
		}
		obs.next(t)                  // ready
		write("while-away.txt", "x") // the resuming client is not connected
		obs.until(t, "src/while-away.txt")
		r, resp := openSSE(t, g2, watchQuery, "Last-Event-ID", lastID)
		if r == nil {
			t.Fatalf("resume: %d", resp.StatusCode)
		}
		evs := r.until(t, "src/while-away.txt")
		for _, ev := range evs {
			if ev.str("kind") == "WATCH_EVENT_KIND_RESYNC" {
				t.Fatalf("resume gave a resync: %+v", ev)
			}
		}
		replayed := evs[len(evs)-1].id
		write("live.txt", "x")
		evs = r.until(t, "src/live.txt")
		if live := evs[len(evs)-1].id; !idBefore(t, lastID, replayed) || !idBefore(t, replayed, live) {
			t.Fatalf("ids out of order: resumed after %s, replayed %s, live %s", lastID, replayed, live)
		}
		obs.cancel()
		g = g2
	})

	t.Run("the sidecar killed mid-stream: the stream ends, a reconnect gets an explicit resync", func(t *testing.T) {
		s, _ := openSSE(t, g, watchQuery)
		r0, _ := s.next(t)
		sc.RestartSamePorts(true)
		var end sseEvent
		for {
			ev, ok := s.next(t)
			if !ok {
				break
			}
			if ev.name == "end" {
				end = ev
			}
		}
		if code, _ := end.data["code"].(float64); code != 14 {
			t.Fatalf("end event %+v, want code 14 (Unavailable)", end)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			r, resp := openSSE(t, g, watchQuery, "Last-Event-ID", r0.id)
			if r != nil {
				r.next(t) // ready
				ev, _ := r.next(t)
				if ev.str("kind") != "WATCH_EVENT_KIND_RESYNC" || ev.str("reason") != "RESYNC_REASON_GAP" {
					t.Fatalf("after a sidecar restart: %+v", ev)
				}
				write("after.txt", "x")
				r.until(t, "src/after.txt")
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("reconnect: %d", resp.StatusCode)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		r := admin(t, g, http.MethodGet, "/metrics", "")
		for _, want := range []string{`agent_gateway_watch_events_total{agent_id="codex-a",kind="CREATED"}`, `agent_gateway_watch_streams{agent_id="codex-a"}`} {
			if !strings.Contains(string(r.Body), want) {
				t.Fatalf("metrics lack %s", want)
			}
		}
	})

	t.Run("SIGTERM ends open streams at once", func(t *testing.T) {
		s, _ := openSSE(t, g, watchQuery)
		s.next(t)
		start := time.Now()
		if err := g.Stop(); err != nil {
			t.Fatal(err)
		}
		var end sseEvent
		for {
			ev, ok := s.next(t)
			if !ok {
				break
			}
			end = ev
		}
		if end.name != "end" {
			t.Fatalf("last event %+v, want end", end)
		}
		t.Logf("stopped in %v", time.Since(start))
	})
}

// A stream is authenticated again at every heartbeat: signing out (the
// session revoked on the server) ends an open stream with "event: end"
// UNAUTHENTICATED, instead of it going on relaying names.
func TestWatchEndsWhenSessionSignedOut(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	if err := os.MkdirAll(filepath.Join(sc.ProjectsDir, "demo/src"), 0o755); err != nil {
		t.Fatal(err)
	}
	sidecartest.Chown(t, sc.ProjectsDir)
	beat := 200 * time.Millisecond
	g := gatewaytest.Start(t, gatewaytest.Options{
		Agents:    []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}},
		Configure: func(c *gateway.Config) { c.HTTPServer.WatchHeartbeat = &beat },
	})
	cookie, csrf, lr := login(t, g, g.AdminToken)
	if lr.Status != http.StatusOK || cookie == nil {
		t.Fatalf("login: %d %s", lr.Status, lr.Body)
	}
	// The cookie alone (no bearer token).
	s, resp := openSSE(t, g, watchQuery, "Authorization", "", "Cookie", cookie.Name+"="+cookie.Value)
	if s == nil {
		t.Fatalf("watch with a session: %d", resp.StatusCode)
	}
	if ready, _ := s.next(t); ready.str("kind") != "WATCH_EVENT_KIND_READY" {
		t.Fatalf("first event %+v", ready)
	}
	out, _ := http.NewRequest(http.MethodDelete, g.URL+api+"/session", nil)
	out.AddCookie(cookie)
	out.Header.Set("X-CSRF-Token", csrf)
	if r := do(t, out); r.Status != http.StatusNoContent {
		t.Fatalf("sign out: %d %s", r.Status, r.Body)
	}
	// A change after the sign-out may race the next heartbeat; what must
	// hold is that the stream ends with UNAUTHENTICATED.
	if err := os.WriteFile(filepath.Join(sc.ProjectsDir, "demo/src/after-signout.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var end sseEvent
	for {
		ev, ok := s.next(t)
		if !ok {
			break
		}
		if ev.name == "end" {
			end = ev
		}
	}
	if code, _ := end.data["code"].(float64); code != 16 {
		t.Fatalf("end event %+v, want code 16 (Unauthenticated)", end)
	}
	details, _ := end.data["details"].([]any)
	if len(details) == 0 || !strings.Contains(fmt.Sprint(details), "UNAUTHENTICATED") {
		t.Fatalf("end event details %v", details)
	}
}
