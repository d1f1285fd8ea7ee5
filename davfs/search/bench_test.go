package search_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/search"
)

// BenchmarkContent10k searches 2,000 files of 10 KiB (deploy/bench/searchbench
// compares the full 10,000-file tree with ripgrep).
func BenchmarkContent2k(b *testing.B) {
	d := b.TempDir()
	line := strings.Repeat("the quick brown fox jumps over a lazy dog ", 2) + "\n"
	body := strings.Repeat(line, 10240/len(line))
	for i := range 2000 {
		p := filepath.Join(d, "projects", "bench", "d"+strconv.Itoa(i/100), "f"+strconv.Itoa(i)+".txt")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	os.MkdirAll(filepath.Join(d, "codex"), 0o755)
	fs, err := davfs.Open(davfs.Config{ProjectsRoot: filepath.Join(d, "projects"), CodexHome: filepath.Join(d, "codex")})
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	ws := davfs.Workspace{Scope: davfs.ScopeProject, Project: "bench"}
	b.ResetTimer()
	for b.Loop() {
		do, err := search.Search(context.Background(), fs, ws, "", search.Options{Query: "xq_needle", CaseSensitive: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := do(func(search.Result) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
