package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// After a pack is renamed into packs/, packs/ itself is fsynced (before
// the manifest naming the pack is written); if that fails, the checkpoint
// fails and leaves no pack behind. Not parallel: packDirSync is a package
// variable.
func TestCheckpointPackDirSynced(t *testing.T) {
	e := ckAutoEnv(t)
	ws := proj("p")
	e.write("projects/p/a.txt", "small, so packed\n")
	packs := filepath.Join(e.dir, "store", "packs")
	orig := packDirSync
	t.Cleanup(func() { packDirSync = orig })
	var synced []string
	packDirSync = func(fd int) error {
		ents, err := os.ReadDir(packs)
		must(t, err)
		for _, d := range ents {
			synced = append(synced, d.Name())
		}
		return orig(fd)
	}
	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	if len(synced) != 1 || synced[0] != c.ID+".pack" {
		t.Fatalf("packs/ when it was fsynced: %v, want the new pack", synced)
	}

	e.write("projects/p/b.txt", "another small one\n")
	packDirSync = func(int) error { return errors.New("injected fsync failure") }
	if _, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{}); err == nil {
		t.Fatal("a checkpoint whose pack is not durable succeeded")
	}
	ents, err := os.ReadDir(packs)
	must(t, err)
	if len(ents) != 1 || ents[0].Name() != c.ID+".pack" {
		t.Fatalf("packs/ after the failed checkpoint: %d entries", len(ents))
	}
	cs, err := e.fs.ListCheckpoints(bg, ws)
	must(t, err)
	if len(cs) != 1 {
		t.Fatalf("%d checkpoints, want 1", len(cs))
	}
}
