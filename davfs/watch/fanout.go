package watch

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// Fan-out: subscriptions, their bounded queues, and the ring of recent
// changes a resuming subscriber is replayed from.

// Subscription is one client's view of a Watcher.
type Subscription struct {
	w    *Watcher
	ws   davfs.Workspace
	dirs []*dirWatch // under Watcher.mu

	mu       sync.Mutex
	q        []Change
	overflow bool
	ended    bool
	notify   chan struct{}
}

// ErrClosed is returned by Next once the subscription or its Watcher is closed.
var ErrClosed = errors.New("davfs: watch closed")

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

// Next returns the next change, waiting for one until ctx ends.
func (s *Subscription) Next(ctx context.Context) (Change, error) {
	for {
		s.mu.Lock()
		switch {
		case s.ended:
			s.mu.Unlock()
			return Change{}, ErrClosed
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

// Close ends the subscription; its watches linger (Config.Linger).
func (s *Subscription) Close() {
	s.w.mu.Lock()
	s.w.releaseAllLocked(s)
	s.w.mu.Unlock()
	s.end()
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
		return 0, false, &davfs.Error{Code: davfs.CodeInvalidArgument, Reason: davfs.ReasonInvalidArgument,
			Message: "resume_after is not a change id"}
	}
	return seq, ep == w.epoch, nil
}

// resyncLocked queues a Resync(r) of dirs (all of ws when empty) to s.
func (w *Watcher) resyncLocked(s *Subscription, ws davfs.Workspace, r ResyncReason, dirs []string) {
	s.pushLocked(Change{ID: w.idLocked(), Kind: ChangeResync, Workspace: ws, Reason: r, Directories: dirs})
	w.stats.resyncs[r].Add(1)
}

// replayLocked queues to s the changes after resumeSeq in its directories
// that are not in gap; when the ring no longer reaches back to resumeSeq,
// every live directory is a gap. It returns the gap.
func (w *Watcher) replayLocked(s *Subscription, resumeSeq uint64, live, gap []string) []string {
	if resumeSeq < w.histFrom || resumeSeq > w.seq {
		return live
	}
	keys := map[string]bool{}
	for _, d := range s.dirs {
		if !slices.Contains(gap, d.path) {
			keys[d.key] = true
		}
	}
	for _, c := range w.ring {
		if c.seq > resumeSeq && keys[c.key] {
			s.pushLocked(c)
		}
	}
	return gap
}

// publishLocked numbers cs, keeps them for resuming and queues them to d's
// subscribers. A directory revision in a published change is shown to a
// client (now, or when it is replayed) and may be sent back with a delete:
// it is handed out as read at readAt, the time before the watcher's reads
// that produced it (never later than what the change shows).
func (w *Watcher) publishLocked(d *dirWatch, cs []Change, readAt time.Time) {
	for _, c := range cs {
		w.f.HandOut(c.Entry, readAt)
		w.seq++
		c.seq, c.key = w.seq, d.key
		c.ID, c.Workspace, c.Directory = w.idLocked(), d.ws, d.path
		if len(w.ring) == w.cfg.History {
			w.histFrom = w.ring[0].seq
			w.ring[0] = Change{}
			w.ring = w.ring[1:]
		}
		w.ring = append(w.ring, c)
		if w.cfg.Observer != nil {
			w.cfg.Observer.Changed(d.ws)
		}
		for s := range d.subs {
			s.pushLocked(c)
		}
	}
}
