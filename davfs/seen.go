package davfs

import (
	"slices"
	"sync"
	"time"
)

// A directory's revision binds its own stat only: a file changed three
// levels down leaves it as it was. A recursive delete that carries a
// directory revision must still not destroy work done after that revision
// was read, so davfs remembers when it last handed each directory revision
// out (Stat, the listings, CreateEntry and MoveEntry: what every surface
// shows a client; see handOut and Use; and a directory revision
// the watcher (davfs/watch) publishes, through HandOut as read when its
// batch was, while its own reads through a Dir count for nothing), and the delete's own walk
// refuses as soon as it meets an entry whose ctime is later (remove.go).
//
// ctime, not mtime: the kernel sets ctime to the current time on every
// change of a file's content or metadata (a link, a rename, a chmod
// included) and no system call sets it to anything else, where mtime can
// be set to any value (touch -d, tar, rsync -t).
//
// Limits, documented where the guarantee is stated (DeleteEntry):
//   - a revision handed out more than once is remembered with the latest
//     time: a client that read it earlier is protected only from changes
//     after the last read by anyone;
//   - a revision davfs has not handed out (or no longer remembers: the
//     record is bounded, and it does not survive a restart) falls back to
//     the directory's own ctime, which is never later than the read: sound,
//     but it also refuses work done between the directory's last own change
//     and the read; reading the revision again (Stat) and retrying works;
//   - the kernel stamps ctime from a clock that advances in ticks (a few
//     milliseconds; kernels with multigrain timestamps, 6.13+, are finer),
//     so a change within one tick after the read may carry a ctime no later
//     than the read and go unnoticed. The times are the kernel's wall clock
//     (time.Now), not Config.Now: they are compared with kernel ctimes.

const defaultSeenEntries = 1 << 15

// dirSeen maps a directory revision to the last time (Unix ns) davfs
// handed it out. Bounded like hashCache: two generations of at most max/2
// entries each; a hit in the old one moves the entry to the current one.
type dirSeen struct {
	mu       sync.Mutex
	cur, old map[string]int64
	max      int
}

func newDirSeen(max int) *dirSeen { return &dirSeen{max: max} }

// note records that rev is being handed out now.
func (s *dirSeen) note(rev string) { s.noteAt(rev, time.Now().UnixNano()) }

// noteAt records that rev was handed out as read at (Unix ns; a later
// record of it is kept).
func (s *dirSeen) noteAt(rev string, at int64) {
	s.mu.Lock()
	s.putLocked(rev, at)
	s.mu.Unlock()
}

func (s *dirSeen) putLocked(rev string, at int64) {
	if _, ok := s.cur[rev]; !ok && len(s.cur) >= s.max/2 {
		s.old, s.cur = s.cur, nil
	}
	if s.cur == nil {
		s.cur = make(map[string]int64)
	}
	if at > s.cur[rev] {
		s.cur[rev] = at
	}
}

// last returns the last time rev was handed out, if it is remembered.
func (s *dirSeen) last(rev string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.cur[rev]; ok {
		return at, true
	}
	if at, ok := s.old[rev]; ok {
		s.putLocked(rev, at)
		return at, true
	}
	return 0, false
}

func (s *dirSeen) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cur) + len(s.old)
}

// Use says what a read's answer is for: a directory revision a Stat,
// ReadDir, CreateEntry or MoveEntry returns is recorded as handed out to a
// client (see above) unless the call passes ForMutation.
type Use uint8

const (
	// ShownToClient is the default: the answer is shown to a client
	// (PROPFIND, GET, the REST reads).
	ShownToClient Use = iota
	// ForMutation marks a call made while serving a request that changes
	// something (a WebDAV DELETE, MOVE or COPY, with the precondition
	// checks before it), such as the handler's own Stat right before it
	// deletes: the revisions it returns are not recorded as a client's
	// read. The record would otherwise say the revision the client sent
	// was read just now, and a recursive delete would accept work the
	// client never saw.
	ForMutation
)

// handOut records the directory revisions among es as read now, unless
// use says ForMutation.
func (f *FS) handOut(use []Use, es ...Entry) {
	if slices.Contains(use, ForMutation) {
		return
	}
	for i := range es {
		if es[i].Type == TypeDirectory && es[i].Revision != "" {
			f.seen.note(es[i].Revision)
		}
	}
}
