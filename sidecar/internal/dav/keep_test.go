package dav

import (
	"strings"
	"testing"

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
