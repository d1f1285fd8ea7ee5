package sidecar

import "testing"

// services.checkpoints.maxEntries reaches davfs, with its default.
func TestCheckpointsConfigMaxEntries(t *testing.T) {
	p := ProjectConfig{ProjectsRootDir: "/data/projects"}
	c := DefaultCheckpointsConfig()
	if got := c.store(p).MaxEntries; got != 200000 {
		t.Fatalf("default maxEntries = %d, want 200000", got)
	}
	c.MaxEntries = 7
	if got := c.store(p).MaxEntries; got != 7 {
		t.Fatalf("maxEntries = %d, want 7", got)
	}
}
