package davfs

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// parallelEntries: a listing with more items than this stats them on
// GOMAXPROCS workers (entriesOf); smaller ones stay on one goroutine.
const (
	parallelEntries = 256
	entriesChunk    = 64
)

// entriesOf stats the items of the open directory dirfd (the listing of w),
// keeping their order. Items that vanished or became a symlink, a special
// file or a mount point are left out; the first other error (in item order)
// fails the listing.
func (f *FS) entriesOf(ctx context.Context, dirfd int, w wsPath, items []listed) ([]Entry, error) {
	workers := runtime.GOMAXPROCS(0)
	if len(items) <= parallelEntries || workers < 2 {
		return f.entriesSeq(ctx, dirfd, w, items)
	}
	return f.entriesPar(ctx, dirfd, w, items, workers)
}

// entriesSeq is entriesOf on the calling goroutine.
func (f *FS) entriesSeq(ctx context.Context, dirfd int, w wsPath, items []listed) ([]Entry, error) {
	return f.statItems(ctx, dirfd, w, strings.Join(w.segs, "/"), items, make([]Entry, 0, len(items)))
}

// statItems appends the Entries of items (names in the open directory
// dirfd, the listing of w; dir is strings.Join(w.segs, "/")) to out,
// leaving out names that vanished or became a symlink, a special file or a
// mount point; the first other error fails it.
//
// The entries' paths (and names, their last segments) are substrings of
// one string per call rather than two strings per entry.
func (f *FS) statItems(ctx context.Context, dirfd int, w wsPath, dir string, items []listed, out []Entry) ([]Entry, error) {
	rels, off, pre := childRels(dir, items), 0, dirPrefixLen(dir)
	for i, it := range items {
		if i&63 == 63 && ctx.Err() != nil {
			return nil, ctxErr(ctx)
		}
		c := w
		end := off + pre + len(it.name)
		c.rel = rels[off:end]
		e, err := f.statEntry(dirfd, c, rels[off+pre:end])
		off = end
		if err != nil {
			if skip(err) {
				continue
			}
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// entriesPar is entriesOf on workers goroutines (the caller is one).
func (f *FS) entriesPar(ctx context.Context, dirfd int, w wsPath, items []listed, workers int) ([]Entry, error) {
	dir := strings.Join(w.segs, "/")
	// Each worker claims chunks of entriesChunk items and writes a chunk's
	// entries into its part of out; a hidden item leaves a slot at the end
	// of that part zero (Name ""; a listed name is never empty). The first
	// failure by item index wins (chunks are disjoint: the earliest failed
	// chunk holds it), as in the sequential loop; later chunks stop being
	// claimed once one is known.
	out := make([]Entry, len(items))
	workers = min(workers, (len(items)+entriesChunk-1)/entriesChunk)
	var (
		next   atomic.Int64
		mu     sync.Mutex
		errIdx = len(items)
		first  error
		wg     sync.WaitGroup
	)
	fail := func(i int, err error) {
		mu.Lock()
		if i < errIdx {
			errIdx, first = i, err
		}
		mu.Unlock()
	}
	work := func() {
		defer wg.Done()
		for {
			lo := int(next.Add(entriesChunk)) - entriesChunk
			if lo >= len(items) {
				return
			}
			mu.Lock()
			stop := errIdx < lo
			mu.Unlock()
			if stop {
				return
			}
			if ctx.Err() != nil {
				fail(lo, ctxErr(ctx))
				return
			}
			// The chunk's entries go to the start of its own part of out,
			// in order; the first failure in it fails it.
			if _, err := f.statItems(ctx, dirfd, w, dir, items[lo:min(lo+entriesChunk, len(items))], out[lo:lo]); err != nil {
				fail(lo, err)
				return
			}
		}
	}
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	if first != nil {
		return nil, first
	}
	k := 0
	for i := range out {
		if out[i].Name != "" {
			out[k] = out[i]
			k++
		}
	}
	clear(out[k:])
	return out[:k], nil
}

// dirPrefixLen is how many bytes childRel(dir, name) puts before name.
func dirPrefixLen(dir string) int {
	if dir == "" {
		return 0
	}
	return len(dir) + 1
}

// childRels is the concatenation of childRel(dir, it.name) for items.
func childRels(dir string, items []listed) string {
	n := len(items) * dirPrefixLen(dir)
	for _, it := range items {
		n += len(it.name)
	}
	var b strings.Builder
	b.Grow(n)
	for _, it := range items {
		if dir != "" {
			b.WriteString(dir)
			b.WriteByte('/')
		}
		b.WriteString(it.name)
	}
	return b.String()
}

// childRel is the workspace path of name in the directory dir.
func childRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
