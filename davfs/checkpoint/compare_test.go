package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
)

// A restore with the plan token of a comparison that no longer holds
// (the workspace changed after it) is refused and changes nothing.
func TestCheckpointPlanTokenStale(t *testing.T) {
	e := ckEnv(t, nil, nil)
	ctx := context.Background()
	ws := sectree.Project("p")
	proj := filepath.Join(e.projects(), "p")
	c := ckCreate(t, e, ws, CheckpointOptions{})
	ckWrite(t, filepath.Join(proj, "ok.txt"), []byte("one\n"), 0o644)
	cmp, err := e.fs.CompareCheckpoint(ctx, ws, c.ID, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	ckWrite(t, filepath.Join(proj, "other.txt"), []byte("two\n"), 0o644) // after the comparison
	before := sectree.Snapshot(t, proj)
	_, err = e.fs.RestoreCheckpoint(ctx, ws, c.ID, "", RestoreOptions{PlanToken: cmp.PlanToken})
	if davfs.ReasonOf(err) != davfs.ReasonRevisionMismatch {
		t.Fatalf("restore with a stale plan: %v", err)
	}
	ckEqual(t, "refused restore", before, sectree.Snapshot(t, proj))
}

// A file rewritten whole has a diff about twice its size: a diff is
// included only if it fits in what is left of the budget, so the diffs of
// one comparison never exceed it, and a diff larger than the whole budget
// is TooLarge. The compare itself succeeds and lists every file.
func TestCheckpointCompareDiffBudget(t *testing.T) {
	e := ckAutoEnv(t)
	ws := proj("p")
	big := int(davfs.DefaultMaxEditableFileSize) // 1 MiB, the editable limit
	e.write("projects/p/big.txt", textOf(big, "old"))
	for i := range 2 {
		e.write(fmt.Sprintf("projects/p/mid%d.txt", i), textOf(300<<10, "old"))
	}
	e.write("projects/p/small.txt", "one\n")
	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	e.write("projects/p/big.txt", textOf(big, "new"))
	for i := range 2 {
		e.write(fmt.Sprintf("projects/p/mid%d.txt", i), textOf(300<<10, "new"))
	}
	e.write("projects/p/small.txt", "two\n")
	cmp, err := e.fs.CompareCheckpoint(bg, ws, c.ID, "", "", true)
	must(t, err)
	states := map[string]DiffState{}
	total := 0
	for _, ch := range cmp.Changes {
		states[ch.Path] = ch.DiffState
		total += len(ch.Diff)
		if (ch.DiffState == DiffIncluded) != (ch.Diff != "") {
			t.Errorf("%s: state %v with %d diff bytes", ch.Path, ch.DiffState, len(ch.Diff))
		}
	}
	if len(cmp.Changes) != 4 {
		t.Fatalf("%d changes, want 4", len(cmp.Changes))
	}
	if states["big.txt"] != DiffTooLarge {
		t.Errorf("big.txt: diff state %v, want TooLarge (its diff is larger than the whole budget)", states["big.txt"])
	}
	if states["mid0.txt"] != DiffIncluded || states["mid1.txt"] != DiffOverBudget {
		t.Errorf("mid0/mid1: %v/%v, want the first included and the next over the budget", states["mid0.txt"], states["mid1.txt"])
	}
	if states["small.txt"] != DiffIncluded {
		t.Errorf("small.txt: %v, want included (it still fits)", states["small.txt"])
	}
	if total > diffBudget {
		t.Fatalf("%d bytes of diffs, above the budget of %d", total, diffBudget)
	}
	// Compared alone, a file over the budget gets its diff.
	one, err := e.fs.CompareCheckpoint(bg, ws, c.ID, "", "mid1.txt", true)
	must(t, err)
	if len(one.Changes) != 1 || one.Changes[0].DiffState != DiffIncluded {
		t.Fatalf("mid1.txt alone: %+v", one.Changes)
	}
}
