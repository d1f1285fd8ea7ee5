package davwire

import (
	"strings"
	"testing"
)

// sidecarFaults is what the sidecar refuses (sidecar/internal/dav).
const sidecarFaults = RouteFaults | FaultBackslash

// Every case the gateway's route test and the sidecar's unsafe-path test
// hold, and the edges where their answers differ.
func TestSplit(t *testing.T) {
	cases := []struct {
		path string
		segs string // joined by "|"
		f    Fault  // all faults of the first refused segment (sidecar's set)
		// gwPasses: the gateway's RouteFaults pass it (else they refuse
		// it with the same faults)
		gwPasses bool
	}{
		{path: ""},
		{path: "/"},
		{path: "/projects", segs: "projects"},
		{path: "/projects/demo/", segs: "projects|demo"},
		{path: "/projects/demo/src/a%20b.go", segs: "projects|demo|src|a b.go"},
		{path: "/projects/demo/%C3%A9t%C3%A9", segs: "projects|demo|été"},
		{path: "/projects/../global/x", f: FaultDot},
		{path: "/projects/%2E%2E/global/x", f: FaultDot},
		{path: "/projects/demo/./x", f: FaultDot},
		{path: "/projects/demo/%2e", f: FaultDot},
		{path: "/projects//x", f: FaultEmpty},
		{path: "//projects/x", f: FaultEmpty},
		{path: "/projects/demo//", f: FaultEmpty},
		{path: "/projects/x%00y", f: FaultControl},
		{path: "/projects/x%0Ay", f: FaultControl},
		{path: "/projects/x%7f", f: FaultControl},
		{path: "/a%2Fb/projects/", f: FaultEncodedSep},
		{path: "/projects/demo%2fsrc", f: FaultEncodedSep},
		{path: "/projects/demo%5Csrc", f: FaultEncodedSep},
		{path: "/projects/demo/src/..%2F..%2Fother/x", f: FaultEncodedSep},
		{path: "/projects/%ff", f: FaultUTF8},
		{path: "/projects/%C3", f: FaultUTF8},
		{path: "/projects/%ff%00", f: FaultUTF8 | FaultControl},
		{path: "/%zz/", f: FaultEscape},
		{path: "/%zz%2f", f: FaultEscape | FaultEncodedSep}, // gateway names the separator, the sidecar the escape
		{path: "/projects/%252f", segs: "projects|%2f"},
		// A literal backslash: the sidecar refuses it, the gateway's
		// grammar passes it (its agent-ID check refuses one there).
		{path: `/projects/a\b`, f: FaultBackslash, gwPasses: true},
	}
	for _, c := range cases {
		segs, f := Split(c.path, sidecarFaults)
		if f != c.f || (f == 0 && strings.Join(segs, "|") != c.segs) {
			t.Errorf("Split(%q, sidecar) = %q, %b; want %q, %b", c.path, segs, f, c.segs, c.f)
		}
		want := c.f
		if c.gwPasses {
			want = 0
		}
		if _, g := Split(c.path, RouteFaults); g != want {
			t.Errorf("Split(%q, RouteFaults) faults %b, want %b", c.path, g, want)
		}
	}
}
