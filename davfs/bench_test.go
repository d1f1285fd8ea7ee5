package davfs_test

// Benchmarks (issue 2, "Performance"). Every davfs operation has a raw
// os / x/sys/unix twin, run three ways in the same parent benchmark:
// .../davfs and .../raw alone (benchstat-friendly), and .../paired, which
// interleaves one davfs and one raw call per iteration (alternating which
// goes first) and reports the
// ratio "davfs/raw" (plus davfs-ns/op and raw-ns/op): interleaving cancels
// the load drift of a shared machine. docs/benchmarks/davfs.md has figures.
//
//	go test ./davfs/ -run '^$' -bench 'Bench(ListPage|Read1MiB|Update1MiB|Stat10k|ReadDirChunks10k)' -benchmem -count 5
//
// Targets: list ≤ 2× raw, read ≤ 1.2×, update ≤ 1.5×, stat ≤ 2×
// (ReadDirChunks10k has none of its own: it is the davfs part of the
// PROPFIND figure, docs/BENCHMARKS.md "Session 14").
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
	"time"

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

// secPair runs name/davfs, name/raw and name/paired. Each op must do one
// complete operation; warm-up calls happen before timing.
func secPair(b *testing.B, name string, dav, raw func(b *testing.B)) {
	b.Run(name, func(b *testing.B) {
		b.Run("davfs", func(b *testing.B) {
			dav(b)
			b.ResetTimer()
			for b.Loop() {
				dav(b)
			}
		})
		b.Run("raw", func(b *testing.B) {
			raw(b)
			b.ResetTimer()
			for b.Loop() {
				raw(b)
			}
		})
		b.Run("paired", func(b *testing.B) {
			dav(b)
			raw(b)
			var td, tr time.Duration
			n := 0
			b.ResetTimer()
			for b.Loop() {
				// Alternate which side goes first: the second call of a
				// pair runs with the first one's caches and garbage.
				first, second, tf, ts := dav, raw, &td, &tr
				if n%2 == 1 {
					first, second, tf, ts = raw, dav, &tr, &td
				}
				t0 := time.Now()
				first(b)
				t1 := time.Now()
				second(b)
				*tf += t1.Sub(t0)
				*ts += time.Since(t1)
				n++
			}
			b.ReportMetric(float64(td)/float64(tr), "davfs/raw")
			b.ReportMetric(float64(td.Nanoseconds())/float64(n), "davfs-ns/op")
			b.ReportMetric(float64(tr.Nanoseconds())/float64(n), "raw-ns/op")
		})
	})
}

// BenchmarkListPage500of10k: one 500-entry page of a 10,000-entry
// directory, warm. raw = read all names (sorting needs them all), sort,
// lstat the 500 of the page relative to the directory fd.
func BenchmarkListPage500of10k(b *testing.B) {
	e, _ := secBenchEnv(b, secBenchFiles)
	ctx := context.Background()
	P := secProject("p")
	host := filepath.Join(e.projects(), "p", "big")

	page := func(cursor string) func(b *testing.B) {
		return func(b *testing.B) {
			pg, err := e.fs.ListEntries(ctx, P, "big", 500, cursor)
			if err != nil || len(pg.Entries) != 500 {
				b.Fatalf("ListEntries: %d entries, %v", len(pg.Entries), err)
			}
		}
	}
	raw := func(skip int) func(b *testing.B) {
		return func(b *testing.B) {
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
			for _, n := range names[skip : skip+500] {
				if err := unix.Fstatat(int(d.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					b.Fatal(err)
				}
			}
			_ = d.Close()
		}
	}
	secPair(b, "first", page(""), raw(0))

	cursor := ""
	for range 10 {
		var pg davfs.Page
		secMust(b, secTry(func() (err error) { pg, err = e.fs.ListEntries(ctx, P, "big", 500, cursor); return err }))
		cursor = pg.NextCursor
	}
	secPair(b, "page11", page(cursor), raw(5000))
}

// secText1MiB is exactly 1 MiB of editable text (the editable limit).
func secText1MiB() []byte {
	line := "the quick brown fox jumps over the lazy dog 0123456789\n"
	b := []byte(strings.Repeat(line, (1<<20)/len(line)+1))
	b = b[:1<<20]
	b[len(b)-1] = '\n'
	return b
}

// BenchmarkRead1MiB: read a 1 MiB text file, warm. raw = os.ReadFile.
func BenchmarkRead1MiB(b *testing.B) {
	e := secNewEnv(b, "", nil, nil)
	ctx := context.Background()
	P := secProject("p")
	host := filepath.Join(e.projects(), "p", "big.txt")
	content := secText1MiB()
	secMust(b, os.WriteFile(host, content, 0o644))
	var f davfs.File
	secMust(b, secTry(func() (err error) { f, err = e.fs.ReadFile(ctx, P, "big.txt"); return err }))
	if !bytes.Equal(f.Content, content) {
		b.Fatalf("ReadFile returned %d bytes, editable=%v; want the 1 MiB content", len(f.Content), f.Entry.Editable)
	}
	raw := func(b *testing.B) {
		if _, err := os.ReadFile(host); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(1 << 20)
	secPair(b, "ReadFile", func(b *testing.B) {
		if _, err := e.fs.ReadFile(ctx, P, "big.txt"); err != nil {
			b.Fatal(err)
		}
	}, raw)
	secPair(b, "OpenRead", func(b *testing.B) {
		fh, ent, err := e.fs.OpenRead(ctx, P, "big.txt")
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, ent.Size)
		if _, err := io.ReadFull(fh, buf); err != nil {
			b.Fatal(err)
		}
		_ = fh.Close()
	}, raw)
}

// BenchmarkUpdate1MiB: replace a 1 MiB text file atomically. raw = temp
// file in the same dir + write + fsync + chmod + rename + fsync dir.
func BenchmarkUpdate1MiB(b *testing.B) {
	e := secNewEnv(b, "", nil, nil)
	ctx := context.Background()
	P := secProject("p")
	dir := filepath.Join(e.projects(), "p")
	content := secText1MiB()
	for _, n := range []string{"u.txt", "w.txt", "raw.txt"} {
		secMust(b, os.WriteFile(filepath.Join(dir, n), content, 0o644))
	}
	raw := func(b *testing.B) {
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
		secMust(b, os.Rename(f.Name(), filepath.Join(dir, "raw.txt")))
		d, err := os.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		secMust(b, d.Sync())
		secMust(b, d.Close())
	}
	revU := secRev(ctx, e, P, "u.txt")
	secPair(b, "UpdateFile", func(b *testing.B) {
		ent, err := e.fs.UpdateFile(ctx, P, "u.txt", content, revU)
		if err != nil {
			b.Fatal(err)
		}
		revU = ent.Revision
	}, raw)
	revW := secRev(ctx, e, P, "w.txt")
	secPair(b, "WriteStream", func(b *testing.B) {
		ent, _, err := e.fs.WriteStream(ctx, P, "w.txt", bytes.NewReader(content), 1<<20, davfs.Precondition{IfMatch: revW})
		if err != nil {
			b.Fatal(err)
		}
		revW = ent.Revision
	}, raw)
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
	for _, p := range paths { // warm the hash cache
		var ent davfs.Entry
		secMust(b, secTry(func() (err error) { ent, err = e.fs.Stat(ctx, P, p); return err }))
		if ent.Revision == "" {
			b.Fatalf("Stat(%s): empty revision", p)
		}
	}
	i, j := 0, 0
	var st unix.Stat_t
	secPair(b, "Stat", func(b *testing.B) {
		if _, err := e.fs.Stat(ctx, P, paths[i%len(paths)]); err != nil {
			b.Fatal(err)
		}
		i++
	}, func(b *testing.B) {
		if err := unix.Lstat(hosts[j%len(hosts)], &st); err != nil {
			b.Fatal(err)
		}
		j++
	})
}

// BenchmarkReadDirChunks10k: the streamed listing of a 10,000-file
// directory that a WebDAV PROPFIND Depth 1 renders (every entry stat'ed,
// revisions from the warm hash cache), with produce and consume doing
// nothing but count. raw = read all names, then lstat each relative to
// the directory fd on one goroutine (what nginx does per entry).
func BenchmarkReadDirChunks10k(b *testing.B) {
	e, _ := secBenchEnv(b, secBenchFiles)
	ctx := context.Background()
	P := secProject("p")
	host := filepath.Join(e.projects(), "p", "big")
	time.Sleep(200 * time.Millisecond) // old enough for the hash cache
	dav := func(b *testing.B) {
		n := 0
		err := davfs.ReadDirChunks(ctx, e.fs, P, "big", func(es []davfs.Entry) int {
			for i := range es {
				if es[i].Revision == "" {
					return -1 << 30
				}
			}
			return len(es)
		}, func(k int) error { n += k; return nil })
		if err != nil || n != secBenchFiles {
			b.Fatalf("ReadDirChunks: %d entries, %v", n, err)
		}
	}
	raw := func(b *testing.B) {
		d, err := os.Open(host)
		if err != nil {
			b.Fatal(err)
		}
		names, err := d.Readdirnames(-1)
		if err != nil {
			b.Fatal(err)
		}
		var st unix.Stat_t
		for _, n := range names {
			if err := unix.Fstatat(int(d.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				b.Fatal(err)
			}
		}
		_ = d.Close()
	}
	secPair(b, "list", dav, raw)
}
