package davfs

import (
	"context"
	"errors"
	"testing"
	"time"
)

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
