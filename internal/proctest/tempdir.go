package proctest

import (
	"os"
	"testing"
)

// TempDir returns a new directory below os.TempDir that every user may
// traverse (mode 0755), removed in t.Cleanup. A started process may run as
// another user (a sidecar runs as UID 1000 when the tests run as root), and
// t.TempDir() cannot serve it: its parents are 0700.
func TempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("proctest: %v", err)
	}
	return dir
}
