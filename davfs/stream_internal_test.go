package davfs

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// chunkNames lists dir with ReadDirChunks and returns every entry in the
// order consumed, checking the chunk contract on the way: consume calls
// never overlap, nor does anything run after the return.
func chunkNames(t *testing.T, e *env, ws Workspace, dir string) []Entry {
	t.Helper()
	var got []Entry
	var running, maxRunning, consuming atomic.Int32
	err := ReadDirChunks(bg, e.fs, ws, dir, func(es []Entry) []Entry {
		n := running.Add(1)
		defer running.Add(-1)
		for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
		}
		if len(es) == 0 || len(es) > streamChunk {
			t.Errorf("chunk of %d entries", len(es))
		}
		return append([]Entry(nil), es...) // the slice is reused afterwards
	}, func(es []Entry) error {
		if consuming.Add(1) != 1 {
			t.Error("consume calls overlap")
		}
		defer consuming.Add(-1)
		got = append(got, es...)
		return nil
	})
	must(t, err)
	if running.Load() != 0 || consuming.Load() != 0 {
		t.Fatal("a produce call is still running after ReadDirChunks returned")
	}
	if int(maxRunning.Load()) > runtime.GOMAXPROCS(0) {
		t.Fatalf("%d chunks produced at once, GOMAXPROCS is %d", maxRunning.Load(), runtime.GOMAXPROCS(0))
	}
	return got
}

func byName(es []Entry) []Entry {
	out := append([]Entry(nil), es...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TestReadDirChunksMatchesReadDir: the streamed listing holds exactly
// ReadDir's entries (only the order may differ), over several chunks, with
// symlinks, FIFOs, denylisted names and temp files left out the same way,
// in both resolution modes; nothing outside the workspace changes.
func TestReadDirChunksMatchesReadDir(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.mixedDir("projects/p/big", 3*streamChunk+17)
		e.symlink("outside", "projects/p/big/dirlink")
		e.write("projects/p/big/"+tempPrefix+"x", "temp")
		e.write("projects/p/small/a.txt", "a")
		e.mkdir("projects/p/empty")
		for _, dir := range []string{"big", "small", "empty", ""} {
			want, err := e.fs.ReadDir(bg, proj("p"), dir)
			must(t, err)
			got := chunkNames(t, e, proj("p"), dir)
			if len(got) != len(want) {
				t.Fatalf("%q: %d entries streamed, ReadDir has %d", dir, len(got), len(want))
			}
			if !reflect.DeepEqual(byName(got), byName(want)) {
				t.Fatalf("%q: streamed entries differ from ReadDir's", dir)
			}
		}
		for _, name := range []string{"f0007.txt", "dirlink", "f0011.txt", "node_modules", tempPrefix + "x"} {
			for _, en := range chunkNames(t, e, proj("p"), "big") {
				if en.Name == name {
					t.Fatalf("%s listed", name)
				}
			}
		}
		e.checkCanaries()
	})
}

// TestReadDirChunksGlobal: the Global root lists only its allowlist, and a
// Global subdirectory streams like any other.
func TestReadDirChunksGlobal(t *testing.T) {
	e := newEnv(t, nil)
	e.write("codex/AGENTS.md", "# agents")
	e.write("codex/skills/s1/SKILL.md", "skill")
	root := chunkNames(t, e, global, "")
	if len(root) != 2 || byName(root)[0].Name != "AGENTS.md" || byName(root)[1].Name != "skills" {
		t.Fatalf("global root: %+v", root)
	}
	sub := chunkNames(t, e, global, "skills/s1")
	if len(sub) != 1 || sub[0].Name != "SKILL.md" || sub[0].Path != "skills/s1/SKILL.md" {
		t.Fatalf("skills/s1: %+v", sub)
	}
	e.checkCanaries()
}

// TestReadDirChunksErrors: what ReadDir refuses, ReadDirChunks refuses
// with the same error and without calling produce.
func TestReadDirChunksErrors(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/f.txt", "x")
	e.symlink("outside", "projects/p/link")
	for _, c := range []struct {
		ws  Workspace
		dir string
	}{{proj("p"), "f.txt"}, {proj("p"), "missing"}, {proj("p"), "link"}, {proj("p"), "../outside"},
		{global, "auth.json"}, {global, "AGENTS.md"}, {proj("nope"), ""}} {
		_, want := e.fs.ReadDir(bg, c.ws, c.dir)
		if want == nil {
			t.Fatalf("ReadDir(%q) did not fail", c.dir)
		}
		called := false
		err := ReadDirChunks(bg, e.fs, c.ws, c.dir, func(es []Entry) int { called = true; return len(es) },
			func(int) error { called = true; return nil })
		if CodeOf(err) != CodeOf(want) || ReasonOf(err) != ReasonOf(want) {
			t.Fatalf("%q: got %v, ReadDir gives %v", c.dir, err, want)
		}
		if called {
			t.Fatalf("%q: produce or consume called on a refused listing", c.dir)
		}
	}
	e.checkCanaries()
}

// TestReadDirChunksStops: an error from consume stops the listing and is
// returned, with no produce call left running; a cancelled context stops
// it with Unavailable.
func TestReadDirChunksStops(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 10 * streamChunk {
		e.write(fmt.Sprintf("projects/p/d/f%05d", i), "x")
	}
	stop := errors.New("client went away")
	var running atomic.Int32
	consumed := 0
	err := ReadDirChunks(bg, e.fs, proj("p"), "d", func(es []Entry) int {
		running.Add(1)
		defer running.Add(-1)
		return len(es)
	}, func(int) error {
		consumed++
		if consumed == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || consumed != 2 {
		t.Fatalf("got %v after %d chunks", err, consumed)
	}
	if running.Load() != 0 {
		t.Fatal("produce still running after ReadDirChunks returned")
	}

	ctx, cancel := context.WithCancel(bg)
	consumed = 0
	err = ReadDirChunks(ctx, e.fs, proj("p"), "d", func(es []Entry) int { return len(es) }, func(int) error {
		consumed++
		cancel()
		return nil
	})
	wantErr(t, err, CodeUnavailable, ReasonInternal)
	if consumed == 0 || consumed >= 10 {
		t.Fatalf("cancelled listing consumed %d chunks", consumed)
	}
}

// TestHashCacheShards: a full-size cache is sharded, stays bounded and
// finds every key it was given last.
func TestHashCacheShards(t *testing.T) {
	c := newHashCache(defaultCacheEntries)
	if len(c.shards) != cacheShards {
		t.Fatalf("%d shards", len(c.shards))
	}
	for i := range 3 * defaultCacheEntries {
		c.put(statKey{ino: uint64(i), size: int64(i)}, content{sum: uint64(i)})
		if i%4096 == 0 && c.len() > defaultCacheEntries {
			t.Fatalf("cache grew to %d", c.len())
		}
	}
	for i := 3*defaultCacheEntries - 1000; i < 3*defaultCacheEntries; i++ {
		if v, ok := c.get(statKey{ino: uint64(i), size: int64(i)}); !ok || v.sum != uint64(i) {
			t.Fatalf("recent key %d missing", i)
		}
	}
	if _, ok := c.get(statKey{ino: 0}); ok {
		t.Fatal("oldest key kept")
	}
	// One inode has one current state: a newer state replaces the older,
	// which no longer hits; another device's same inode number is another
	// file.
	old := statKey{dev: 1, ino: 7, size: 1, mtime: 10, ctime: 10}
	cur := old
	cur.mtime, cur.ctime = 20, 20
	other := old
	other.dev = 2
	c.put(old, content{sum: 1})
	c.put(other, content{sum: 3})
	c.put(cur, content{sum: 2})
	if _, ok := c.get(old); ok {
		t.Fatal("an older state of the inode still hits")
	}
	if v, ok := c.get(cur); !ok || v.sum != 2 {
		t.Fatal("current state missing")
	}
	if v, ok := c.get(other); !ok || v.sum != 3 {
		t.Fatal("same inode number on another device missing")
	}
}

// TestReadDirChunksPanic: a panic in produce or consume, on whichever
// goroutine, reaches the caller (where an HTTP server recovers it) instead
// of killing the process, after every worker stopped; no fd is left open.
func TestReadDirChunksPanic(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 8 * streamChunk {
		e.write(fmt.Sprintf("projects/p/d/f%05d", i), "x")
	}
	before := openFDs(t)
	for _, where := range []string{"produce", "consume"} {
		var running atomic.Int32
		got := func() (p any) {
			defer func() { p = recover() }()
			n := 0
			_ = ReadDirChunks(bg, e.fs, proj("p"), "d", func(es []Entry) int {
				running.Add(1)
				defer running.Add(-1)
				if where == "produce" && len(es) > 0 {
					panic("boom in produce")
				}
				return len(es)
			}, func(int) error {
				if n++; where == "consume" && n == 3 {
					panic("boom in consume")
				}
				return nil
			})
			return nil
		}()
		if got != "boom in "+where {
			t.Fatalf("%s: recovered %v", where, got)
		}
		if running.Load() != 0 {
			t.Fatalf("%s: produce still running after the panic reached the caller", where)
		}
	}
	if after := openFDs(t); after != before {
		t.Fatalf("fds: %d before, %d after", before, after)
	}
}

// TestReadDirChunksConsumePanicRace: a consume that panics on a worker
// while other workers are finishing chunks leaves the stream's state
// consistent (run with -race): nothing is written outside the lock on the
// way out, and no consume starts after one panicked.
func TestReadDirChunksConsumePanicRace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	e := twelveChunks(t)
	for range 5 {
		var consumed, afterPanic atomic.Int32
		var panicked atomic.Bool
		got := func() (p any) {
			defer func() { p = recover() }()
			_ = ReadDirChunks(bg, e.fs, proj("p"), "d", func(es []Entry) int { return len(es) }, func(int) error {
				if panicked.Load() {
					afterPanic.Add(1)
				}
				if consumed.Add(1) == 2 {
					// Let the other workers finish their chunks (and look
					// at the stream's state) while this consume runs.
					time.Sleep(20 * time.Millisecond)
					panicked.Store(true)
					panic("boom in consume")
				}
				return nil
			})
			return nil
		}()
		if got != "boom in consume" {
			t.Fatalf("recovered %v", got)
		}
		if n := afterPanic.Load(); n != 0 {
			t.Fatalf("%d consume calls after one panicked", n)
		}
	}
}

// A produce that ends its goroutine with runtime.Goexit (t.FailNow in a
// test's callback) on a worker must not leave the chunk it held missing
// and the caller waiting forever: the caller panics instead.
func TestReadDirChunksWorkerGoexit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	e := twelveChunks(t)
	for range 5 {
		var calls atomic.Int32
		done := make(chan any, 1)
		go func() {
			var p any
			defer func() { done <- p }()
			defer func() { p = recover() }()
			_ = ReadDirChunks(bg, e.fs, proj("p"), "d", func(es []Entry) int {
				if calls.Add(1) == 3 {
					runtime.Goexit()
				}
				return len(es)
			}, func(int) error { return nil })
		}()
		select {
		case p := <-done:
			// On the caller's goroutine Goexit ends it (p nil); on a
			// worker's the caller panics.
			if p != nil && !strings.Contains(fmt.Sprint(p), "Goexit") {
				t.Fatalf("recovered %v", p)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("ReadDirChunks still waiting for the chunk of a worker that called runtime.Goexit")
		}
	}
}

// twelveChunks is a project p whose directory d lists in 12 chunks.
func twelveChunks(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, nil)
	for i := range 12 * streamChunk {
		e.write(fmt.Sprintf("projects/p/d/f%05d", i), "x")
	}
	return e
}
