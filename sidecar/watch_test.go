package sidecar_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/internal/rpcmeta"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

type watchStream = workspacev1.WatchService_WatchClient

func openWatch(t *testing.T, sc *sidecartest.Sidecar, ws *workspacev1.WorkspaceRef, resume string, dirs ...string) (watchStream, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	st, err := workspacev1.NewWatchServiceClient(sc.Conn(t)).Watch(ctx, &workspacev1.WatchRequest{Workspace: ws, Directories: dirs, ResumeAfter: resume})
	if err != nil {
		t.Fatal(err)
	}
	return st, cancel
}

func recvEv(t *testing.T, st watchStream) *workspacev1.WatchEvent {
	t.Helper()
	ev, err := st.Recv()
	if err != nil {
		t.Fatalf("watch stream: %v", err)
	}
	return ev
}

// untilPath reads events up to the first (non-READY) one for path.
func untilPath(t *testing.T, st watchStream, path string) []*workspacev1.WatchEvent {
	t.Helper()
	var got []*workspacev1.WatchEvent
	for {
		ev := recvEv(t, st)
		got = append(got, ev)
		if ev.GetPath() == path && ev.GetKind() != workspacev1.WatchEventKind_WATCH_EVENT_KIND_READY {
			return got
		}
	}
}

// writer runs a separate shell process that writes files (the agent).
func writer(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writer: %v: %s", err, out)
	}
}

func TestWatchThroughProcess(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	mkdir(t, sc.ProjectsDir, "demo/src")
	writeFile(t, sc.ProjectsDir, "demo/src/a.txt", "one")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "canary.txt"), []byte("CANARY"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sc.CodexHome, "auth.json", "SECRET")
	src := filepath.Join(sc.ProjectsDir, "demo/src")

	st, _ := openWatch(t, sc, proj("demo"), "", "src")
	ready := recvEv(t, st)
	if ready.GetKind() != workspacev1.WatchEventKind_WATCH_EVENT_KIND_READY || strings.Join(ready.GetDirectories(), ",") != "src" || ready.GetId() == "" {
		t.Fatalf("ready %v", ready)
	}
	gst, _ := openWatch(t, sc, global, "", "", "skills")
	recvEv(t, gst)

	t.Run("changes carry revisions, never content", func(t *testing.T) {
		writer(t, src, "printf two > a.txt; printf new > b.txt")
		c := sc.Dial(t)
		for _, p := range []string{"src/a.txt", "src/b.txt"} {
			evs := untilPath(t, st, p)
			ev := evs[len(evs)-1]
			f, err := c.GetFile(ctxT(t), &workspacev1.GetFileRequest{Workspace: proj("demo"), Path: p})
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetEntry().GetRevision() != f.GetEntry().GetRevision() {
				t.Fatalf("%s: event revision %q, file %q", p, ev.GetEntry().GetRevision(), f.GetEntry().GetRevision())
			}
			if strings.Contains(ev.String(), "two") || strings.Contains(ev.String(), "new\"") {
				t.Fatalf("content in an event: %v", ev)
			}
		}
	})

	t.Run("traps never produce an event", func(t *testing.T) {
		canary := filepath.Join(outside, "canary.txt")
		writer(t, src, "ln -s "+canary+" link.txt; ln -s "+outside+" linkdir; mkdir -p node_modules/x && echo 1 > node_modules/x/i.js; "+
			"echo t > .davfs-tmp-999; ln -s "+canary+" swap && mv -f swap a.txt")
		writer(t, sc.CodexHome, "echo S2 > auth.json; echo c > config.toml; mkdir -p sessions; echo s > sessions/x; ln -s "+canary+" skills/evil")
		writer(t, src, "echo s > sentinel.txt")
		for _, ev := range untilPath(t, st, "src/sentinel.txt") {
			switch {
			case ev.GetPath() == "src/a.txt" && ev.GetKind() == workspacev1.WatchEventKind_WATCH_EVENT_KIND_REMOVED:
				// The swapped file left the view; nothing of the link's target.
			case ev.GetPath() == "src" || ev.GetPath() == "src/sentinel.txt":
			default:
				t.Fatalf("trap produced an event: %v", ev)
			}
		}
		writer(t, sc.CodexHome, "echo s > skills/sentinel.md")
		for _, ev := range untilPath(t, gst, "skills/sentinel.md") {
			if p := ev.GetPath(); p != "skills/sentinel.md" && p != "skills" && p != "" {
				t.Fatalf("CODEX_HOME trap produced an event: %v", ev)
			}
		}
		if b, _ := os.ReadFile(canary); string(b) != "CANARY" {
			t.Fatal("canary changed")
		}
	})

	t.Run("a 5000-file burst is a bounded number of events", func(t *testing.T) {
		start := time.Now()
		writer(t, src, `i=0; while [ $i -lt 5000 ]; do echo x > "g$i.go"; i=$((i+1)); done`)
		time.Sleep(time.Second)
		writer(t, src, "echo s > zz-sentinel.txt")
		evs := untilPath(t, st, "src/zz-sentinel.txt")
		// The burst lasts, for the watcher, until it has read it all: on a
		// loaded machine that is after the writer ended, so the reloads are
		// counted over the time until the sentinel arrived.
		took := time.Since(start)
		reload := false
		for _, ev := range evs {
			reload = reload || ev.GetKind() == workspacev1.WatchEventKind_WATCH_EVENT_KIND_DIRECTORY
		}
		t.Logf("5000-file burst: %d events", len(evs))
		// davfs's documented bound (64 entry changes, each batch's directory
		// revision, a reload per 500 ms of burst), not a speed target.
		if bound := 2*64 + 6 + int(took/(500*time.Millisecond)); !reload || len(evs) > bound {
			t.Fatalf("burst gave %d events (reload %v)", len(evs), reload)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		for name, want := range map[string]string{
			"sidecar_watch_subscribers": "2", "sidecar_watch_directories": "3",
			`sidecar_watch_resyncs_total{reason="overflow"}`: "0",
			// A few names changed: applied one by one, no directory listed again.
			"sidecar_watch_relists_total": "0",
		} {
			if got := metric(t, sc, name); got != want {
				t.Errorf("%s = %q, want %s", name, got, want)
			}
		}
		for _, name := range []string{"sidecar_watch_filtered_total", "sidecar_watch_events_total"} {
			if got := metric(t, sc, name); got == "" || got == "0" {
				t.Errorf("%s = %q, want > 0", name, got)
			}
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			ws     *workspacev1.WorkspaceRef
			dirs   []string
			code   codes.Code
			reason string
		}{
			{proj("demo"), []string{"src/../src"}, codes.InvalidArgument, "INVALID_PATH"},
			{proj("demo"), []string{"src//x"}, codes.InvalidArgument, "INVALID_PATH"},
			{proj("demo"), []string{"src/node_modules"}, codes.PermissionDenied, "DENYLISTED"},
			{global, []string{"sessions"}, codes.PermissionDenied, "OUTSIDE_GLOBAL"},
			{proj("demo"), nil, codes.InvalidArgument, "INVALID_ARGUMENT"},
		} {
			s, _ := openWatch(t, sc, tc.ws, "", tc.dirs...)
			_, err := s.Recv()
			wantErr(t, err, tc.code, tc.reason)
		}
	})

	t.Run("SIGTERM ends open streams and drains quickly; a restart is an explicit gap", func(t *testing.T) {
		last := ready.GetId()
		sc.Terminate()
		for {
			_, err := st.Recv()
			if err != nil {
				if c := status.Code(err); c != codes.Unavailable && err != io.EOF {
					t.Fatalf("stream ended with %v, want Unavailable", err)
				}
				break
			}
		}
		if err := sc.Wait(); err != nil {
			t.Fatalf("sidecar exit: %v", err)
		}
		sc.Restart()
		r, _ := openWatch(t, sc, proj("demo"), last, "src")
		recvEv(t, r)
		if ev := recvEv(t, r); ev.GetKind() != workspacev1.WatchEventKind_WATCH_EVENT_KIND_RESYNC || ev.GetReason() != workspacev1.ResyncReason_RESYNC_REASON_GAP {
			t.Fatalf("resume across a restart: %v", ev)
		}
	})
}

func TestWatchConfigValidate(t *testing.T) {
	cfg := sidecar.DefaultConfig()
	cfg.Services.Project.ProjectsRootDir, cfg.Services.Project.CodexHomeDir = "/data/projects", "/home/node/.codex"
	cfg.Services.Watch.MaxDirectories = -1
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "services.watch.maxDirectories") {
		t.Fatalf("Validate: %v", err)
	}
}

// The Watch stream goes through the stream interceptor like every unary
// call: the request ID and operator reach the log line, the call is
// counted, the ID is echoed back.
func TestWatchStreamLoggedAndCounted(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	mkdir(t, sc.ProjectsDir, "demo/src")
	ctx := metadata.AppendToOutgoingContext(ctxT(t), rpcmeta.RequestID, "watch-req-1", rpcmeta.Operator, "alice")
	st, err := workspacev1.NewWatchServiceClient(sc.Conn(t)).Watch(ctx, &workspacev1.WatchRequest{Workspace: proj("demo"), Directories: []string{"src/node_modules"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	wantErr(t, err, codes.PermissionDenied, "DENYLISTED")
	if hdr, _ := st.Header(); strings.Join(hdr.Get(rpcmeta.RequestID), ",") != "watch-req-1" {
		t.Fatalf("x-request-id header %v", hdr.Get(rpcmeta.RequestID))
	}
	if !sc.WaitLog("watch-req-1", 20*time.Second) {
		t.Fatalf("no log line for the stream:\n%s", sc.Logs())
	}
	found := false
	for _, l := range sc.LogLines() {
		if l["request_id"] == "watch-req-1" && l["@message"] == "rpc" {
			found = l["operator"] == "alice" && l["method"] == "/workspace.v1.WatchService/Watch" && l["code"] == "PermissionDenied"
		}
	}
	if !found {
		t.Fatalf("stream log line missing or wrong:\n%s", sc.Logs())
	}
	if v := metric(t, sc, `sidecar_grpc_errors_total{action="Watch",code="PermissionDenied",reason="DENYLISTED"}`); v != "1" {
		t.Fatalf("Watch errors metric %q", v)
	}
}
