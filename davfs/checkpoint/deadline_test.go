package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// Checkpoint work and its caller's deadline (issue #23): work that would
// keep its result within a second of the deadline is abandoned, and
// nothing of it stays: no checkpoint, no temp file, no object, no change.

func TestCheckpointAbandonedAtItsDeadline(t *testing.T) {
	e := ckEnv(t, nil, nil)
	ws := secProject("p")
	store := filepath.Join(e.base, "store")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := e.fs.CreateCheckpoint(ctx, ws, CheckpointOptions{}); davfs.CodeOf(err) != davfs.CodeUnavailable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a checkpoint within a second of its deadline: %v", err)
	}
	if cs, err := e.fs.ListCheckpoints(context.Background(), ws); err != nil || len(cs) != 0 {
		t.Fatalf("after the abandoned checkpoint: %v %v", cs, err)
	}
	for _, d := range []string{"tmp", "objects", "packs"} {
		var left []string
		filepath.WalkDir(filepath.Join(store, d), func(p string, de os.DirEntry, err error) error {
			if err == nil && !de.IsDir() {
				left = append(left, p)
			}
			return nil
		})
		if len(left) > 0 {
			t.Errorf("the abandoned checkpoint left %q", left)
		}
	}
}

// A restore too close to its deadline to finish changes nothing, and its
// undo checkpoint, which undoes nothing, goes too.
func TestRestoreAbandonedAtItsDeadline(t *testing.T) {
	e := ckEnv(t, nil, nil)
	ws := secProject("p")
	c := ckCreate(t, e, ws, CheckpointOptions{})
	ok := filepath.Join(e.projects(), "p", "ok.txt")
	ckWrite(t, ok, []byte("changed\n"), 0o644)
	// The undo checkpoint is abandoned first (its capture commits within
	// the margin), so the restore stops before anything.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := e.fs.RestoreCheckpoint(ctx, ws, c.ID, "", RestoreOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a restore within a second of its deadline: %v", err)
	}
	if b, _ := os.ReadFile(ok); string(b) != "changed\n" {
		t.Fatalf("an abandoned restore changed ok.txt: %q", b)
	}
	if cs, _ := e.fs.ListCheckpoints(context.Background(), ws); len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("checkpoints after the abandoned restore: %+v", cs)
	}
}

// A restore whose undo checkpoint was kept, but whose caller's deadline
// then comes within commitMargin before its first change, changes nothing
// and drops the undo checkpoint (it undoes nothing).
func TestRestoreAbandonedBeforeItsFirstChange(t *testing.T) {
	e := ckAutoEnv(t)
	ws := proj("p")
	e.write("projects/p/a.txt", "v1\n")
	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	e.write("projects/p/a.txt", "v2\n")
	ctx, cancel := context.WithTimeout(bg, commitMargin+2*time.Second)
	defer cancel()
	setRestoreHook(t, "undo-taken", func() {
		d, _ := ctx.Deadline()
		time.Sleep(time.Until(d) - commitMargin/2)
	})
	_, err = e.fs.RestoreCheckpoint(ctx, ws, c.ID, "", RestoreOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("restore at its deadline: %v", err)
	}
	if got := e.read("projects/p/a.txt"); got != "v2\n" {
		t.Fatalf("a.txt = %q after the abandoned restore", got)
	}
	cs, err := e.fs.ListCheckpoints(bg, ws)
	if err != nil || len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("checkpoints after the abandoned restore: %+v %v (the undo checkpoint must go)", cs, err)
	}
}
