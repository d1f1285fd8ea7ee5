package dav

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/davwire"
)

// The gateway's keep header on a sidecar whose checkpoints are off: every
// replacing or removing write without a precondition is still 428, says
// keeping is off, and changes nothing (an overwriting MOVE keeps its
// destination); no kept-versions header is sent.
func TestKeepWithCheckpointsOff(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.AllowUnconditionalWrites = false })
	e.put("/projects/demo/a.txt", "A")
	e.put("/projects/demo/b.txt", "B")
	keep := map[string]string{davwire.UnconditionalHeader: davwire.UnconditionalKeep}
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		body         string
	}{
		{"PUT", "/projects/demo/a.txt", nil, "A2"},
		{"DELETE", "/projects/demo/a.txt", nil, ""},
		{"MOVE", "/projects/demo/a.txt", map[string]string{"Destination": "/projects/demo/b.txt"}, ""},
		{"COPY", "/projects/demo/a.txt", map[string]string{"Destination": "/projects/demo/b.txt"}, ""},
	} {
		hdr := map[string]string{}
		for k, v := range keep {
			hdr[k] = v
		}
		for k, v := range c.hdr {
			hdr[k] = v
		}
		resp, body := e.want(c.method, c.path, hdr, c.body, 428)
		if !strings.Contains(body, "keeping replaced content") || resp.Header.Get(davwire.KeptHeader) != "" {
			t.Errorf("%s: %s (kept header %q)", c.method, body, resp.Header.Get(davwire.KeptHeader))
		}
	}
	if a, b := hostOrMissing(e, "a.txt"), hostOrMissing(e, "b.txt"); a != "A" || b != "B" {
		t.Fatalf("after refused writes: a %q, b %q", a, b)
	}
}

// A keep write that kept a version and then failed still names the
// version (X-Workspace-Kept-Versions on the error answer), so the
// gateway's audit of the failure says where what it kept is: here a PUT
// whose target the agent changed while the body streamed (412; the
// version stays, as the file no longer holds it).
func TestKeepNamesVersionOnError(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	e := newEnvCk(t, t, nil, checkpoint.Config{Dir: store, Automatic: true}, func(o *Options) { o.AllowUnconditionalWrites = false })
	e.put("/projects/demo/a.txt", "A")
	ws := davfs.Workspace{Scope: davfs.ScopeProject, Project: "demo"}
	pr, pw := io.Pipe()
	type answer struct {
		resp *http.Response
		body string
	}
	done := make(chan answer, 1)
	go func() {
		resp, b := e.do("PUT", "/projects/demo/a.txt", map[string]string{davwire.UnconditionalHeader: davwire.UnconditionalKeep}, pr)
		done <- answer{resp, b}
	}()
	if _, err := pw.Write([]byte("client ")); err != nil {
		t.Fatal(err)
	}
	var kept []checkpoint.Checkpoint
	for deadline := time.Now().Add(10 * time.Second); len(kept) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		kept, _ = e.ck.ListCheckpoints(context.Background(), ws)
	}
	if len(kept) != 1 {
		t.Fatalf("no version kept while the PUT streams: %+v", kept)
	}
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "a.txt"), []byte("the agent's A2"), 0o644); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("B"))
	pw.Close()
	a := <-done
	if a.resp.StatusCode != http.StatusPreconditionFailed || a.resp.Header.Get(davwire.KeptHeader) != kept[0].ID {
		t.Fatalf("PUT over a file changed while it streamed: %d, kept header %q (want %s); body %q",
			a.resp.StatusCode, a.resp.Header.Get(davwire.KeptHeader), kept[0].ID, a.body)
	}
	if got := hostOrMissing(e, "a.txt"); got != "the agent's A2" {
		t.Fatalf("a.txt = %q", got)
	}
}
