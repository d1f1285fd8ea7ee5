package davfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEntriesParallelMatchesSequential: the parallel stat of a large listing
// returns exactly what the sequential loop returns (same order, same
// entries, symlinks/FIFOs/hard-linked files handled alike), in both
// resolution modes, and through ReadDir with Path built from the segments.
func TestEntriesParallelMatchesSequential(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		const n = 700
		e.mixedDir("projects/p/big", n)
		for _, dir := range []string{"big"} {
			w, err := e.fs.resolve(proj("p"), dir)
			must(t, err)
			fd, _, items, err := e.fs.listDir(bg, w)
			must(t, err)
			slices.SortFunc(items, listedLess)
			seq, err := e.fs.entriesSeq(bg, fd, w, items)
			must(t, err)
			for _, workers := range []int{2, 3, 8} {
				par, err := e.fs.entriesPar(bg, fd, w, items, workers)
				must(t, err)
				if !reflect.DeepEqual(seq, par) {
					t.Fatalf("%q, %d workers: parallel listing differs from sequential (%d vs %d entries)", dir, workers, len(par), len(seq))
				}
			}
			ctx, cancel := context.WithCancel(bg)
			cancel()
			if _, err := e.fs.entriesPar(ctx, fd, w, items, 2); ReasonOf(err) != ReasonInternal || CodeOf(err) != CodeUnavailable {
				t.Fatalf("cancelled parallel listing: %v", err)
			}
			unix.Close(fd)
			all, err := e.fs.ReadDir(bg, proj("p"), dir)
			must(t, err)
			if !reflect.DeepEqual(all, seq) {
				t.Fatalf("ReadDir(%q) differs from the sequential listing", dir)
			}
			if len(seq) < n-3*(n/50) || seq[0].Path != "big/"+seq[0].Name {
				t.Fatalf("%q: %d entries, first path %q", dir, len(seq), seq[0].Path)
			}
			for _, en := range seq {
				if en.Name == "node_modules" {
					t.Fatalf("listed %q", en.Name)
				}
			}
		}
		e.checkCanaries()
	})
}

// mixedDir fills dir (relative to the env dir) with n names f0000.txt...:
// mostly text files, and every 50 a symlink to a canary, a FIFO, a
// directory, a binary file and a hard-linked pair; plus a .env and a
// denylisted node_modules.
func (e *env) mixedDir(dir string, n int) {
	e.t.Helper()
	for i := range n {
		name := fmt.Sprintf("%s/f%04d.txt", dir, i)
		switch i % 50 {
		case 7:
			e.symlink("outside/canary.txt", name)
		case 11:
			must(e.t, syscall.Mkfifo(filepath.Join(e.dir, name), 0o644))
		case 13:
			e.mkdir(name)
		case 17:
			e.write(name, "bin\x00ary")
		case 19:
			e.write(name, "linked")
			must(e.t, os.Link(filepath.Join(e.dir, name), filepath.Join(e.dir, name+".hl")))
		default:
			e.write(name, fmt.Sprintf("file %d\n", i))
		}
	}
	e.write(dir+"/.env", "SECRET")
	e.mkdir(dir + "/node_modules")
}

// BenchmarkEntries10k: the stat/revision pass of a warm 10,000-file
// listing (what PROPFIND Depth 1 spends its time on), sequential vs
// parallel (GOMAXPROCS workers).
func BenchmarkEntries10k(b *testing.B) {
	dir := b.TempDir()
	for _, d := range []string{"projects/p/big", "codex"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10000 {
		if err := os.WriteFile(filepath.Join(dir, "projects/p/big", fmt.Sprintf("f%05d.txt", i)), []byte("some text\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	f, err := Open(Config{ProjectsRoot: filepath.Join(dir, "projects"), CodexHome: filepath.Join(dir, "codex")})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w, err := f.resolve(proj("p"), "big")
	if err != nil {
		b.Fatal(err)
	}
	fd, _, items, err := f.listDir(bg, w)
	if err != nil {
		b.Fatal(err)
	}
	slices.SortFunc(items, listedLess)
	defer unix.Close(fd)
	if _, err := f.entriesSeq(bg, fd, w, items); err != nil { // warm the hash cache
		b.Fatal(err)
	}
	b.Run("seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.entriesSeq(bg, fd, w, items)
		}
	})
	b.Run("par", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.entriesOf(bg, fd, w, items)
		}
	})
	b.Run("ReadDir", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.ReadDir(bg, proj("p"), "big")
		}
	})
}
