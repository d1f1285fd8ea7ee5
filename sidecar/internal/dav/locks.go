package dav

import (
	"errors"
	"maps"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/internal/davwire"
)

// errTooManyLocks is returned by LOCK when MaxLocks locks are held, or the
// operator holds MaxLocksPerOperator (507 LOCK_LIMIT).
var (
	errTooManyLocks  = errors.New("dav: too many locks")
	errOperatorLocks = errors.New("dav: too many locks of this operator")
)

// lockPins is x/net/webdav's in-memory lock system (exclusive write locks
// only) plus, per lock, the revision each resource had when the lock was
// taken. A write under a lock the client holds must still find that
// revision (davfs checks it at commit, like an If-Match), so a change made
// meanwhile through another surface (gRPC, REST) is never overwritten by a
// client that locks instead of sending If-Match. A successful write under
// the lock moves the pin to the revision it wrote.
type lockPins struct {
	mem    webdav.LockSystem
	max    int
	perOp  int    // locks one operator may hold (issue #23: one must not fill the table)
	prefix string // makes x/net's numeric tokens absolute URIs (RFC 4918 §6.5)

	mu    sync.Mutex
	locks map[string]*pinnedLock // by token
}

type pinnedLock struct {
	root      string // WebDAV name, prefix stripped
	operator  string // X-Operator of the LOCK ("" without one)
	zeroDepth bool
	created   time.Time
	expires   time.Time
	revs      map[string]string // WebDAV name → pinned revision
}

func newLockPins(max, perOp int, id string) *lockPins {
	return &lockPins{mem: webdav.NewMemLS(), max: max, perOp: perOp, prefix: "opaquelocktoken:" + id, locks: map[string]*pinnedLock{}}
}

// inner is x/net's token for a client's token ("" names no lock).
func (p *lockPins) inner(token string) string {
	t, ok := strings.CutPrefix(token, p.prefix)
	if !ok || t == "" {
		return "\x00none"
	}
	return t
}

func (l *pinnedLock) covers(name string) bool {
	return name == l.root || (!l.zeroDepth && (l.root == "/" || strings.HasPrefix(name, l.root+"/")))
}

// purge drops expired locks (x/net's lock system expires its own copy).
func (p *lockPins) purge(now time.Time) {
	maps.DeleteFunc(p.locks, func(_ string, l *pinnedLock) bool { return !now.Before(l.expires) })
}

// room refuses a new lock when the table holds max locks, or op holds
// perOp of them (after expired ones are dropped). Between this check and
// the insert another LOCK may pass it too: the caps may be exceeded by the
// LOCKs in flight at once, never more.
func (p *lockPins) room(now time.Time, op string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge(now)
	if len(p.locks) >= p.max {
		return errTooManyLocks
	}
	n := 0
	for _, l := range p.locks {
		if l.operator == op {
			n++
		}
	}
	if n >= p.perOp {
		return errOperatorLocks
	}
	return nil
}

// valid reports whether token is a live lock covering name.
func (p *lockPins) valid(now time.Time, token, name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.locks[token]
	return l != nil && now.Before(l.expires) && l.covers(name)
}

// pin returns what a write of name under token must find: the pinned
// revision, or (known=false) the lock's creation time for a member of a
// depth-infinity lock first written now.
func (p *lockPins) pin(token, name string) (rev string, created time.Time, known, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.locks[token]
	if l == nil || !l.covers(name) {
		return "", time.Time{}, false, false
	}
	rev, known = l.revs[name]
	return rev, l.created, known, true
}

// move sets (rev != "") or drops the pin of name under token.
func (p *lockPins) move(token, name, rev string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.locks[token]
	if l == nil || !l.covers(name) {
		return
	}
	if rev == "" {
		maps.DeleteFunc(l.revs, func(n, _ string) bool { return n == name || strings.HasPrefix(n, name+"/") })
		return
	}
	l.revs[name] = rev
}

// requestLocks is the webdav.LockSystem one request sees: it delegates to
// the shared lockPins, evaluates the entity tags and "Not" conditions of If:
// lists (x/net's lock system ignores both), and tells the request which
// tokens it holds.
type requestLocks struct {
	p *lockPins
	q *request
}

var _ webdav.LockSystem = (*requestLocks)(nil)

func (rl *requestLocks) Confirm(now time.Time, name0, name1 string, conds ...webdav.Condition) (func(), error) {
	q := rl.q
	resource := cleanName(name0)
	if resource == "" {
		resource = q.src // an untagged list is about the Request-URI
	}
	var tokens []string
	var inner []webdav.Condition // tokens, as x/net's lock system knows them
	matched := ""                // the revision an entity tag matched
	for _, c := range conds {
		switch {
		case c.ETag != "":
			cur := q.currentRevision(resource)
			match := cur != "" && `"`+cur+`"` == c.ETag
			if match == c.Not || cur == mismatch { // a revision unknown fails closed
				return nil, webdav.ErrConfirmationFailed
			}
			if match {
				matched = cur
			}
		case c.Not:
			if rl.p.valid(now, c.Token, resource) {
				return nil, webdav.ErrConfirmationFailed
			}
		default:
			tokens = append(tokens, c.Token)
			inner = append(inner, webdav.Condition{Token: rl.p.inner(c.Token)})
		}
	}
	var release func()
	var err error
	if len(tokens) > 0 {
		if release, err = rl.p.mem.Confirm(now, name0, name1, inner...); err != nil {
			return nil, err
		}
	} else {
		// No lock claimed: like a request without If:, the names must not
		// be locked by anyone else (temporary zero-depth locks, as x/net's
		// handler takes them).
		var held []string
		release = func() {
			for _, t := range held {
				_ = rl.p.mem.Unlock(now, t)
			}
		}
		for i, n := range []string{name0, name1} {
			if n == "" || (i == 1 && cleanName(n) == cleanName(name0)) {
				continue // a tagged list about the destination: one lock
			}
			t, err := rl.p.mem.Create(now, webdav.LockDetails{Root: n, Duration: -1, ZeroDepth: true})
			if err != nil {
				release()
				return nil, err
			}
			held = append(held, t)
		}
	}
	if matched != "" {
		if q.ifRevs == nil {
			q.ifRevs = map[string]string{}
		}
		q.ifRevs[resource] = matched
	}
	q.tokens = append(q.tokens, tokens...)
	return release, nil
}

func (rl *requestLocks) Create(now time.Time, d webdav.LockDetails) (string, error) {
	if rl.q.r.Method != "LOCK" {
		return rl.p.mem.Create(now, d) // x/net's temporary per-request lock
	}
	p := rl.p
	op := rl.q.r.Header.Get(davwire.OperatorHeader)
	if err := p.room(now, op); err != nil {
		return "", err
	}
	in, err := p.mem.Create(now, d)
	if err != nil {
		return "", err
	}
	tok := p.prefix + in
	// The lock's times are the handler's clock (time.Now), the one file
	// modification times are compared with.
	l := &pinnedLock{root: cleanName(d.Root), operator: op, zeroDepth: d.ZeroDepth, created: now, expires: now.Add(d.Duration), revs: map[string]string{}}
	// Pin what the resource is now; a LOCK of a missing name creates an
	// empty file afterwards, pinned when the request ends.
	if rev := rl.q.currentRevision(l.root); rev != "" {
		l.revs[l.root] = rev
	}
	p.mu.Lock()
	p.locks[tok] = l
	p.mu.Unlock()
	rl.q.newLock = tok
	return tok, nil
}

func (rl *requestLocks) Refresh(now time.Time, token string, duration time.Duration) (webdav.LockDetails, error) {
	d, err := rl.p.mem.Refresh(now, rl.p.inner(token), duration)
	if err == nil {
		rl.p.mu.Lock()
		if l := rl.p.locks[token]; l != nil {
			l.expires = now.Add(duration)
		}
		rl.p.mu.Unlock()
	}
	return d, err
}

func (rl *requestLocks) Unlock(now time.Time, token string) error {
	if rl.q.r.Method != "UNLOCK" && !strings.HasPrefix(token, rl.p.prefix) {
		// The handler releasing a temporary lock it took with Create.
		return rl.p.mem.Unlock(now, token)
	}
	// UNLOCK, or a LOCK whose creation of a missing resource failed: x/net
	// then unlocks with the token Create returned (prefixed). Both the inner
	// lock and its pins go, or the name stays locked and counts against
	// MaxLocks.
	err := rl.p.mem.Unlock(now, rl.p.inner(token))
	if err == nil {
		rl.p.mu.Lock()
		delete(rl.p.locks, token)
		rl.p.mu.Unlock()
	}
	return err
}
