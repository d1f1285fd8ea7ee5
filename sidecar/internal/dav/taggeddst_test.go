package dav

import "testing"

// A COPY or MOVE whose If: list is tagged with the destination and names
// only its entity tag takes one temporary lock on that name, not two (which
// conflicted with each other: 423).
func TestTaggedDestinationETagList(t *testing.T) {
	for _, m := range []string{"COPY", "MOVE"} {
		e := newEnv(t, strict)
		sEt := e.put("/projects/demo/src.txt", "SRC")
		dEt := e.put("/projects/demo/dst.txt", "DST")
		e.want(m, "/projects/demo/src.txt", map[string]string{"Destination": "/projects/demo/dst.txt", "If-Match": sEt,
			"If": e.tagged("dst.txt", "(["+dEt+"])")}, "", 204)
		if got := hostOrMissing(e, "dst.txt"); got != "SRC" {
			t.Fatalf("%s: dst %q", m, got)
		}
	}
}
