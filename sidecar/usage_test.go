package sidecar_test

import (
	"testing"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// An agent's write on disk, in a directory a live-changes stream watches,
// makes the cached usage stale through the watcher (no gRPC or WebDAV
// write involved); an unwatched write is not seen until the cache's
// MaxAge (the documented limit), so the cached answer stays.
func TestUsageFollowsTheChangeFeed(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	mkdir(t, sc.ProjectsDir, "demo/src")
	mkdir(t, sc.ProjectsDir, "demo/other")
	writeFile(t, sc.ProjectsDir, "demo/src/a.txt", "12345")
	c := sc.Dial(t)
	usage := func() *workspacev1.WorkspaceUsage {
		t.Helper()
		r, err := c.GetUsage(ctxT(t), &workspacev1.GetUsageRequest{ProjectNames: []string{"demo"}})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetWorkspaces()[0]
	}
	if u := usage(); u.GetBytes() != 5 || u.GetFiles() != 1 || u.GetDirectories() != 2 {
		t.Fatalf("first: %v", u)
	}
	writer(t, sc.ProjectsDir+"/demo/other", "printf 123 > unwatched.txt")
	if u := usage(); u.GetBytes() != 5 {
		t.Errorf("an unwatched write was seen at once (the cache walked again per request?): %v", u)
	}
	st, _ := openWatch(t, sc, proj("demo"), "", "src")
	recvEv(t, st)
	writer(t, sc.ProjectsDir+"/demo/src", "printf 1234567890 > b.txt")
	untilPath(t, st, "src/b.txt")
	// The watcher marked the workspace stale before it published the change.
	if u := usage(); u.GetBytes() != 5+3+10 || u.GetFiles() != 3 {
		t.Errorf("after a watched write: %v (want 18 bytes, 3 files)", u)
	}
}
