package dav

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A depth-infinity lock judges a member first written under it by ctime,
// not mtime: an agent's mv of a file with an old mtime into the locked
// directory is not overwritten by the lock holder's PUT.
func TestDepthLockMemberJudgedByCtime(t *testing.T) {
	e := newEnv(t, strict)
	e.want("MKCOL", "/projects/demo/dir", nil, "", 201)
	e.want("PUT", "/projects/demo/dir/b.txt", nil, "b", 201)
	e.want("PUT", "/projects/demo/dir/c.txt", nil, "c", 201)
	tok := e.lock("/projects/demo/dir", nil, 200)
	time.Sleep(20 * time.Millisecond)
	tmp := filepath.Join(e.projects, "demo", "agentwork")
	if err := os.WriteFile(tmp, []byte("agent's work"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(e.projects, "demo", "dir", "b.txt")); err != nil {
		t.Fatal(err)
	}
	e.want("PUT", "/projects/demo/dir/b.txt", map[string]string{"If": "(" + tok + ")"}, "lock holder's copy", 412)
	if got := hostOrMissing(e, "dir/b.txt"); got != "agent's work" {
		t.Fatalf("b.txt %q", got)
	}
	// An untouched member is still written under the lock.
	e.want("PUT", "/projects/demo/dir/c.txt", map[string]string{"If": "(" + tok + ")"}, "c2", 201)
}
