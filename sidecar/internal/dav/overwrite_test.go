package dav

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostOrMissing is a demo file's content on the host, or "<missing>".
func hostOrMissing(e *env, rel string) string {
	s, ok := e.hostFile(rel)
	if !ok {
		return "<missing>"
	}
	return s
}

func (e *env) tagged(rel, list string) string {
	return "<" + e.url + "/projects/demo/" + rel + "> " + list
}

// A COPY or MOVE with Overwrite: T that fails never leaves its destination
// deleted; one that succeeds under the destination's lock replaces it.
func TestOverwriteKeepsDestinationOnFailure(t *testing.T) {
	for _, uncond := range []bool{false, true} {
		e := newEnv(t, func(o *Options) { o.AllowUnconditionalWrites = uncond })
		e.put("/projects/demo/src.txt", "SRC")
		e.put("/projects/demo/dst.txt", "DST")
		tok := e.lock("/projects/demo/dst.txt", map[string]string{"Depth": "0"}, 200)
		e.want("COPY", "/projects/demo/src.txt", map[string]string{"Destination": "/projects/demo/dst.txt", "Overwrite": "T", "If": "(" + tok + ")"}, "", 204)
		if got := hostOrMissing(e, "dst.txt"); got != "SRC" {
			t.Fatalf("uncond=%v: COPY under the lock: dst %q", uncond, got)
		}
		// Changed elsewhere since: the pin no longer holds, dst is kept.
		if err := os.WriteFile(filepath.Join(e.projects, "demo", "dst.txt"), []byte("agent"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.want("COPY", "/projects/demo/src.txt", map[string]string{"Destination": "/projects/demo/dst.txt", "Overwrite": "T", "If": "(" + tok + ")"}, "", 412)
		if got := hostOrMissing(e, "dst.txt"); got != "agent" {
			t.Fatalf("uncond=%v: failed COPY: dst %q", uncond, got)
		}

		// MOVE with a stale If-Match on the source, dst's token tagged.
		et := e.put("/projects/demo/m.txt", "M1")
		e.put("/projects/demo/d2.txt", "D2")
		tok2 := e.lock("/projects/demo/d2.txt", map[string]string{"Depth": "0"}, 200)
		if err := os.WriteFile(filepath.Join(e.projects, "demo", "m.txt"), []byte("M2"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.want("MOVE", "/projects/demo/m.txt", map[string]string{"Destination": "/projects/demo/d2.txt", "If-Match": et, "If": e.tagged("d2.txt", "("+tok2+")")}, "", 412)
		if s, d := hostOrMissing(e, "m.txt"), hostOrMissing(e, "d2.txt"); s != "M2" || d != "D2" {
			t.Fatalf("uncond=%v: stale MOVE: src %q dst %q", uncond, s, d)
		}
		// MOVE of a missing source onto the locked destination.
		e.want("MOVE", "/projects/demo/nosuch.txt", map[string]string{"Destination": "/projects/demo/d2.txt", "If": e.tagged("d2.txt", "("+tok2+")")}, "", 404)
		if d := hostOrMissing(e, "d2.txt"); d != "D2" {
			t.Fatalf("uncond=%v: MOVE of a missing source: dst %q", uncond, d)
		}
		if !uncond {
			// No precondition on the source: 428, and dst stays.
			e.want("MOVE", "/projects/demo/m.txt", map[string]string{"Destination": "/projects/demo/d2.txt", "If": e.tagged("d2.txt", "("+tok2+")")}, "", 428)
			if d := hostOrMissing(e, "d2.txt"); d != "D2" {
				t.Fatalf("MOVE without a source precondition: dst %q", d)
			}
		}
		// The right source revision and the destination's token: moved.
		resp, _ := e.do("HEAD", "/projects/demo/m.txt", nil, nil)
		e.want("MOVE", "/projects/demo/m.txt", map[string]string{"Destination": "/projects/demo/d2.txt", "If-Match": resp.Header.Get("ETag"), "If": e.tagged("d2.txt", "("+tok2+")")}, "", 204)
		if s, d := hostOrMissing(e, "m.txt"), hostOrMissing(e, "d2.txt"); s != "<missing>" || d != "M2" {
			t.Fatalf("uncond=%v: MOVE: src %q dst %q", uncond, s, d)
		}
	}
}

// Plain x/net behaviour (unconditional writes allowed): a MOVE of a missing
// source or with a stale If-Match does not delete the destination.
func TestOverwriteUnconditionalMoveKeepsDestination(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/dst.txt", "DST")
	_, b := e.want("MOVE", "/projects/demo/nosuch.txt", map[string]string{"Destination": "/projects/demo/dst.txt"}, "", 404)
	if got := hostOrMissing(e, "dst.txt"); got != "DST" {
		t.Fatalf("dst %q (%s)", got, strings.TrimSpace(b))
	}
	e.put("/projects/demo/src.txt", "SRC")
	e.want("MOVE", "/projects/demo/src.txt", map[string]string{"Destination": "/projects/demo/dst.txt", "If-Match": `"stale"`}, "", 412)
	if s, d := hostOrMissing(e, "src.txt"), hostOrMissing(e, "dst.txt"); s != "SRC" || d != "DST" {
		t.Fatalf("src %q dst %q", s, d)
	}
	e.want("MOVE", "/projects/demo/src.txt", map[string]string{"Destination": "/projects/demo/dst.txt"}, "", 204)
	if got := hostOrMissing(e, "dst.txt"); got != "SRC" {
		t.Fatalf("dst %q", got)
	}
}
