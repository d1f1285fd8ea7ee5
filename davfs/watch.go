package davfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// Live changes (issue #16): a Watcher watches only the directories its
// subscribers ask for, through the same confinement as every other davfs
// operation, and turns what inotify reports into Changes.
//
// Guarantees:
//   - A watched directory is opened by davfs's confined resolution (openat2
//     RESOLVE_BENEATH|NO_SYMLINKS|NO_XDEV, or the O_NOFOLLOW walk) and the
//     inotify watch is put on that fd (/proc/self/fd/N), never on a joined
//     host path; the fd is held for the life of the watch.
//   - A name is reported only if a listing would show it: denylisted names,
//     davfs temp files, invalid names and, in the Global root, anything but
//     skills and AGENTS.md are dropped before anything is stat'ed; each
//     remaining name is stat'ed through FS.Stat (confined, from the root),
//     so a symlink, FIFO or a name under a moved-away directory yields no
//     Created/Modified, only, if it was visible before, Removed.
//   - Before a batch is published the watched directory is re-resolved and
//     compared (dev, inode) with the watched one; a directory that moved,
//     was replaced (a symlink swap) or was deleted ends its watch with a
//     Resync(GONE) for that directory, never with events from its new place.
//   - A Change carries metadata (path, type, size, times, revision), never
//     content.
//
// Bounds: at most MaxDirs watched directories per Watcher (one inotify
// instance) and MaxDirsPerSubscriber per subscription; directories over
// either cap, or refused by the kernel (ENOSPC at fs.inotify.max_user_watches),
// are reported as Resync(LIMIT) with the directories that are not live. Each
// subscriber has a bounded queue; a subscriber that falls behind loses its
// queue and receives one Resync(OVERFLOW); a kernel queue overflow gives
// every subscriber a Resync(OVERFLOW). Bursts are coalesced per directory:
// names changed within Coalesce are published together, and once more than
// BurstEntries names changed within a second, the rest is one Directory
// ("reload this directory") change; while a burst lasts (until names stop
// arriving for BurstHold plus a second), the directory is published at
// most every BurstHold. A burst of any size thus costs at most
// BurstEntries entry changes plus one reload per BurstHold.
//
// Cost: what the watcher knows of a directory is updated incrementally,
// by a confined Stat of each name an event named (burst or not), so a
// write costs the same in a directory of 10 names or of 200,000 (issue
// #23). The directory is listed again whole only when that cannot be
// trusted or would cost more: after a kernel queue overflow, and when more
// than MaxPending names changed before one flush (then once for all of
// them).
//
// Limits: changes inside a subscribed directory's subdirectories are not
// reported unless those are subscribed too. Renames are paired by inode
// within one batch of one directory; a move between directories is a
// Removed and a Created. Watches whose last subscriber left linger for
// Linger so that a reconnecting client resumes without a gap.
type Watcher struct {
	f     *FS
	cfg   WatchConfig
	nw    *fsnotify.Watcher
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

	stats watchCounters
	done  chan struct{}
	wg    sync.WaitGroup
}

// WatchConfig bounds a Watcher. Zero values take the defaults in brackets.
type WatchConfig struct {
	MaxDirs              int           // watched directories per Watcher [4096]
	MaxDirsPerSubscriber int           // directories per subscription [256]
	Coalesce             time.Duration // window after a directory's first change [50ms]
	BurstHold            time.Duration // minimum spacing while a burst lasts [500ms]
	BurstEntries         int           // names per second above which a directory is reloaded [64]
	QueueLen             int           // pending changes per subscriber [512]
	Linger               time.Duration // an unsubscribed watch is kept this long [30s]
	History              int           // changes kept for resuming [4096]
	Revalidate           time.Duration // how often watched directories are re-resolved [2s]
	MaxPending           int           // names kept per directory between two flushes; more is one re-list [4096]
}

func (c WatchConfig) withDefaults() WatchConfig {
	positiveOr(&c.MaxDirs, 4096)
	positiveOr(&c.MaxDirsPerSubscriber, 256)
	positiveOr(&c.Coalesce, 50*time.Millisecond)
	positiveOr(&c.BurstHold, 500*time.Millisecond)
	positiveOr(&c.BurstEntries, 64)
	positiveOr(&c.QueueLen, 512)
	positiveOr(&c.Linger, 30*time.Second)
	positiveOr(&c.History, 4096)
	positiveOr(&c.Revalidate, 2*time.Second)
	positiveOr(&c.MaxPending, 4096)
	return c
}

// positiveOr sets *v to d unless it is positive.
func positiveOr[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// ChangeKind is what happened.
type ChangeKind int

const (
	ChangeUnspecified ChangeKind = iota
	// ChangeReady is the first change of every subscription: the watches
	// are in place; ID is the position to resume from.
	ChangeReady
	ChangeCreated
	ChangeModified
	ChangeRemoved
	ChangeRenamed // FromPath → Path, same inode
	// ChangeDirectory: too much changed in Directory at once; list it again.
	ChangeDirectory
	// ChangeResync: the listed Directories (all subscribed ones when empty)
	// may be stale; Reason says why.
	ChangeResync
)

// ResyncReason says why a ChangeResync was sent.
type ResyncReason int

const (
	ResyncUnspecified ResyncReason = iota
	ResyncOverflow                 // a queue overflowed (the kernel's or the subscriber's)
	ResyncLimit                    // a watch cap or fs.inotify.max_user_watches was hit: Directories are not live
	ResyncGap                      // resuming: changes since the given position are not all known
	ResyncGone                     // the directory was removed, moved or replaced: it is no longer watched
)

var resyncNames = [...]string{ResyncOverflow: "overflow", ResyncLimit: "limit", ResyncGap: "gap", ResyncGone: "gone"}

func (r ResyncReason) String() string {
	if r <= ResyncUnspecified || int(r) >= len(resyncNames) {
		return "unspecified"
	}
	return resyncNames[r]
}

// Change is one event of a subscription.
type Change struct {
	ID          string // "<epoch>-<seq>": resume from here (Subscribe's resumeAfter)
	Kind        ChangeKind
	Workspace   Workspace
	Directory   string // the subscribed directory the change was seen in
	Path        string // the entry (Created/Modified/Removed/Renamed), the directory (Directory)
	FromPath    string // Renamed: the old path
	Entry       Entry  // Created/Modified/Renamed/Directory: the entry as it is now (no content)
	Reason      ResyncReason
	Directories []string // Ready: the live directories; Resync: the affected ones (empty: all)

	seq uint64
	key string // the dirWatch key, for replay
}

// WatchStats are the Watcher's gauges and counters.
type WatchStats struct {
	Subscribers int
	WatchedDirs int
	Events      uint64                  // changes queued to subscribers
	Filtered    uint64                  // inotify events dropped by the confinement filter
	Drops       uint64                  // changes lost to a full subscriber queue
	Resyncs     map[ResyncReason]uint64 // resync changes sent, by reason
	Relists     uint64                  // watched directories listed again whole (kernel overflow, more than MaxPending names)
}

type watchCounters struct {
	events, filtered, drops, relists atomic.Uint64
	resyncs                          [len(resyncNames)]atomic.Uint64 // by reason
}

// knownEntry is what a watch knows of one name: its inode (rename
// pairing) and a 64-bit FNV-1a digest of its revision (revKey): a
// directory of 200,000 names keeps 16 bytes per name, not its revision
// strings.
type knownEntry struct {
	ino uint64
	rev uint64
}

// revKey is the FNV-1a digest of a revision string. Two revisions of one
// name with the same digest (a chance of 2^-64) would hide one Modified.
func revKey(rev string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(rev); i++ {
		h = (h ^ uint64(rev[i])) * 1099511628211
	}
	return h
}

// dirWatch is one watched directory, shared by its subscribers.
type dirWatch struct {
	key  string
	ws   Workspace
	dir  string
	w    wsPath
	fd   int // O_PATH fd from the confined resolution; the inotify watch is on it
	dev  uint64
	ino  uint64
	proc string
	root bool // the Global root: only skills and AGENTS.md

	since uint64 // seq when the watch began: changes after it are all in the ring
	subs  map[*Subscription]struct{}
	idle  time.Time // when the last subscriber left (zero while subscribed)
	gone  bool

	// under Watcher.mu
	pending map[string]struct{}
	self    bool // the directory's own attributes changed
	burst   bool
	relist  bool // more than MaxPending names since the last flush: list it again
	armed   bool
	hot     bool // the last batch was a burst: hold the next one
	// names published one by one in the current rate period (a second):
	// a slow, steady burst (a shell loop) is coalesced too.
	recentN  int
	recentAt time.Time
	// the rate period does not restart before then: a burst that slows
	// down (a loaded machine) is still one burst
	hotUntil time.Time

	flushMu sync.Mutex // serialises flushes; guards known and rev
	known   map[string]knownEntry
	rev     string
	refresh bool // re-read known silently (after a kernel overflow)
}

// NewWatcher starts a Watcher over f. Close it before closing f.
func (f *FS) NewWatcher(cfg WatchConfig) (*Watcher, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	nw, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return nil, newErr(CodeUnavailable, ReasonInternal, err, "cannot start a file watcher")
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		nw.Close()
		return nil, newErr(CodeInternal, ReasonInternal, err, "cannot start a file watcher")
	}
	w := &Watcher{
		f: f, cfg: cfg.withDefaults(), nw: nw, epoch: hex.EncodeToString(b[:]),
		dirs: map[string]*dirWatch{}, byProc: map[string]*dirWatch{}, subs: map[*Subscription]struct{}{},
		done: make(chan struct{}),
	}
	w.wg.Go(w.loop)
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
		unix.Close(d.fd)
	}
	w.dirs, w.byProc = map[string]*dirWatch{}, map[string]*dirWatch{}
	w.mu.Unlock()
	close(w.done)
	err := w.nw.Close()
	w.wg.Wait()
	return err
}

// Stats returns the current gauges and counters.
func (w *Watcher) Stats() WatchStats {
	w.mu.Lock()
	st := WatchStats{Subscribers: len(w.subs), WatchedDirs: len(w.dirs)}
	w.mu.Unlock()
	st.Events = w.stats.events.Load()
	st.Filtered = w.stats.filtered.Load()
	st.Drops = w.stats.drops.Load()
	st.Relists = w.stats.relists.Load()
	st.Resyncs = map[ResyncReason]uint64{}
	for r := ResyncOverflow; int(r) < len(resyncNames); r++ {
		st.Resyncs[r] = w.stats.resyncs[r].Load()
	}
	return st
}

func wsKey(ws Workspace) string {
	if ws.Scope == ScopeGlobal {
		return "g"
	}
	return "p/" + ws.Project
}

func (w *Watcher) idLocked() string { return w.epoch + "-" + strconv.FormatUint(w.seq, 10) }

// parseResume splits "<epoch>-<seq>"; ok is false for a position of
// another epoch (another process: nothing can be replayed) or none.
func (w *Watcher) parseResume(s string) (seq uint64, ok bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	ep, n, found := strings.Cut(s, "-")
	seq, perr := strconv.ParseUint(n, 10, 64)
	if !found || ep == "" || len(ep) > 32 || perr != nil || strconv.FormatUint(seq, 10) != n {
		return 0, false, newErr(CodeInvalidArgument, ReasonInvalidArgument, nil, "resume_after is not a change id")
	}
	return seq, ep == w.epoch, nil
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
func (w *Watcher) Subscribe(ctx context.Context, ws Workspace, dirs []string, resumeAfter string) (*Subscription, error) {
	if len(dirs) == 0 {
		return nil, newErr(CodeInvalidArgument, ReasonInvalidArgument, nil, "name at least one directory to watch")
	}
	var paths []wsPath
	seen := map[string]bool{}
	for _, d := range dirs {
		p, err := w.f.resolve(ws, d)
		if err != nil {
			return nil, err
		}
		if !seen[d] {
			seen[d] = true
			paths = append(paths, p)
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
		return nil, errClosed()
	}
	var live, gone, limited, gap []string
	for i, p := range paths {
		if i >= w.cfg.MaxDirsPerSubscriber {
			limited = append(limited, p.rel)
			continue
		}
		d, fresh, err := w.acquireLocked(ctx, p)
		switch {
		case err == nil:
		case errors.Is(err, errWatchLimit):
			limited = append(limited, p.rel)
			continue
		case CodeOf(err) == CodeInvalidArgument || ReasonOf(err) == ReasonDenylisted || ReasonOf(err) == ReasonOutsideGlobal:
			w.releaseAllLocked(s)
			return nil, err
		default:
			gone = append(gone, p.rel)
			continue
		}
		d.subs[s] = struct{}{}
		d.idle = time.Time{}
		s.dirs = append(s.dirs, d)
		live = append(live, p.rel)
		// A watch begun now missed whatever happened while the client was
		// away; an older one has every change after d.since in the ring.
		if resumeAfter != "" && (!resumeOK || fresh || d.since > resumeSeq+1) {
			gap = append(gap, p.rel)
		}
	}
	w.subs[s] = struct{}{}
	s.pushLocked(Change{ID: w.idLocked(), Kind: ChangeReady, Workspace: ws, Directories: live})
	if len(limited) > 0 {
		w.resyncLocked(s, ws, ResyncLimit, limited)
	}
	if len(gone) > 0 {
		w.resyncLocked(s, ws, ResyncGone, gone)
	}
	if resumeOK {
		if resumeSeq < w.histFrom || resumeSeq > w.seq {
			// The ring no longer reaches back to the position.
			gap = live
		} else {
			keys := map[string]bool{}
			for _, d := range s.dirs {
				if !slices.Contains(gap, d.dir) {
					keys[d.key] = true
				}
			}
			for _, c := range w.ring {
				if c.seq > resumeSeq && keys[c.key] {
					s.pushLocked(c)
				}
			}
		}
	}
	if len(gap) > 0 {
		w.resyncLocked(s, ws, ResyncGap, gap)
	}
	return s, nil
}

var errWatchLimit = errors.New("watch limit")

// burstPeriod is the rate period of BurstEntries: more names than that in
// one directory within it make a burst.
const burstPeriod = time.Second

// acquireLocked returns the watch of p, creating it (fresh).
func (w *Watcher) acquireLocked(ctx context.Context, p wsPath) (d *dirWatch, fresh bool, err error) {
	key := wsKey(p.ws) + "\x00" + p.rel
	if d, ok := w.dirs[key]; ok {
		return d, false, nil
	}
	if len(w.dirs) >= w.cfg.MaxDirs && !w.evictIdleLocked() {
		return nil, false, errWatchLimit
	}
	if p.isGlobal() && len(p.segs) == 1 && p.segs[0] == globalAgents {
		return nil, false, newErr(CodeFailedPrecondition, ReasonNotADirectory, nil, "%q is not a directory", p.rel)
	}
	fd, err := w.f.open(p, oDirPath)
	if err != nil {
		return nil, false, err
	}
	var st unix.Stat_t
	if err := fstatOn(p.r, fd, &st); err != nil || !isType(&st, unix.S_IFDIR) {
		unix.Close(fd)
		return nil, false, newErr(CodeFailedPrecondition, ReasonNotADirectory, err, "%q is not a directory", p.rel)
	}
	// A directory has one path: a watch of the same inode under another
	// path is of a directory that moved (its parent was renamed). inotify
	// would hand both the same watch descriptor; end the stale one first.
	for _, old := range w.dirs {
		if old.dev == st.Dev && old.ino == st.Ino {
			w.goneLocked(old)
			break
		}
	}
	d = &dirWatch{
		key: key, ws: p.ws, dir: p.rel, w: p, fd: fd, dev: st.Dev, ino: st.Ino,
		proc: "/proc/self/fd/" + strconv.Itoa(fd), root: p.isGlobal() && p.isRoot(),
		pending: map[string]struct{}{}, subs: map[*Subscription]struct{}{},
	}
	if err := w.nw.Add(d.proc); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.ENOSPC) {
			w.f.log.Warn("live changes: fs.inotify.max_user_watches reached; directory not watched")
			return nil, false, errWatchLimit
		}
		w.f.log.Warn("live changes: cannot watch a directory", "error", errnoOf(err).Error())
		return nil, false, fsErr(err, p.rel)
	}
	// Read what is there now, after the watch is in place: a change after
	// this point is an inotify event.
	known, rev, err := w.snapshot(ctx, d)
	if err != nil {
		w.nw.Remove(d.proc)
		unix.Close(fd)
		return nil, false, err
	}
	d.known, d.rev = known, rev
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

// snapshot lists d through the confined listing. Its reads are the
// watcher's own, not a client's: they are made under ForMutation so that
// they do not count as handing a directory revision out (seen.go), which
// would move the cutoff of a later recursive delete past work no client
// saw. Only what is published counts (publishLocked).
func (w *Watcher) snapshot(ctx context.Context, d *dirWatch) (map[string]knownEntry, string, error) {
	ctx = ForMutation(ctx)
	known := map[string]knownEntry{}
	add := func(es []Entry) {
		for _, e := range es {
			known[e.Name] = knownEntry{ino: inoAt(d.fd, e.Name), rev: revKey(e.Revision)}
		}
	}
	if d.root {
		es, err := w.f.ReadDir(ctx, d.ws, d.dir)
		if err != nil {
			return nil, "", err
		}
		add(es)
	} else if err := w.f.eachEntries(ctx, d.w, add); err != nil {
		return nil, "", err
	}
	self, err := w.f.Stat(ctx, d.ws, d.dir)
	if err != nil {
		return nil, "", err
	}
	return known, self.Revision, nil
}

// snapshotChunk: the entries a snapshot holds at a time (a directory of
// 200,000 names is read in chunks, never as one slice of Entries).
const snapshotChunk = 1024

// eachEntries calls fn with the Entries of the directory w (what ReadDir
// returns, unsorted), snapshotChunk at a time.
func (f *FS) eachEntries(ctx context.Context, w wsPath, fn func([]Entry)) error {
	fd, _, items, err := f.listDir(ctx, w)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for len(items) > 0 {
		n := min(len(items), snapshotChunk)
		es, err := f.entriesOf(ctx, fd, w, items[:n])
		if err != nil {
			return err
		}
		fn(es)
		items = items[n:]
	}
	return nil
}

// inoAt is the inode of name in the directory fd, 0 when it cannot be read.
func inoAt(fd int, name string) uint64 {
	var st unix.Stat_t
	if fstatat(fd, name, &st) != nil {
		return 0
	}
	return st.Ino
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
	w.nw.Remove(d.proc)
	unix.Close(d.fd)
}

func (w *Watcher) releaseAllLocked(s *Subscription) {
	for _, d := range s.dirs {
		delete(d.subs, s)
		if len(d.subs) == 0 {
			d.idle = w.f.now()
		}
	}
	s.dirs = nil
	delete(w.subs, s)
}

// loop turns inotify events into pending names and runs the housekeeping.
func (w *Watcher) loop() {
	tick := time.NewTicker(w.cfg.Revalidate)
	defer tick.Stop()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.nw.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.nw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.f.log.Warn("live changes: kernel event queue overflowed; subscribers resync")
				w.overflow()
			}
		case <-tick.C:
			w.housekeep()
		}
	}
}

func (w *Watcher) event(ev fsnotify.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, name := w.byProc[ev.Name], ""
	if d == nil {
		// An event of a name in a watched directory.
		dir, base := path.Split(ev.Name)
		if d, name = w.byProc[strings.TrimSuffix(dir, "/")], base; d == nil {
			return
		}
	}
	switch {
	case name == "" && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
		// The watched directory itself was moved or deleted.
		w.goneLocked(d)
		return
	case name == "":
		// Its own attributes changed (chmod, chown): its revision did.
		d.self = true
	case !w.f.visibleName(name) || (d.root && name != globalSkills && name != globalAgents):
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
		d.self = true
	default:
		if now := time.Now(); now.Sub(d.recentAt) > burstPeriod && now.After(d.hotUntil) {
			d.recentAt, d.recentN = now, 0
		}
		// The names stay pending in a burst too (up to MaxPending): the
		// flush then stats just those, not the whole directory.
		if !d.relist {
			d.pending[name] = struct{}{}
			if len(d.pending) > w.cfg.MaxPending {
				d.relist, d.pending = true, map[string]struct{}{}
			}
		}
		if len(d.pending)+d.recentN > w.cfg.BurstEntries || d.relist {
			d.burst = true
		}
	}
	w.armLocked(d)
}

func (w *Watcher) armLocked(d *dirWatch) {
	if d.armed {
		return
	}
	d.armed = true
	delay := w.cfg.Coalesce
	if d.hot {
		delay = w.cfg.BurstHold
	}
	time.AfterFunc(delay, func() { w.flush(d) })
}

// resyncLocked queues a Resync(r) of dirs (all of ws when empty) to s.
func (w *Watcher) resyncLocked(s *Subscription, ws Workspace, r ResyncReason, dirs []string) {
	s.pushLocked(Change{ID: w.idLocked(), Kind: ChangeResync, Workspace: ws, Reason: r, Directories: dirs})
	w.stats.resyncs[r].Add(1)
}

// goneLocked ends d's watch and tells its subscribers.
func (w *Watcher) goneLocked(d *dirWatch) {
	if d.gone {
		return
	}
	w.dropLocked(d)
	for s := range d.subs {
		w.resyncLocked(s, d.ws, ResyncGone, []string{d.dir})
		s.dirs = slices.DeleteFunc(s.dirs, func(x *dirWatch) bool { return x == d })
	}
}

func (w *Watcher) gone(d *dirWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.goneLocked(d)
}

// same re-resolves d's path through the confined resolution and reports
// whether it is still the watched directory; fd is the fresh fd (caller
// closes) when it is.
func (w *Watcher) same(d *dirWatch) (int, bool) {
	fd, err := w.f.open(d.w, oDirPath)
	if err != nil {
		return -1, false
	}
	var st unix.Stat_t
	if fstatOn(d.w.r, fd, &st) != nil || st.Dev != d.dev || st.Ino != d.ino || st.Nlink == 0 {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

func (w *Watcher) flush(d *dirWatch) {
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	w.mu.Lock()
	if d.gone || w.closed {
		w.mu.Unlock()
		return
	}
	names, burst, relist, refresh, self := d.pending, d.burst, d.relist, d.refresh, d.self
	d.pending, d.burst, d.relist, d.armed, d.refresh, d.self = map[string]struct{}{}, false, false, false, false, false
	w.mu.Unlock()

	fd, ok := w.same(d)
	if !ok {
		w.gone(d)
		return
	}
	defer unix.Close(fd)
	// The watcher's reads are not a client's (see snapshot); readAt is
	// taken before any of them: what is published shows the directory as
	// it was no earlier than this.
	ctx := ForMutation(context.Background())
	readAt := time.Now().UnixNano()
	var out []Change
	if refresh && !burst {
		// After a kernel overflow: whatever differs from what was last
		// published is a change (some may have come after the resync the
		// subscribers were sent), reported like any other, or as one
		// reload when there is too much of it.
		w.stats.relists.Add(1)
		snap, _, err := w.snapshot(ctx, d)
		if err != nil {
			w.gone(d)
			return
		}
		for n, k := range snap {
			if old, ok := d.known[n]; !ok || old.rev != k.rev {
				names[n] = struct{}{}
			}
		}
		for n := range d.known {
			if _, ok := snap[n]; !ok {
				names[n] = struct{}{}
			}
		}
		burst = len(names) > w.cfg.BurstEntries
		relist = burst
	}
	if burst {
		if !w.reload(ctx, d, fd, names, relist || refresh) {
			w.gone(d)
			return
		}
		self, _ := w.f.Stat(ctx, d.ws, d.dir)
		out = append(out, Change{Kind: ChangeDirectory, Path: d.dir, Entry: self})
	} else {
		out = w.diff(ctx, d, fd, names, self)
	}
	w.mu.Lock()
	d.hot = burst
	if burst {
		d.hotUntil = time.Now().Add(w.cfg.BurstHold + burstPeriod)
	} else {
		d.recentN += len(names)
	}
	w.publishLocked(d, out, readAt)
	w.mu.Unlock()
}

// reload brings what d knows up to date for a Directory change: by a
// confined Stat of each changed name (names), or, with relist (more names
// than MaxPending, or after a kernel overflow), by listing the directory
// again. It is false when the directory cannot be read any more.
func (w *Watcher) reload(ctx context.Context, d *dirWatch, fd int, names map[string]struct{}, relist bool) bool {
	if relist {
		w.stats.relists.Add(1)
		known, rev, err := w.snapshot(ctx, d)
		if err != nil {
			return false
		}
		d.known, d.rev = known, rev
		return true
	}
	for name := range names {
		if e, err := w.f.Stat(ctx, d.ws, childRel(d.dir, name)); err != nil {
			delete(d.known, name)
		} else {
			d.known[name] = knownEntry{ino: inoAt(fd, name), rev: revKey(e.Revision)}
		}
	}
	if self, err := w.f.Stat(ctx, d.ws, d.dir); err == nil {
		d.rev = self.Revision
	}
	return true
}

// diff stats each changed name through the confined Stat (ctx is flush's,
// ForMutation: the watcher's own reads) and compares it with what d knew.
func (w *Watcher) diff(ctx context.Context, d *dirWatch, fd int, names map[string]struct{}, self bool) []Change {
	type gone struct {
		path string
		ino  uint64
	}
	var out []Change
	var removed []gone
	created := map[uint64]int{} // ino → index in out
	for _, name := range slices.Sorted(maps.Keys(names)) {
		rel := childRel(d.dir, name)
		e, err := w.f.Stat(ctx, d.ws, rel)
		old, had := d.known[name]
		if err != nil {
			if had {
				delete(d.known, name)
				removed = append(removed, gone{rel, old.ino})
			}
			continue
		}
		ino := inoAt(fd, name)
		d.known[name] = knownEntry{ino: ino, rev: revKey(e.Revision)}
		switch {
		case !had:
			created[ino] = len(out)
			out = append(out, Change{Kind: ChangeCreated, Path: rel, Entry: e})
		case old.rev != revKey(e.Revision):
			out = append(out, Change{Kind: ChangeModified, Path: rel, Entry: e})
		}
	}
	for _, r := range removed {
		if i, ok := created[r.ino]; ok && r.ino != 0 && out[i].Kind == ChangeCreated {
			out[i].Kind, out[i].FromPath = ChangeRenamed, r.path
			delete(created, r.ino)
			continue
		}
		out = append(out, Change{Kind: ChangeRemoved, Path: r.path})
	}
	if len(out) > 0 || self {
		// The directory's own revision moves with its entries: send it so a
		// later rename or delete of the directory is not refused.
		if self, err := w.f.Stat(ctx, d.ws, d.dir); err == nil && self.Revision != d.rev {
			d.rev = self.Revision
			out = append(out, Change{Kind: ChangeModified, Path: d.dir, Entry: self})
		}
	}
	return out
}

// publishLocked numbers cs, keeps them for resuming and queues them to d's
// subscribers. A directory revision in a published change is shown to a
// client (now, or when it is replayed) and may be sent back with a delete:
// it is handed out as read at readAt, the time before the watcher's reads
// that produced it (never later than what the change shows).
func (w *Watcher) publishLocked(d *dirWatch, cs []Change, readAt int64) {
	for _, c := range cs {
		if c.Entry.Type == TypeDirectory && c.Entry.Revision != "" {
			w.f.seen.noteAt(c.Entry.Revision, readAt)
		}
		w.seq++
		c.seq, c.key = w.seq, d.key
		c.ID, c.Workspace, c.Directory = w.idLocked(), d.ws, d.dir
		if len(w.ring) == w.cfg.History {
			w.histFrom = w.ring[0].seq
			w.ring[0] = Change{}
			w.ring = w.ring[1:]
		}
		w.ring = append(w.ring, c)
		for s := range d.subs {
			s.pushLocked(c)
		}
	}
}

// overflow: the kernel dropped events. Every subscriber resyncs and every
// watch re-reads its directory.
func (w *Watcher) overflow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.subs {
		w.resyncLocked(s, s.ws, ResyncOverflow, nil)
	}
	// Nothing before this point can be replayed exactly: the overflow takes
	// a position of its own, so no earlier position counts as complete.
	w.seq++
	w.ring, w.histFrom = nil, w.seq
	for _, d := range w.dirs {
		d.since = w.seq + 1
		d.refresh = true
		w.armLocked(d)
	}
}

// housekeep drops watches idle past Linger and ends watches whose path no
// longer resolves to the watched directory (a delete inotify reports only
// once the held fd is closed).
func (w *Watcher) housekeep() {
	w.mu.Lock()
	now := w.f.now()
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
		if fd, ok := w.same(d); ok {
			unix.Close(fd)
			continue
		}
		w.gone(d)
	}
}

// Subscription is one client's view of a Watcher.
type Subscription struct {
	w    *Watcher
	ws   Workspace
	dirs []*dirWatch // under Watcher.mu

	mu       sync.Mutex
	q        []Change
	overflow bool
	ended    bool
	notify   chan struct{}
}

// pushLocked queues c (Watcher.mu held). A full queue is dropped for one
// Resync(OVERFLOW).
func (s *Subscription) pushLocked(c Change) {
	s.mu.Lock()
	switch {
	case s.ended:
	case s.overflow:
		s.w.stats.drops.Add(1)
	case len(s.q) >= s.w.cfg.QueueLen:
		s.w.stats.drops.Add(uint64(len(s.q)) + 1)
		s.q, s.overflow = nil, true
	default:
		s.q = append(s.q, c)
		s.w.stats.events.Add(1)
	}
	s.mu.Unlock()
	s.wake()
}

func (s *Subscription) end() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	s.wake()
}

// wake tells a waiting Next to look again.
func (s *Subscription) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// ErrWatchClosed is returned by Next once the subscription or its Watcher is closed.
var ErrWatchClosed = errors.New("davfs: watch closed")

// Next returns the next change, waiting for one until ctx ends.
func (s *Subscription) Next(ctx context.Context) (Change, error) {
	for {
		s.mu.Lock()
		switch {
		case s.ended:
			s.mu.Unlock()
			return Change{}, ErrWatchClosed
		case s.overflow:
			s.overflow = false
			s.mu.Unlock()
			s.w.mu.Lock()
			id := s.w.idLocked()
			s.w.mu.Unlock()
			s.w.stats.resyncs[ResyncOverflow].Add(1)
			return Change{ID: id, Kind: ChangeResync, Workspace: s.ws, Reason: ResyncOverflow}, nil
		case len(s.q) > 0:
			c := s.q[0]
			s.q[0] = Change{}
			s.q = s.q[1:]
			s.mu.Unlock()
			return c, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return Change{}, ctx.Err()
		case <-s.notify:
		}
	}
}

// Close ends the subscription; its watches linger (WatchConfig.Linger).
func (s *Subscription) Close() {
	s.w.mu.Lock()
	s.w.releaseAllLocked(s)
	s.w.mu.Unlock()
	s.end()
}
