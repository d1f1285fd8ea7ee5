package dav

import (
	"os"
	"path/filepath"
	"testing"
)

// In strict mode "If-Match: *" is an existence check, not a precondition:
// PUT, DELETE and MOVE with it alone get 428 and the agent's change stays;
// with a held lock or a concrete entity tag besides, they go through.
func TestIfMatchStarIsNoPrecondition(t *testing.T) {
	e := newEnv(t, strict)
	e.put("/projects/demo/f.txt", "v1")
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "f.txt"), []byte("agent"), 0o644); err != nil {
		t.Fatal(err)
	}
	star := map[string]string{"If-Match": "*"}
	e.want("PUT", "/projects/demo/f.txt", star, "overwrite", 428)
	e.want("DELETE", "/projects/demo/f.txt", star, "", 428)
	e.want("MOVE", "/projects/demo/f.txt", map[string]string{"If-Match": "*", "Destination": "/projects/demo/g.txt"}, "", 428)
	if got := hostOrMissing(e, "f.txt"); got != "agent" {
		t.Fatalf("f.txt %q", got)
	}
	// Still an existence check: a missing resource is 412.
	e.want("PUT", "/projects/demo/nosuch.txt", star, "x", 412)
	// With a concrete tag too, or under a held lock, it is a precondition.
	resp, _ := e.do("HEAD", "/projects/demo/f.txt", nil, nil)
	e.want("PUT", "/projects/demo/f.txt", map[string]string{"If-Match": "*, " + resp.Header.Get("ETag")}, "v2", 201)
	tok := e.lock("/projects/demo/f.txt", map[string]string{"Depth": "0"}, 200)
	e.want("PUT", "/projects/demo/f.txt", map[string]string{"If-Match": "*", "If": "(" + tok + ")"}, "v3", 201)
	if got := hostOrMissing(e, "f.txt"); got != "v3" {
		t.Fatalf("f.txt %q", got)
	}
	// Unconditional writes allowed: "*" is what it always was.
	u := newEnv(t, nil)
	u.put("/projects/demo/f.txt", "v1")
	u.want("PUT", "/projects/demo/f.txt", star, "v2", 201)
}
