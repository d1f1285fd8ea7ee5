package rpc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentworkspace/files/davfs/checkpoint"
)

// The changes of one response are bounded by count and by the bytes of
// their paths (long paths would not fit in a gRPC message otherwise).
func TestCheckpointChangesBounded(t *testing.T) {
	long := strings.Repeat("d/", 500) // 1,000 bytes
	var cs []checkpoint.CheckpointChange
	for i := range 3000 {
		cs = append(cs, checkpoint.CheckpointChange{Path: fmt.Sprintf("%s%05d", long, i), Kind: checkpoint.CheckpointAdded})
	}
	out, truncated := toChanges(cs)
	n := 0
	for _, c := range out {
		n += len(c.GetPath())
	}
	if !truncated || len(out) == 0 || len(out) >= len(cs) || n > maxChangePathBytes {
		t.Fatalf("%d of %d changes, %d path bytes, truncated %v", len(out), len(cs), n, truncated)
	}
	if out[len(out)-1].GetPath() != cs[len(out)-1].Path {
		t.Fatal("the changes kept are not the first ones")
	}
	// Short paths: the count bounds them.
	cs = cs[:0]
	for i := range maxChanges + 10 {
		cs = append(cs, checkpoint.CheckpointChange{Path: fmt.Sprintf("f%05d", i)})
	}
	if out, truncated := toChanges(cs); len(out) != maxChanges || !truncated {
		t.Fatalf("%d changes, truncated %v", len(out), truncated)
	}
	if out, truncated := toChanges(cs[:10]); len(out) != 10 || truncated {
		t.Fatalf("%d changes, truncated %v", len(out), truncated)
	}
}
