package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// scanner walks a workspace subtree by fds, the way every davfs operation
// does (davfs.FS.OpenAt: never a symlink, never another mount), and records what a
// checkpoint may hold: directories and single-link regular files with
// visible names. Everything else is "blocked": not captured, never written
// over or into by a restore, and it keeps its directories from being
// removed ("pinned").
//
// With a store, file bytes go into it (capture); without one, files are
// only hashed (compare and restore read the live tree this way).
type scanner struct {
	ctx     context.Context
	f       *Store
	w       davfs.Target
	store   *ckStore // nil: hash only
	ref     map[string]*ckEntry
	out     []ckEntry
	blocked map[string]struct{}
	pinned  map[string]struct{}
	added   int64 // bytes newly stored
	loose   int   // loose objects newly written (made durable by one syncfs)
	buf     []byte
	pack    *packWriter         // where new small files go (capture)
	known   map[string]*ckEntry // hash → where its bytes are stored
	ahead   time.Time           // the end of the settle wait of files whose ctime is ahead of the clock
	budget  ckBudget            // what the capture may add (capture)
}

// captureRetries: a file whose stat moves while it is read is read again
// this many times before it is left out.
const captureRetries = 4

// settleWindow: a file whose ctime is less than this before the moment its
// read starts is read only once the window has passed. A write() sets the
// mtime and ctime first, then copies its data into the page cache, and
// raises the size last (ext4, and the generic write path of other file
// systems): an fstat before and one after a read that both fall inside one
// write agree (new times, old size), and the bytes read are the new data
// cut at the old size, or a mix of old and new. Every write that stamped
// the ctime the fstat saw has finished once the window has passed, so what
// it changes after that fstat shows in the fstat after the read, and any
// later write moves the ctime (multigrain time stamps give a queried
// ctime's next change a later fine-grained stamp; with coarse stamps a
// write starting after the window stamps a later tick, the window being
// longer than a tick: 10 ms at HZ=100). The wait ends at the ctime plus
// the window, so files written in one burst share it: a checkpoint of a
// tree written just before waits about one window in all. Limit: a
// write() whose copy ends more than the window after its time stamp (a
// coarse stamp can be up to one tick before the call: so 15 ms at HZ=100),
// e.g. a writer preempted or throttled that long inside one write(), is
// not detected by the window; writeBarrier waits for it where the file
// system allows.
const settleWindow = 25 * time.Millisecond

// keyMargin: a file whose ctime is this far before the moment it was read
// can be recognised by its stat next time (a later change of it moves the
// ctime past the read, whatever the time stamp granularity).
const keyMargin = 2 * time.Second

func newScanner(ctx context.Context, f *Store, w davfs.Target, store *ckStore, refs ...*ckManifest) *scanner {
	// Only the part of each reference inside what is scanned counts (a
	// one-file compare or restore of a 200,000-entry checkpoint indexes
	// one entry, not all of them), and the hashes only when capturing.
	var scoped [][]ckEntry
	n := 0
	for _, m := range refs {
		if m != nil {
			es := scopeRange(m.Entries, w.Path())
			scoped = append(scoped, es)
			n += len(es)
		}
	}
	// Sized once: growing maps of a 10,000-entry manifest showed in the
	// second checkpoint's profile.
	s := &scanner{ctx: ctx, f: f, w: w, store: store, ref: make(map[string]*ckEntry, n),
		blocked: map[string]struct{}{}, pinned: map[string]struct{}{}, out: make([]ckEntry, 0, n)}
	if store != nil {
		s.known = make(map[string]*ckEntry, n)
		s.budget = store.captureBudget()
	}
	for _, es := range scoped {
		for i := range es {
			e := &es[i]
			if e.Dir || !validHash(e.Hash) || !within(e.Path, w.Path()) {
				continue
			}
			if e.Key {
				s.ref[e.Path] = e
			}
			if store != nil {
				s.known[e.Hash] = e
			}
		}
	}
	return s
}

// block records rel as present but not captured.
func (s *scanner) block(rel string) {
	s.blocked[rel] = struct{}{}
	for p := rel; p != ""; {
		p = parentPath(p)
		s.pinned[p] = struct{}{}
	}
}

// parentPath is the workspace path of p's parent ("" the root).
func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// scan walks s.w: the workspace root (for GLOBAL, skills/ and AGENTS.md)
// or the one directory or file it names. A missing target is NotFound.
func (s *scanner) scan() error {
	w := s.w
	if err := s.f.fs.WorkspaceErr(w); err != nil {
		return err
	}
	switch {
	case w.IsRoot() && w.IsGlobal():
		fd, err := s.f.fs.OpenTarget(w, fdio.DirPath)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for _, name := range []string{davfs.GlobalSkills, davfs.GlobalAgents} {
			if err := s.entry(fd, name, name, 1, nil); err != nil {
				return err
			}
		}
	case w.IsRoot():
		fd, err := s.f.fs.OpenTarget(w, fdio.DirRead)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := s.dir(fd, "", 0); err != nil {
			return err
		}
	default:
		pfd, err := s.f.fs.OpenParent(w, fdio.DirPath)
		if err != nil {
			return err
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := s.f.fs.LstatAt(w, pfd, w.Name(), &st); err != nil {
			return davfs.PathError(err, w.Path())
		}
		if err := s.entry(pfd, w.Name(), w.Path(), w.Depth(), nil); err != nil {
			return err
		}
	}
	slices.SortFunc(s.out, func(a, b ckEntry) int { return strings.Compare(a.Path, b.Path) })
	return nil
}

func (s *scanner) dir(fd int, rel string, depth int) error {
	ents, err := fdio.ReadDirents(fd)
	if err != nil {
		return davfs.PathError(err, rel)
	}
	var pre []prestat // the prestats of ents[base:next] (nil: none taken)
	base, next := 0, 0
	for i, d := range ents {
		if err := s.ctx.Err(); err != nil {
			return davfs.ContextError(s.ctx)
		}
		if i == next {
			n := s.prestatCount(len(ents) - i)
			pre, base, next = s.prestat(fd, ents[i:i+n]), i, i+n
		}
		var p *prestat
		if pre != nil {
			p = &pre[i-base]
		}
		if err := s.entry(fd, d.Name, childRel(rel, d.Name), depth+1, p); err != nil {
			return err
		}
	}
	return nil
}

// prestatMin: a directory with at least this many names has them lstat'ed
// on GOMAXPROCS workers before the walk records them one by one
// (prestatChunk names per claim). The stat of an unchanged file is most of
// a second checkpoint's work.
const (
	prestatMin   = 32
	prestatChunk = 16
)

// prestatWindow bounds the names one prestat stats ahead of the walk: a
// prestat is about 160 bytes, so a directory of a million names holds
// them for a window at a time, not for the whole directory.
const prestatWindow = 1024

// prestatCount is how many of the remaining names of a directory the next
// prestat stats: at most a window, and at most one past what
// services.checkpoints.maxEntries still allows (the capture fails at that
// name, so statting more ahead of it is wasted work and memory).
func (s *scanner) prestatCount(remaining int) int {
	n := min(remaining, prestatWindow)
	if s.store != nil {
		n = min(n, s.store.cfg.MaxEntries-len(s.out)-len(s.blocked)+1)
	}
	return max(n, 1)
}

// prestat is one name's lstat (LstatAt: never following a symlink, EXDEV
// for another mount), taken ahead of entry.
type prestat struct {
	st  unix.Stat_t
	err error
}

// prestat lstats the names of the open directory fd on parallel workers,
// or returns nil (too few names, one CPU): entry then stats each itself.
// A prestat is what entry would have read a moment later; nothing about
// confinement changes: it is taken the same way, and everything entry opens
// is opened without following links and checked by fstat against it, as
// before.
func (s *scanner) prestat(fd int, ents []fdio.Dirent) []prestat {
	workers := min(runtime.GOMAXPROCS(0), (len(ents)+prestatChunk-1)/prestatChunk)
	if len(ents) < prestatMin || workers < 2 {
		return nil
	}
	out := make([]prestat, len(ents))
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		defer wg.Done()
		for {
			lo := int(next.Add(prestatChunk)) - prestatChunk
			if lo >= len(ents) || s.ctx.Err() != nil {
				return // canceled: the walk's own check reports it
			}
			for i := lo; i < min(lo+prestatChunk, len(ents)); i++ {
				out[i].err = s.f.fs.LstatAt(s.w, fd, ents[i].Name, &out[i].st)
			}
		}
	}
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	return out
}

// entry records the name in pfd (rel in the workspace, depth segments),
// given its prestat (nil: entry stats it).
func (s *scanner) entry(pfd int, name, rel string, depth int, pre *prestat) error {
	f := s.f
	if s.store != nil && len(s.out)+len(s.blocked) >= s.store.cfg.MaxEntries {
		// Memory and the manifest stay bounded: the capture fails whole.
		return errCheckpointLimit(fmt.Sprintf("it holds more than services.checkpoints.maxEntries (%d) names", s.store.cfg.MaxEntries))
	}
	if !f.fs.Visible(name) || depth > f.cfg.MaxPathDepth || len(rel) > f.cfg.MaxPathLength {
		s.block(rel)
		return nil
	}
	var st unix.Stat_t
	var err error
	if pre != nil {
		st, err = pre.st, pre.err
	} else {
		err = f.fs.LstatAt(s.w, pfd, name, &st)
	}
	if err != nil {
		switch fdio.Errno(err) {
		case unix.ENOENT:
			return nil // gone meanwhile
		case unix.EXDEV:
			s.block(rel)
			return nil
		}
		return davfs.PathError(err, rel)
	}
	// A case that does not return (break) leaves rel blocked.
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if s.w.IsGlobal() && rel == davfs.GlobalAgents {
			break
		}
		fd, err := f.fs.OpenAt(s.w, pfd, name, fdio.DirRead)
		if fdio.Errno(err) == unix.ENOENT {
			return nil
		}
		if err != nil {
			break
		}
		defer unix.Close(fd)
		var cur unix.Stat_t
		if err := unix.Fstat(fd, &cur); err != nil || cur.Ino != st.Ino || cur.Dev != st.Dev {
			break
		}
		s.out = append(s.out, ckEntry{Path: rel, Dir: true, Mode: uint32(cur.Mode & 0o7777), Mtime: cur.Mtim.Nano()})
		return s.dir(fd, rel, depth)
	case unix.S_IFREG:
		if st.Nlink > 1 || (s.w.IsGlobal() && rel == davfs.GlobalSkills) {
			break
		}
		e, ok, err := s.file(pfd, name, rel, &st)
		if err != nil {
			return err
		}
		if ok {
			s.out = append(s.out, e)
			return nil
		}
	}
	s.block(rel)
	return nil
}

func entryOf(rel string, st *unix.Stat_t, h string, readAt time.Time) ckEntry {
	return ckEntry{Path: rel, Mode: uint32(st.Mode & 0o7777), Size: st.Size, Hash: h, Mtime: st.Mtim.Nano(),
		Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano(), Key: st.Ctim.Nano() < readAt.Add(-keyMargin).UnixNano()}
}

func sameStat(a, b *unix.Stat_t) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Size == b.Size && a.Mtim == b.Mtim && a.Ctim == b.Ctim && a.Mode == b.Mode
}

// file captures (or hashes) one regular file, whole, as of one moment: the
// bytes read from one fd whose fstat did not move while they were read. ok
// is false for a file that is not a single-link regular file any more, or
// kept changing.
func (s *scanner) file(pfd int, name, rel string, st *unix.Stat_t) (ckEntry, bool, error) {
	if r := s.ref[rel]; r != nil && statIsEntry(st, r) && validHash(r.Hash) {
		e := *r
		e.Mode = uint32(st.Mode & 0o7777)
		return e, true, nil // unchanged since the checkpoint that read it
	}
	for range captureRetries {
		fd, err := s.f.fs.OpenAt(s.w, pfd, name, fdio.File)
		if err != nil {
			return ckEntry{}, false, nil
		}
		e, stable, err := s.read(fd, rel) // on an error: ckEntry{}, false
		unix.Close(fd)
		if err != nil || stable {
			return e, stable, err
		}
	}
	return ckEntry{}, false, nil
}

// smallObject: files up to this size are read into memory, hashed, and
// written only when the object is missing.
const smallObject = 1 << 20

// read reads one open file. stable is false when it must be read again.
func (s *scanner) read(fd int, rel string) (ckEntry, bool, error) {
	var before unix.Stat_t
	if err := unix.Fstat(fd, &before); err != nil {
		return ckEntry{}, false, davfs.PathError(err, rel)
	}
	if !fdio.IsType(&before, unix.S_IFREG) || before.Nlink > 1 {
		return ckEntry{}, false, nil
	}
	readAt := time.Now()
	if err := s.settle(fd, rel, &before, readAt); err != nil {
		return ckEntry{}, false, err
	}
	if s.store == nil || before.Size <= smallObject {
		return s.readSmall(fd, rel, &before, readAt)
	}
	return s.readLarge(fd, rel, &before, readAt)
}

// readSmall reads a file of up to smallObject bytes (or any file when there
// is no store) into memory and hashes it; before is its settled fstat.
func (s *scanner) readSmall(fd int, rel string, before *unix.Stat_t, readAt time.Time) (ckEntry, bool, error) {
	var after unix.Stat_t
	h, b, n, err := s.hashAll(fd, before.Size, s.store != nil)
	if err != nil {
		return ckEntry{}, false, davfs.PathError(err, rel)
	}
	if err := unix.Fstat(fd, &after); err != nil {
		return ckEntry{}, false, davfs.PathError(err, rel)
	}
	if !sameStat(before, &after) || n != before.Size {
		return ckEntry{}, false, nil
	}
	e := entryOf(rel, before, h, readAt)
	if s.store != nil {
		if err := s.storeSmall(&e, h, b); err != nil {
			return ckEntry{}, false, err
		}
	}
	return e, true, nil
}

// storeSmall stores b, the content of e hashed to h, unless the same bytes
// are stored already: above packMax as a loose object, else into the pack.
func (s *scanner) storeSmall(e *ckEntry, h string, b []byte) error {
	if k, ok := s.known[h]; ok {
		e.Pack, e.Off = k.Pack, k.Off // the same bytes are stored already
	} else if len(b) > packMax {
		added, err := s.store.putBytes(h, b)
		if err != nil {
			return errStore(err)
		}
		s.added += added
		s.loose++
		s.known[h] = e
		if s.added > s.budget.bytes {
			return s.budget.err()
		}
	} else {
		off, err := s.pack.add(b)
		if err != nil {
			return errStore(err)
		}
		e.Pack, e.Off = s.pack.id, off
		s.added += int64(len(b))
		s.known[h] = e
		if s.added > s.budget.bytes {
			return s.budget.err()
		}
	}
	return nil
}

// readLarge streams a large file into a temp object while it is hashed;
// before is its settled fstat.
func (s *scanner) readLarge(fd int, rel string, before *unix.Stat_t, readAt time.Time) (ckEntry, bool, error) {
	var after unix.Stat_t
	t, err := fdio.CreateTemp(s.store.tmpfd)
	if err != nil {
		return ckEntry{}, false, errStore(err)
	}
	d := sha256.New()
	n, used, err := s.copy(t.FD, fd, d)
	if err != nil {
		t.Discard(s.store.tmpfd)
		return ckEntry{}, false, err
	}
	unix.Close(t.FD)
	if err := unix.Fstat(fd, &after); err != nil || !sameStat(before, &after) || n != before.Size {
		unix.Unlinkat(s.store.tmpfd, t.Name, 0)
		return ckEntry{}, false, nil
	}
	h := hex.EncodeToString(d.Sum(nil))
	added, err := s.store.putTemp(t.Name, h, used)
	if err != nil {
		return ckEntry{}, false, errStore(err)
	}
	s.added += added
	s.loose++
	if s.added > s.budget.bytes {
		return ckEntry{}, false, s.budget.err()
	}
	e := entryOf(rel, before, h, readAt)
	s.known[h] = &e
	return e, true, nil
}

// settle returns once no write() that the fstat st may have seen half done
// is still in flight (settleWindow, writeBarrier): what it changes after
// that fstat then shows in the fstat after the read. The wait ends at st's
// ctime plus the window, counted from now, read after that fstat (a clock
// read before it could be earlier than a ctime it sees). A ctime ahead of
// the clock was stamped before the clock was stepped back, so the write
// that stamped it started before the step, and so before the first such
// file this scan meets: that file waits one window, and every later one
// shares its end (files written before a step would otherwise cost a
// window each, at every checkpoint, until the clock catches up).
func (s *scanner) settle(fd int, rel string, st *unix.Stat_t, now time.Time) error {
	end := time.Unix(0, st.Ctim.Nano()).Add(settleWindow)
	if end.Sub(now) > settleWindow {
		if s.ahead.IsZero() {
			s.ahead = now.Add(settleWindow)
		}
		end = s.ahead
	}
	if wait := end.Sub(now); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-s.ctx.Done():
			return davfs.ContextError(s.ctx)
		case <-t.C:
		}
	}
	return writeBarrier(fd, rel)
}

// writeBarrier waits for a write() in flight on fd to finish, however
// long it takes: ext4, btrfs and tmpfs take the inode lock (shared) for
// SEEK_DATA, which a buffered write() holds (exclusive) from before it
// stamps the times until after it raised the size. Where SEEK_DATA takes
// no such lock (xfs) it returns at once, and only settleWindow protects.
// The fd's offset is put back at 0 for the reads that follow.
func writeBarrier(fd int, rel string) error {
	off, err := unix.Seek(fd, 0, unix.SEEK_DATA)
	if err != nil || off == 0 {
		return nil // ENXIO: no data (empty, or one hole)
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_SET); err != nil {
		return davfs.PathError(err, rel)
	}
	return nil
}

// hashAll reads all of fd (size bytes expected) and hashes it; keep
// returns the bytes too.
func (s *scanner) hashAll(fd int, size int64, keep bool) (string, []byte, int64, error) {
	if s.buf == nil {
		s.buf = make([]byte, 256<<10)
	}
	d := sha256.New()
	if keep && size <= smallObject {
		b, _, err := fdio.ReadAllAt(fd, size, nil)
		if err != nil {
			return "", nil, 0, err
		}
		// One byte more than the stat said: the file grew; the caller's
		// stat comparison sees the size anyway.
		d.Write(b)
		return hex.EncodeToString(d.Sum(nil)), b, int64(len(b)), nil
	}
	var n int64
	for {
		m, err := unix.Read(fd, s.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", nil, 0, err
		}
		if m == 0 {
			break
		}
		d.Write(s.buf[:m])
		n += int64(m)
	}
	return hex.EncodeToString(d.Sum(nil)), nil, n, nil
}

// copy copies src to dst, hashing the bytes, with dst's all-zero blocks
// left as holes (a sparse object). It returns the bytes copied and what
// dst occupies on the store's volume.
func (s *scanner) copy(dst, src int, d hash.Hash) (n, used int64, err error) {
	if s.buf == nil {
		s.buf = make([]byte, 256<<10)
	}
	var written int64 // bytes of data blocks written: what the budget counts while copying
	for {
		if err := s.ctx.Err(); err != nil {
			return n, 0, davfs.ContextError(s.ctx)
		}
		m, err := unix.Read(src, s.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, 0, davfs.PathError(err, "")
		}
		if m == 0 {
			break
		}
		d.Write(s.buf[:m])
		w, err := writeSparse(dst, s.buf[:m], n)
		if err != nil {
			return n, 0, errStore(err)
		}
		n += int64(m)
		if written += w; s.added+written > s.budget.bytes {
			return n, 0, s.budget.err()
		}
	}
	// The size, with a trailing hole; then what the object occupies.
	var st unix.Stat_t
	if err := unix.Ftruncate(dst, n); err != nil {
		return n, 0, errStore(err)
	}
	if err := unix.Fstat(dst, &st); err != nil {
		return n, 0, errStore(err)
	}
	return n, occupied(&st), nil
}
