package watch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
)

// Watcher watches directories of one davfs.FS for its subscribers (see
// the package comment for what it guarantees).
type Watcher struct {
	f     *davfs.FS
	cfg   Config
	agg   aggConfig
	k     *kernel
	epoch string

	mu     sync.Mutex
	seq    uint64
	dirs   map[string]*dirWatch // by workspace key + path
	byProc map[string]*dirWatch // by the /proc/self/fd path inotify knows
	subs   map[*Subscription]struct{}
	ring   []Change // recent published changes (History at most), oldest first
	// histFrom: every change published after this position is in the ring
	// (it moves when the ring drops its oldest change or is cleared).
	histFrom uint64
	closed   bool

	stats counters
	done  chan struct{}
	wg    sync.WaitGroup
}

// dirWatch is one watched directory, shared by its subscribers.
type dirWatch struct {
	key      string
	dir      *davfs.Dir // held for the life of the watch; the inotify watch is on its fd
	ws       davfs.Workspace
	path     string
	dev, ino uint64
	proc     string
	root     bool // the Global root: only skills and AGENTS.md

	since uint64 // seq when the watch began: changes after it are all in the ring
	subs  map[*Subscription]struct{}
	idle  time.Time // when the last subscriber left (zero while subscribed)
	gone  bool
	agg   aggregator // under Watcher.mu

	flushMu sync.Mutex // serialises flushes; guards known and rev
	known   map[string]knownEntry
	rev     string
}

var errWatchLimit = errors.New("watch limit")

// New starts a Watcher over f. Close it before closing f.
func New(f *davfs.FS, cfg Config) (*Watcher, error) {
	if err := f.Alive(); err != nil {
		return nil, err
	}
	k, err := newKernel()
	if err != nil {
		return nil, &davfs.Error{Code: davfs.CodeUnavailable, Reason: davfs.ReasonInternal, Err: err, Message: "cannot start a file watcher"}
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		k.close()
		return nil, &davfs.Error{Code: davfs.CodeInternal, Reason: davfs.ReasonInternal, Err: err, Message: "cannot start a file watcher"}
	}
	cfg = cfg.withDefaults()
	w := &Watcher{
		f: f, cfg: cfg, agg: cfg.agg(), k: k, epoch: hex.EncodeToString(b[:]),
		dirs: map[string]*dirWatch{}, byProc: map[string]*dirWatch{}, subs: map[*Subscription]struct{}{},
		done: make(chan struct{}),
	}
	w.wg.Go(func() { k.run(w.done, cfg.Revalidate, w, func(msg string) { cfg.Logger.Warn(msg) }) })
	return w, nil
}

// Close ends every subscription (Next returns an error) and every watch.
func (w *Watcher) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	for s := range w.subs {
		s.end()
	}
	for _, d := range w.dirs {
		d.dir.Close()
	}
	w.dirs, w.byProc = map[string]*dirWatch{}, map[string]*dirWatch{}
	w.mu.Unlock()
	close(w.done)
	err := w.k.close()
	w.wg.Wait()
	return err
}

// Stats returns the current gauges and counters.
func (w *Watcher) Stats() Stats {
	st := w.stats.load()
	w.mu.Lock()
	st.Subscribers, st.WatchedDirs = len(w.subs), len(w.dirs)
	w.mu.Unlock()
	return st
}

func wsKey(ws davfs.Workspace) string {
	if ws.Scope == davfs.ScopeGlobal {
		return "g"
	}
	return "p/" + ws.Project
}

// Subscribe watches dirs of ws and returns the subscription; its first
// change is Ready. With resumeAfter (a Change ID of an earlier
// subscription), changes after it in directories that stayed watched are
// replayed first, and a Resync(GAP) names what cannot be replayed.
//
// A path that is not valid, denylisted or outside Global is refused
// (InvalidArgument/PermissionDenied); a directory that does not exist (or
// no longer is one) is reported as Resync(GONE), one over a cap as
// Resync(LIMIT).
func (w *Watcher) Subscribe(ctx context.Context, ws davfs.Workspace, dirs []string, resumeAfter string) (*Subscription, error) {
	if len(dirs) == 0 {
		return nil, &davfs.Error{Code: davfs.CodeInvalidArgument, Reason: davfs.ReasonInvalidArgument,
			Message: "name at least one directory to watch"}
	}
	var paths []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if err := w.f.CheckDir(ws, d); err != nil {
			return nil, err
		}
		if !seen[d] {
			seen[d] = true
			paths = append(paths, d)
		}
	}
	resumeSeq, resumeOK, err := w.parseResume(resumeAfter)
	if err != nil {
		return nil, err
	}
	s := &Subscription{w: w, ws: ws, notify: make(chan struct{}, 1)}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, &davfs.Error{Code: davfs.CodeUnavailable, Reason: davfs.ReasonInternal, Message: "file system is closed"}
	}
	a, err := w.attachLocked(ctx, s, paths, resume{given: resumeAfter != "", ok: resumeOK, seq: resumeSeq})
	if err != nil {
		return nil, err
	}
	w.subs[s] = struct{}{}
	s.pushLocked(Change{ID: w.idLocked(), Kind: ChangeReady, Workspace: ws, Directories: a.live})
	if len(a.limited) > 0 {
		w.resyncLocked(s, ws, ResyncLimit, a.limited)
	}
	if len(a.gone) > 0 {
		w.resyncLocked(s, ws, ResyncGone, a.gone)
	}
	gap := a.gap
	if resumeOK {
		gap = w.replayLocked(s, resumeSeq, a.live, gap)
	}
	if len(gap) > 0 {
		w.resyncLocked(s, ws, ResyncGap, gap)
	}
	return s, nil
}

// attached sorts a subscription's directories.
type attached struct{ live, gone, limited, gap []string }

// resume is a subscription's resume position: given, of this process
// (ok), and where.
type resume struct {
	given, ok bool
	seq       uint64
}

// attachLocked puts s on the watch of each of paths. When resuming, a
// watch begun now missed whatever happened while the client was away, as
// did every watch when the position is of another process; an older one
// has every change after d.since in the ring.
func (w *Watcher) attachLocked(ctx context.Context, s *Subscription, paths []string, r resume) (attached, error) {
	var a attached
	for i, p := range paths {
		if i >= w.cfg.MaxDirsPerSubscriber {
			a.limited = append(a.limited, p)
			continue
		}
		d, fresh, err := w.acquireLocked(ctx, s.ws, p)
		switch {
		case err == nil:
		case errors.Is(err, errWatchLimit):
			a.limited = append(a.limited, p)
			continue
		case davfs.CodeOf(err) == davfs.CodeInvalidArgument || davfs.ReasonOf(err) == davfs.ReasonDenylisted || davfs.ReasonOf(err) == davfs.ReasonOutsideGlobal:
			w.releaseAllLocked(s)
			return attached{}, err
		default:
			a.gone = append(a.gone, p)
			continue
		}
		d.subs[s] = struct{}{}
		d.idle = time.Time{}
		s.dirs = append(s.dirs, d)
		a.live = append(a.live, p)
		if r.given && (!r.ok || fresh || d.since > r.seq+1) {
			a.gap = append(a.gap, p)
		}
	}
	return a, nil
}

// acquireLocked returns the watch of rel in ws, creating it (fresh).
func (w *Watcher) acquireLocked(ctx context.Context, ws davfs.Workspace, rel string) (d *dirWatch, fresh bool, err error) {
	key := wsKey(ws) + "\x00" + rel
	if d, ok := w.dirs[key]; ok {
		return d, false, nil
	}
	if len(w.dirs) >= w.cfg.MaxDirs && !w.evictIdleLocked() {
		return nil, false, errWatchLimit
	}
	dir, err := w.f.OpenDir(ws, rel)
	if err != nil {
		return nil, false, err
	}
	dev, ino := dir.Identity()
	// A directory has one path: a watch of the same inode under another
	// path is of a directory that moved (its parent was renamed). inotify
	// would hand both the same watch descriptor; end the stale one first.
	for _, old := range w.dirs {
		if old.dev == dev && old.ino == ino {
			w.goneLocked(old)
			break
		}
	}
	d = &dirWatch{
		key: key, dir: dir, ws: ws, path: rel, dev: dev, ino: ino,
		proc: dir.ProcPath(), root: dir.GlobalRoot(), subs: map[*Subscription]struct{}{},
	}
	if err := w.k.add(d.proc); err != nil {
		dir.Close()
		if errors.Is(err, unix.ENOSPC) {
			w.cfg.Logger.Warn("live changes: fs.inotify.max_user_watches reached; directory not watched")
			return nil, false, errWatchLimit
		}
		w.cfg.Logger.Warn("live changes: cannot watch a directory", "error", errnoOf(err).Error())
		return nil, false, davfs.PathError(err, rel)
	}
	// Read what is there now, after the watch is in place: a change after
	// this point is an inotify event.
	if d.known, d.rev, err = snapshot(ctx, dir); err != nil {
		w.k.remove(d.proc)
		dir.Close()
		return nil, false, err
	}
	// The watch takes a position of its own: whatever changed before it
	// began is unknown, so every earlier position (the current one
	// included: a client whose last id is it may have missed a change
	// while the directory was not watched) resumes with a gap.
	w.seq++
	d.since = w.seq + 1
	w.dirs[key] = d
	w.byProc[d.proc] = d
	return d, true, nil
}

// errnoOf extracts a unix.Errno from err, 0 if there is none.
func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

func (w *Watcher) evictIdleLocked() bool {
	var old *dirWatch
	for _, d := range w.dirs {
		if len(d.subs) == 0 && (old == nil || d.idle.Before(old.idle)) {
			old = d
		}
	}
	if old == nil {
		return false
	}
	w.dropLocked(old)
	return true
}

func (w *Watcher) dropLocked(d *dirWatch) {
	if w.dirs[d.key] != d {
		return
	}
	delete(w.dirs, d.key)
	delete(w.byProc, d.proc)
	d.gone = true
	w.k.remove(d.proc)
	d.dir.Close()
}

func (w *Watcher) releaseAllLocked(s *Subscription) {
	for _, d := range s.dirs {
		delete(d.subs, s)
		if len(d.subs) == 0 {
			d.idle = w.cfg.Now()
		}
	}
	s.dirs = nil
	delete(w.subs, s)
}

// event (the kernel's sink) turns an inotify event into a pending name,
// a change of the directory itself, or the end of its watch.
func (w *Watcher) event(name string, removed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, base := w.byProc[name], ""
	if d == nil {
		// An event of a name in a watched directory.
		dir, b := path.Split(name)
		if d, base = w.byProc[strings.TrimSuffix(dir, "/")], b; d == nil {
			return
		}
	}
	switch {
	case base == "" && removed:
		// The watched directory itself was moved or deleted.
		w.goneLocked(d)
		return
	case base == "":
		// Its own attributes changed (chmod, chown): its revision did.
		d.agg.touch()
	case !d.dir.Visible(base):
		w.stats.filtered.Add(1)
		// The name is never published, but its creation, removal or
		// rename changed the directory's own revision (mkdir
		// node_modules): publish that, so a later rename or delete of the
		// directory with the last published revision is not refused. Not
		// in the Global root, whose other names (auth.json, sessions) must
		// not even show as activity, and which is never renamed or deleted.
		if d.root {
			return
		}
		d.agg.touch()
	default:
		d.agg.name(base, w.cfg.Now(), w.agg)
	}
	w.armLocked(d)
}

func (w *Watcher) armLocked(d *dirWatch) {
	if delay, ok := d.agg.arm(w.agg); ok {
		time.AfterFunc(delay, func() { w.flush(d) })
	}
}

// goneLocked ends d's watch and tells its subscribers.
func (w *Watcher) goneLocked(d *dirWatch) {
	if d.gone {
		return
	}
	w.dropLocked(d)
	for s := range d.subs {
		w.resyncLocked(s, d.ws, ResyncGone, []string{d.path})
		s.dirs = slices.DeleteFunc(s.dirs, func(x *dirWatch) bool { return x == d })
	}
}

func (w *Watcher) gone(d *dirWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.goneLocked(d)
}

// flush publishes what d has pending: each changed name compared with
// what d knew, or, in a burst, one Directory change.
func (w *Watcher) flush(d *dirWatch) {
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	w.mu.Lock()
	if d.gone || w.closed {
		w.mu.Unlock()
		return
	}
	b := d.agg.take()
	w.mu.Unlock()

	if !d.dir.Same() {
		w.gone(d)
		return
	}
	// readAt is taken before any of the watcher's reads, on the file
	// system's clock (revisions are compared with ctimes): what is
	// published shows the directory as it was no earlier than this.
	ctx := context.Background()
	readAt := time.Now()
	out, ok := w.batchChanges(ctx, d, &b)
	if !ok {
		w.gone(d)
		return
	}
	w.mu.Lock()
	d.agg.published(b, w.cfg.Now(), w.agg)
	w.publishLocked(d, out, readAt)
	w.mu.Unlock()
}

// batchChanges reads what b names and returns the changes to publish; ok
// is false when the directory cannot be read any more.
func (w *Watcher) batchChanges(ctx context.Context, d *dirWatch, b *batch) ([]Change, bool) {
	if b.refresh && !b.burst {
		// After a kernel overflow: whatever differs from what was last
		// published is a change (some may have come after the resync the
		// subscribers were sent), reported like any other, or as one
		// reload when there is too much of it.
		w.stats.relists.Add(1)
		snap, _, err := snapshot(ctx, d.dir)
		if err != nil {
			return nil, false
		}
		*b = refreshed(*b, d.known, snap, w.agg)
	}
	if !b.burst {
		return w.diff(ctx, d, b.names, b.self), true
	}
	if !w.reload(ctx, d, b.names, b.relist || b.refresh) {
		return nil, false
	}
	self, _ := d.dir.Stat(ctx, "")
	return []Change{{Kind: ChangeDirectory, Path: d.path, Entry: self}}, true
}

// overflow (the kernel's sink): the kernel dropped events. Every
// subscriber resyncs and every watch re-reads its directory.
func (w *Watcher) overflow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cfg.Observer != nil {
		w.cfg.Observer.Overflow()
	}
	for s := range w.subs {
		w.resyncLocked(s, s.ws, ResyncOverflow, nil)
	}
	// Nothing before this point can be replayed exactly: the overflow takes
	// a position of its own, so no earlier position counts as complete.
	w.seq++
	w.ring, w.histFrom = nil, w.seq
	for _, d := range w.dirs {
		d.since = w.seq + 1
		d.agg.overflowed()
		w.armLocked(d)
	}
}

// housekeep (the kernel's sink, every Revalidate) drops watches idle past
// Linger and ends watches whose path no longer resolves to the watched
// directory (a delete inotify reports only once the held fd is closed).
func (w *Watcher) housekeep() {
	w.mu.Lock()
	now := w.cfg.Now()
	var check []*dirWatch
	for _, d := range w.dirs {
		if len(d.subs) == 0 && now.Sub(d.idle) > w.cfg.Linger {
			w.dropLocked(d)
			continue
		}
		check = append(check, d)
	}
	w.mu.Unlock()
	for _, d := range check {
		if !d.dir.Same() {
			w.gone(d)
		}
	}
}
