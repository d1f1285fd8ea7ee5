package davhandler

import (
	"crypto/rand"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"time"
)

// maxLocks bounds the in-memory lock table.
const maxLocks = 10000

var (
	errLocked     = errors.New("davhandler: resource is locked")
	errNoSuchLock = errors.New("davhandler: no such lock")
	errTooMany    = errors.New("davhandler: too many locks")
)

// davLock is one WebDAV write lock. Locks live in memory only and always
// expire (the timeout is capped by Options.MaxLockTimeout).
type davLock struct {
	token     string
	root      string // URL path, no trailing slash
	zeroDepth bool
	shared    bool
	owner     string // raw XML of DAV:owner's content, echoed back
	timeout   time.Duration
	expiry    time.Time
}

// lockManager is the lock system. golang.org/x/net/webdav's memLS has no
// shared locks and cannot list the locks on a resource (lockdiscovery), so
// the handler keeps its own small table with the same semantics otherwise.
type lockManager struct {
	now   func() time.Time
	mu    sync.Mutex
	locks map[string]*davLock // by token
	count atomic.Int64
}

func newLockManager(now func() time.Time) *lockManager {
	return &lockManager{now: now, locks: make(map[string]*davLock)}
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("opaquelocktoken:%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// pruneLocked drops expired locks; m.mu is held.
func (m *lockManager) pruneLocked() {
	now := m.now()
	for t, l := range m.locks {
		if !now.Before(l.expiry) {
			delete(m.locks, t)
		}
	}
	m.count.Store(int64(len(m.locks)))
}

// covers reports whether l applies to the resource name.
func (l *davLock) covers(name string) bool {
	if l.root == name {
		return true
	}
	return !l.zeroDepth && under(name, l.root)
}

func (m *lockManager) create(root string, zeroDepth, shared bool, owner string, timeout time.Duration) (davLock, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked()
	if len(m.locks) >= maxLocks {
		return davLock{}, errTooMany
	}
	for _, l := range m.locks {
		overlap := l.covers(root) || (!zeroDepth && under(l.root, root))
		if overlap && (!l.shared || !shared) {
			return davLock{}, errLocked
		}
	}
	l := &davLock{token: newToken(), root: root, zeroDepth: zeroDepth, shared: shared,
		owner: owner, timeout: timeout, expiry: m.now().Add(timeout)}
	m.locks[l.token] = l
	m.count.Store(int64(len(m.locks)))
	return *l, nil
}

// refresh resets the timeout of the lock token when it covers name.
func (m *lockManager) refresh(token, name string, timeout time.Duration) (davLock, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked()
	l := m.locks[token]
	if l == nil || !l.covers(name) {
		return davLock{}, errNoSuchLock
	}
	l.timeout = timeout
	l.expiry = m.now().Add(timeout)
	return *l, nil
}

func (m *lockManager) unlock(token, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked()
	l := m.locks[token]
	if l == nil || !l.covers(name) {
		return errNoSuchLock
	}
	delete(m.locks, token)
	m.count.Store(int64(len(m.locks)))
	return nil
}

// valid reports whether token names a live lock that covers name.
func (m *lockManager) valid(token, name string) bool {
	if m.count.Load() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.locks[token]
	return l != nil && m.now().Before(l.expiry) && l.covers(name)
}

// discover returns the live locks that apply to name.
func (m *lockManager) discover(name string) []davLock {
	if m.count.Load() == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []davLock
	for _, l := range m.locks {
		if now.Before(l.expiry) && l.covers(name) {
			out = append(out, *l)
		}
	}
	return out
}

// lockReq names a resource a request modifies.
type lockReq struct {
	name      string // URL path
	recursive bool   // also every resource below name (DELETE/MOVE of a collection)
	member    bool   // name is added to or removed from its parent collection
}

// permits reports whether the submitted tokens satisfy every lock that
// protects the resources in reqs: each exclusive lock's token must be
// submitted, and for shared locks one of them.
func (m *lockManager) permits(reqs []lockReq, submitted map[string]bool) bool {
	if m.count.Load() == 0 {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked()
	for _, rq := range reqs {
		parent := path.Dir(rq.name)
		sharedNeeded, sharedOK := false, false
		for _, l := range m.locks {
			applies := l.covers(rq.name) ||
				(rq.recursive && under(l.root, rq.name)) ||
				(rq.member && l.root == parent && rq.name != "/")
			if !applies {
				continue
			}
			if l.shared {
				sharedNeeded = true
				if submitted[l.token] {
					sharedOK = true
				}
				continue
			}
			if !submitted[l.token] {
				return false
			}
		}
		if sharedNeeded && !sharedOK {
			return false
		}
	}
	return true
}

// moved drops the locks at or below name: locks never follow a MOVE, and a
// deleted resource loses its locks (RFC 4918 §7.7, §9.9.2).
func (m *lockManager) removeBelow(name string) {
	if m.count.Load() == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, l := range m.locks {
		if under(l.root, name) {
			delete(m.locks, t)
		}
	}
	m.count.Store(int64(len(m.locks)))
}
