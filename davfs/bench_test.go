package davfs_test

// Benchmarks (issue 2, "Performance"). Every davfs benchmark has a raw
// os / x/sys/unix twin in the same parent benchmark, so one run prints both
// and docs/benchmarks/davfs.md turns the pair into a ratio:
//
//	go test ./davfs/ -run '^$' -bench 'Bench(ListPage|Read1MiB|Update1MiB|Stat10k)' -benchmem -count 5
//
// Targets: list ≤ 2× raw, read ≤ 1.2×, update ≤ 1.5×, stat ≤ 2×.
// Fixtures are built once per parent benchmark; every sub-benchmark warms
// its cache with one untimed call first (the targets are "warm").

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"golang.org/x/sys/unix"
)

const secBenchFiles = 10000

// secBenchEnv builds projects/p/big with n small files.
func secBenchEnv(b *testing.B, n int) (*secEnv, []string) {
	b.Helper()
	e := secNewEnv(b, "", []string{"projects/p/big/"}, nil)
	dir := filepath.Join(e.projects(), "p", "big")
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("f%05d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, names[i]), []byte("file "+names[i]+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return e, names
}

func secMust(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkListPage500of10k: one 500-entry page of a 10,000-entry
// directory. raw = read all names (sorting needs them all), sort, lstat the
// first 500 relative to the directory fd.
func BenchmarkListPage500of10k(b *testing.B) {
	e, _ := secBenchEnv(b, secBenchFiles)
	ctx := context.Background()
	P := secProject("p")
	host := filepath.Join(e.projects(), "p", "big")

	b.Run("davfs", func(b *testing.B) {
		var pg davfs.Page
		secMust(b, secTry(func() (err error) { pg, err = e.fs.ListEntries(ctx, P, "big", 500, ""); return err }))
		if len(pg.Entries) != 500 {
			b.Fatalf("got %d entries; want 500", len(pg.Entries))
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := e.fs.ListEntries(ctx, P, "big", 500, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("davfs-page10", func(b *testing.B) {
		cursor := ""
		for range 10 {
			var pg davfs.Page
			secMust(b, secTry(func() (err error) { pg, err = e.fs.ListEntries(ctx, P, "big", 500, cursor); return err }))
			cursor = pg.NextCursor
		}
		secMust(b, secTry(func() error { _, err := e.fs.ListEntries(ctx, P, "big", 500, cursor); return err }))
		b.ResetTimer()
		for b.Loop() {
			if _, err := e.fs.ListEntries(ctx, P, "big", 500, cursor); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			d, err := os.Open(host)
			if err != nil {
				b.Fatal(err)
			}
			names, err := d.Readdirnames(-1)
			if err != nil {
				b.Fatal(err)
			}
			slices.Sort(names)
			var st unix.Stat_t
			for _, n := range names[:500] {
				if err := unix.Fstatat(int(d.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					b.Fatal(err)
				}
			}
			_ = d.Close()
		}
	})
}

// secText1MiB is exactly 1 MiB of editable text (the editable limit).
func secText1MiB() []byte {
	line := "the quick brown fox jumps over the lazy dog 0123456789\n"
	b := []byte(strings.Repeat(line, (1<<20)/len(line)+1))
	b = b[:1<<20]
	b[len(b)-1] = '\n'
	return b
}

// BenchmarkRead1MiB: read a 1 MiB text file. raw = os.ReadFile.
func BenchmarkRead1MiB(b *testing.B) {
	e := secNewEnv(b, "", nil, nil)
	ctx := context.Background()
	P := secProject("p")
	host := filepath.Join(e.projects(), "p", "big.txt")
	content := secText1MiB()
	secMust(b, os.WriteFile(host, content, 0o644))

	b.Run("davfs-ReadFile", func(b *testing.B) {
		var f davfs.File
		secMust(b, secTry(func() (err error) { f, err = e.fs.ReadFile(ctx, P, "big.txt"); return err }))
		if !bytes.Equal(f.Content, content) {
			b.Fatalf("ReadFile returned %d bytes, editable=%v; want the 1 MiB content", len(f.Content), f.Entry.Editable)
		}
		b.SetBytes(1 << 20)
		b.ResetTimer()
		for b.Loop() {
			if _, err := e.fs.ReadFile(ctx, P, "big.txt"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("davfs-OpenRead", func(b *testing.B) {
		secMust(b, secTry(func() error {
			f, _, err := e.fs.OpenRead(ctx, P, "big.txt")
			if err == nil {
				_ = f.Close()
			}
			return err
		}))
		b.SetBytes(1 << 20)
		b.ResetTimer()
		for b.Loop() {
			f, ent, err := e.fs.OpenRead(ctx, P, "big.txt")
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, ent.Size)
			if _, err := io.ReadFull(f, buf); err != nil {
				b.Fatal(err)
			}
			_ = f.Close()
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(1 << 20)
		for b.Loop() {
			if _, err := os.ReadFile(host); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUpdate1MiB: replace a 1 MiB text file atomically. raw = temp
// file in the same dir + write + fsync + chmod + rename + fsync dir.
func BenchmarkUpdate1MiB(b *testing.B) {
	e := secNewEnv(b, "", nil, nil)
	ctx := context.Background()
	P := secProject("p")
	dir := filepath.Join(e.projects(), "p")
	content := secText1MiB()
	secMust(b, os.WriteFile(filepath.Join(dir, "u.txt"), content, 0o644))
	secMust(b, os.WriteFile(filepath.Join(dir, "w.txt"), content, 0o644))
	secMust(b, os.WriteFile(filepath.Join(dir, "raw.txt"), content, 0o644))

	b.Run("davfs-UpdateFile", func(b *testing.B) {
		rev := secRev(ctx, e, P, "u.txt")
		b.SetBytes(1 << 20)
		b.ResetTimer()
		for b.Loop() {
			ent, err := e.fs.UpdateFile(ctx, P, "u.txt", content, rev)
			if err != nil {
				b.Fatal(err)
			}
			rev = ent.Revision
		}
	})
	b.Run("davfs-WriteStream", func(b *testing.B) {
		rev := secRev(ctx, e, P, "w.txt")
		b.SetBytes(1 << 20)
		b.ResetTimer()
		for b.Loop() {
			ent, _, err := e.fs.WriteStream(ctx, P, "w.txt", bytes.NewReader(content), 1<<20, davfs.Precondition{IfMatch: rev})
			if err != nil {
				b.Fatal(err)
			}
			rev = ent.Revision
		}
	})
	b.Run("raw", func(b *testing.B) {
		target := filepath.Join(dir, "raw.txt")
		b.SetBytes(1 << 20)
		for b.Loop() {
			f, err := os.CreateTemp(dir, ".raw-*")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(content); err != nil {
				b.Fatal(err)
			}
			secMust(b, f.Sync())
			secMust(b, f.Chmod(0o644))
			secMust(b, f.Close())
			secMust(b, os.Rename(f.Name(), target))
			d, err := os.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			secMust(b, d.Sync())
			secMust(b, d.Close())
		}
	})
}

// BenchmarkStat10k: Stat with revision over 10,000 files, hash cache warm.
// raw = lstat of the absolute path.
func BenchmarkStat10k(b *testing.B) {
	e, names := secBenchEnv(b, secBenchFiles)
	ctx := context.Background()
	P := secProject("p")
	paths := make([]string, len(names))
	hosts := make([]string, len(names))
	for i, n := range names {
		paths[i] = "big/" + n
		hosts[i] = filepath.Join(e.projects(), "p", "big", n)
	}

	b.Run("davfs", func(b *testing.B) {
		for _, p := range paths { // warm the hash cache
			var ent davfs.Entry
			secMust(b, secTry(func() (err error) { ent, err = e.fs.Stat(ctx, P, p); return err }))
			if ent.Revision == "" {
				b.Fatalf("Stat(%s): empty revision", p)
			}
		}
		b.ResetTimer()
		i := 0
		for b.Loop() {
			if _, err := e.fs.Stat(ctx, P, paths[i%len(paths)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("raw", func(b *testing.B) {
		var st unix.Stat_t
		i := 0
		for b.Loop() {
			if err := unix.Lstat(hosts[i%len(hosts)], &st); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
