package davfs

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// listed is one visible name of a directory, in listing order.
type listed struct {
	name string
	dir  bool
}

func listedLess(a, b listed) int {
	if a.dir != b.dir {
		if a.dir {
			return -1
		}
		return 1
	}
	return NaturalCompare(a.name, b.name)
}

// staleTempAge: a temp file untouched this long belongs to no write in
// flight (an upload's temp file is written continuously), so a listing
// that meets it removes it.
const staleTempAge = time.Hour

// listDir opens the directory w and returns its fd (O_RDONLY), stat and
// visible names in directory order (ReadDir sorts them; ListEntries orders
// only its page, pageAfter). Types come from d_type; only DT_UNKNOWN names
// are stat'ed.
func (f *FS) listDir(ctx context.Context, w wsPath) (int, unix.Stat_t, []listed, error) {
	fd, st, err := f.openDir(w)
	if err != nil {
		return -1, st, nil, err
	}
	ents, err := fdio.ReadDirents(fd)
	if err != nil {
		unix.Close(fd)
		return -1, st, nil, fsErr(err, w.rel)
	}
	items := make([]listed, 0, len(ents))
	for i, d := range ents {
		if i&1023 == 1023 && ctx.Err() != nil {
			unix.Close(fd)
			return -1, st, nil, ctxErr(ctx)
		}
		if it, ok := f.keepDirent(fd, d); ok {
			items = append(items, it)
		}
	}
	return fd, st, items, nil
}

// openDir opens the directory w for reading its names (O_RDONLY) and
// fstats it.
func (f *FS) openDir(w wsPath) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if w.isGlobal() && len(w.segs) == 1 && w.segs[0] == GlobalAgents {
		// Global's AGENTS.md only counts as a file.
		return -1, st, newErr(CodeFailedPrecondition, ReasonNotADirectory, nil, "%q is not a directory", w.rel)
	}
	fd, err := f.open(w, fdio.DirRead)
	if err != nil {
		if ReasonOf(err) == ReasonNotFound {
			if _, serr := f.stat(w); serr == nil || ReasonOf(serr) == ReasonNotRegular {
				return -1, st, newErr(CodeFailedPrecondition, ReasonNotADirectory, nil, "%q is not a directory", w.rel)
			}
		}
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, fsErr(err, w.rel)
	}
	return fd, st, nil
}

// keepDirent turns a name read from the directory fd into a listed item,
// or says to leave it out: hidden (denylist, temp files, names a request
// could not use) or neither a directory nor a regular file. Stale davfs
// temp files met on the way are removed. Types come from d_type; only
// DT_UNKNOWN names are stat'ed.
func (f *FS) keepDirent(fd int, d fdio.Dirent) (listed, bool) {
	if !f.visibleName(d.Name) {
		if strings.HasPrefix(d.Name, tempPrefix) {
			f.sweepTemp(fd, d.Name, staleTempAge)
		}
		return listed{}, false
	}
	typ := d.Type
	if typ == unix.DT_UNKNOWN {
		var cst unix.Stat_t
		if fdio.Fstatat(fd, d.Name, &cst) != nil {
			return listed{}, false
		}
		switch cst.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			typ = unix.DT_DIR
		case unix.S_IFREG:
			typ = unix.DT_REG
		}
	}
	switch typ {
	case unix.DT_DIR:
		return listed{name: d.Name, dir: true}, true
	case unix.DT_REG:
		return listed{name: d.Name}, true
	}
	return listed{}, false
}

// sweepTemp removes name from dirfd if it is one of davfs's temp files
// older than age. It never follows a symlink (unlinkat removes the link).
func (f *FS) sweepTemp(dirfd int, name string, age time.Duration) {
	var st unix.Stat_t
	if fdio.Fstatat(dirfd, name, &st) != nil || !fdio.IsType(&st, unix.S_IFREG) {
		return
	}
	if time.Since(modTime(&st)) < age {
		return
	}
	if err := unix.Unlinkat(dirfd, name, 0); err == nil {
		f.log.Debug("removed stale temp file")
	}
}

func ctxErr(ctx context.Context) error {
	return newErr(CodeUnavailable, ReasonInternal, ctx.Err(), "request cancelled or timed out")
}

// ListEntries lists one page of a directory: directories first, then by
// name (byte-wise). pageSize 0 means Config.DefaultPageSize; above
// Config.MaxPageSize is ResourceExhausted/PAGE_SIZE_TOO_LARGE. The cursor is
// valid only for the same workspace, path and directory revision; otherwise
// Aborted/CURSOR_STALE. Symlinks, denylisted names, special files and
// davfs's temp files are never listed; only the page's entries are stat'ed.
func (f *FS) ListEntries(ctx context.Context, ws Workspace, dir string, pageSize int, cursor string) (Page, error) {
	n, err := f.pageSize(pageSize)
	if err != nil {
		return Page{}, err
	}
	w, err := f.resolve(ws, dir)
	if err != nil {
		return Page{}, err
	}
	var cur *cursorData
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil {
			return Page{}, err
		}
		if c.Scope != ws.Scope || c.Proj != ws.Project || c.Dir != dir {
			return Page{}, errCursorStale()
		}
		cur = &c
	}
	if w.isGlobal() && w.isRoot() {
		root, kids, err := f.globalRoot()
		if err == nil && cur != nil && cur.Rev != root.Revision {
			err = errCursorStale()
		}
		if err != nil {
			return Page{}, err
		}
		items := make([]listed, len(kids))
		start := 0 // the first kid after the cursor (kids are in listing order)
		for i, k := range kids {
			items[i] = listed{name: k.Name, dir: k.Type == TypeDirectory}
			if cur != nil && listedLess(items[i], listed{name: cur.Name, dir: cur.IsDir}) <= 0 {
				start = i + 1
			}
		}
		end := min(start+n, len(kids))
		p := Page{Entries: kids[start:end], DirectoryRevision: root.Revision}
		if end < len(kids) {
			p.NextCursor = f.nextCursor(w, dir, root.Revision, items[end-1])
		}
		return p, nil
	}
	fd, st, items, err := f.listDir(ctx, w)
	if err != nil {
		return Page{}, err
	}
	defer unix.Close(fd)
	rev := dirRevision(&st)
	var after *listed
	if cur != nil {
		if cur.Rev != rev {
			return Page{}, errCursorStale()
		}
		after = &listed{name: cur.Name, dir: cur.IsDir}
	}
	page, more := pageAfter(items, after, n)
	entries, err := f.entriesOf(ctx, fd, w, page)
	if err != nil {
		return Page{}, err
	}
	f.handOut(nil, entries...)
	f.handOut(nil, Entry{Type: TypeDirectory, Revision: rev})
	p := Page{Entries: entries, DirectoryRevision: rev}
	if more && len(page) > 0 {
		p.NextCursor = f.nextCursor(w, dir, rev, page[len(page)-1])
	}
	return p, nil
}

func (f *FS) nextCursor(w wsPath, dir, rev string, last listed) string {
	return encodeCursor(cursorData{Scope: w.ws.Scope, Proj: w.ws.Project, Dir: dir, Rev: rev, IsDir: last.dir, Name: last.name})
}

// pageAfter returns, in listing order, the first n items that sort after
// after (nil: from the start), and whether more follow. items is unsorted
// and reordered in place: a filter, a selection of the n smallest
// (quickselect, expected O(len)) and a sort of those n only, so a page of a large
// directory does not sort the whole directory.
func pageAfter(items []listed, after *listed, n int) ([]listed, bool) {
	if after != nil {
		k := 0
		for _, it := range items {
			if listedLess(*after, it) < 0 {
				items[k] = it
				k++
			}
		}
		items = items[:k]
	}
	more := len(items) > n
	if more {
		selectSmallest(items, n)
		items = items[:n]
	}
	slices.SortFunc(items, listedLess)
	return items, more
}

// selectSmallest reorders a so that its n smallest items (listedLess) come
// first, in any order. 0 < n < len(a).
func selectSmallest(a []listed, n int) {
	lo, hi := 0, len(a)-1
	for lo < hi {
		// A random pivot: no name set an agent can craft makes this
		// quadratic in expectation.
		r := lo + rand.IntN(hi-lo+1)
		a[r], a[hi] = a[hi], a[r]
		p := a[hi]
		i := lo
		for j := lo; j < hi; j++ {
			if listedLess(a[j], p) < 0 {
				a[i], a[j] = a[j], a[i]
				i++
			}
		}
		a[i], a[hi] = a[hi], a[i]
		switch {
		case i == n || i == n-1:
			return
		case i < n:
			lo = i + 1
		default:
			hi = i - 1
		}
	}
}

// ReadDir returns every visible entry of a directory (directories first, then
// by name), without paging, for WebDAV PROPFIND. Revisions come from the
// stat-keyed hash cache, so a warm listing re-reads no file.
// A directory revision it returns counts as shown to a client unless use
// says ForMutation (seen.go).
func (f *FS) ReadDir(ctx context.Context, ws Workspace, dir string, use ...Use) ([]Entry, error) {
	w, err := f.resolve(ws, dir)
	if err != nil {
		return nil, err
	}
	if w.isGlobal() && w.isRoot() {
		_, kids, err := f.globalRoot()
		return kids, err
	}
	fd, _, items, err := f.listDir(ctx, w)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	slices.SortFunc(items, listedLess)
	es, err := f.entriesOf(ctx, fd, w, items)
	f.handOut(use, es...)
	return es, err
}
