package dav

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A LOCK whose creation of a missing resource fails (409, no parent) leaves
// no lock behind: x/net unlocks with the token Create returned, which must
// release both the inner lock and its pins.
func TestFailedLockCreateLeavesNoLock(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxLocks = 1; o.AllowUnconditionalWrites = false })
	for i := 0; i < 3; i++ {
		resp, b := e.do("LOCK", "/projects/demo/missingdir/x.txt", map[string]string{"Depth": "0"}, strings.NewReader(lockBody("o")))
		if resp.StatusCode != 409 {
			t.Fatalf("LOCK %d under a missing parent: %d %q", i, resp.StatusCode, b)
		}
	}
	if err := os.Mkdir(filepath.Join(e.projects, "demo", "missingdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.want("PUT", "/projects/demo/missingdir/x.txt", map[string]string{"If-None-Match": "*"}, "hello", 201)
	// MaxLocks is 1: the count is back to 0.
	e.put("/projects/demo/a.txt", "a")
	e.lock("/projects/demo/a.txt", map[string]string{"Depth": "0"}, 200)
}
