package dav

import (
	"context"
	"sync"
)

// nameQueue makes writes to one name wait for each other. Without it a
// write without a client lock meets x/net/webdav's temporary per-request
// lock of a concurrent write to the same name and gets 423 although no
// client holds a lock; queued, it sees the other's result and its own
// precondition decides (412). An entry lives only while someone holds or
// waits for it.
type nameQueue struct {
	mu    sync.Mutex
	names map[string]*nameSlot
}

type nameSlot struct {
	ch    chan struct{} // one token: the holder took it
	users int           // holders and waiters
}

func newNameQueue() *nameQueue { return &nameQueue{names: map[string]*nameSlot{}} }

// acquire waits for name, or until ctx ends (false). true: call the
// returned release once.
func (n *nameQueue) acquire(ctx context.Context, name string) (func(), bool) {
	n.mu.Lock()
	s := n.names[name]
	if s == nil {
		s = &nameSlot{ch: make(chan struct{}, 1)}
		n.names[name] = s
	}
	s.users++
	n.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; n.leave(name, s) }, true
	case <-ctx.Done():
		n.leave(name, s)
		return nil, false
	}
}

func (n *nameQueue) leave(name string, s *nameSlot) {
	n.mu.Lock()
	if s.users--; s.users == 0 {
		delete(n.names, name)
	}
	n.mu.Unlock()
}

// queueWrite holds the request's names (source, then destination, in one
// order so two moves cannot wait for each other) while a write without a
// client lock runs. False: the client went away while it waited.
func (q *request) queueWrite() (func(), bool) {
	if q.r.Header.Get("If") != "" { // may carry a client's lock: the library decides
		return func() {}, true
	}
	names := []string{q.src}
	if q.dst != "" && q.dst != q.src {
		names = append(names, q.dst)
		if q.dst < q.src {
			names[0], names[1] = q.dst, q.src
		}
	}
	var held []func()
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	for _, name := range names {
		rel, ok := q.h.names.acquire(q.ctx, name)
		if !ok {
			release()
			return nil, false
		}
		held = append(held, rel)
	}
	return release, true
}
