package checkpoint

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// BenchmarkCheckpointFirst: a first checkpoint of 2,000 files of 10 KiB
// (the store is emptied between iterations). make bench's ckptbench runs
// the 10,000-file figure beside tar -c.
func BenchmarkCheckpointFirst(b *testing.B) {
	base := b.TempDir()
	proj := filepath.Join(base, "projects", "p")
	buf := make([]byte, 10<<10)
	for i := range 2000 {
		p := filepath.Join(proj, fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		rand.Read(buf)
		os.WriteFile(p, buf, 0o644)
	}
	os.MkdirAll(filepath.Join(base, "codex"), 0o755)
	f, err := openTest(testConfig{Config: davfs.Config{ProjectsRoot: filepath.Join(base, "projects"), CodexHome: filepath.Join(base, "codex")}, Checkpoints: Config{Dir: filepath.Join(base, "store")}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	ws := davfs.Workspace{Scope: davfs.ScopeProject, Project: "p"}
	b.SetBytes(2000 * 10 << 10)
	for b.Loop() {
		c, err := f.CreateCheckpoint(ctx, ws, CheckpointOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := f.DeleteCheckpoint(ctx, ws, c.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkCheckpointSecond: a checkpoint of 10,000 unchanged files after a
// first one (nothing is read again: the stat stands for the content).
func BenchmarkCheckpointSecond(b *testing.B) {
	base := b.TempDir()
	proj := filepath.Join(base, "projects", "p")
	for i := range 10000 {
		p := filepath.Join(proj, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(p), 0o644)
	}
	os.MkdirAll(filepath.Join(base, "codex"), 0o755)
	// Older than the margin within which a stat cannot stand for the content.
	time.Sleep(2500 * time.Millisecond)
	f, err := openTest(testConfig{Config: davfs.Config{ProjectsRoot: filepath.Join(base, "projects"), CodexHome: filepath.Join(base, "codex")}, Checkpoints: Config{Dir: filepath.Join(base, "store"), MaxPerWorkspace: 1000}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	ws := davfs.Workspace{Scope: davfs.ScopeProject, Project: "p"}
	if _, err := f.CreateCheckpoint(ctx, ws, CheckpointOptions{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := f.CreateCheckpoint(ctx, ws, CheckpointOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
