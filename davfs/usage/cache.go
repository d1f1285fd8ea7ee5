package usage

import (
	"context"
	"sync"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// Config bounds a Cache. Zero values take the defaults.
type Config struct {
	// MaxAge is how long totals no event made stale are answered without
	// walking again (changes the feed does not see: an agent's write in a
	// directory nobody watches). Default 5 min.
	MaxAge time.Duration
	// MaxWorkspaces bounds the totals kept (the oldest goes first).
	// Default 4096.
	MaxWorkspaces int
	// Scans bounds the walks running at once (a rescan after an
	// overflow walks the stale workspaces one or Scans at a time, on
	// demand, never all together). Default 1.
	Scans int
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Cache keeps the Totals of each workspace asked for, walked once and then
// kept until the change feed says the workspace changed (Changed), that
// events were lost (Overflow: every workspace is stale and is walked again
// when next asked, at most Scans at a time), or MaxAge passed.
type Cache struct {
	f   *davfs.FS
	cfg Config
	sem chan struct{}

	mu      sync.Mutex
	entries map[davfs.Workspace]*entry
	gen     uint64 // bumped by Overflow
	stats   Stats
}

type entry struct {
	tot   Totals
	at    time.Time
	stale bool
	gen   uint64        // Overflow generation the totals were walked in
	seq   uint64        // bumped by Changed: a walk started before is not trusted
	wait  chan struct{} // a walk under way (closed when it ends)
	err   error
}

// Stats are the cache's own figures.
type Stats struct {
	Hits, Scans, Overflows uint64
}

// NewCache returns an empty Cache over f.
func NewCache(f *davfs.FS, cfg Config) *Cache {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 5 * time.Minute
	}
	if cfg.MaxWorkspaces <= 0 {
		cfg.MaxWorkspaces = 4096
	}
	if cfg.Scans <= 0 {
		cfg.Scans = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Cache{f: f, cfg: cfg, sem: make(chan struct{}, cfg.Scans), entries: map[davfs.Workspace]*entry{}}
}

// Changed says something in ws changed: its totals are walked again when
// next asked.
func (c *Cache) Changed(ws davfs.Workspace) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[ws]; e != nil {
		e.stale = true
		e.seq++
	}
}

// ChangedAll says something changed in every workspace of scope (a project
// created, renamed or deleted; the projects root relisted).
func (c *Cache) ChangedAll(scope davfs.Scope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ws, e := range c.entries {
		if ws.Scope == scope {
			e.stale = true
			e.seq++
		}
	}
}

// Overflow says events were lost: nothing kept is trusted any more.
func (c *Cache) Overflow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.stats.Overflows++
}

// Stats returns the cache's figures.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Cached returns the totals kept of ws, if any are fresh, without walking.
func (c *Cache) Cached(ws davfs.Workspace) (Totals, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[ws]
	if e == nil || !c.freshLocked(e) {
		return Totals{}, false
	}
	return e.tot, true
}

// Each calls fn with every workspace whose totals are fresh (metrics).
func (c *Cache) Each(fn func(davfs.Workspace, Totals)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ws, e := range c.entries {
		if c.freshLocked(e) {
			fn(ws, e.tot)
		}
	}
}

func (c *Cache) freshLocked(e *entry) bool {
	return e.wait == nil && e.err == nil && !e.stale && e.gen == c.gen && c.cfg.Now().Sub(e.at) < c.cfg.MaxAge
}

// Get returns the totals of ws: the cached ones while fresh, else one walk
// (callers asking meanwhile wait for the same walk).
func (c *Cache) Get(ctx context.Context, ws davfs.Workspace) (Totals, error) {
	for {
		c.mu.Lock()
		e := c.entries[ws]
		if e != nil && c.freshLocked(e) {
			c.stats.Hits++
			c.mu.Unlock()
			return e.tot, nil
		}
		if e != nil && e.wait != nil {
			w := e.wait
			c.mu.Unlock()
			select {
			case <-w:
				continue
			case <-ctx.Done():
				return Totals{}, davfs.ContextError(ctx)
			}
		}
		if e == nil {
			c.evictLocked()
			e = &entry{}
			c.entries[ws] = e
		}
		return c.walk(ctx, ws, e)
	}
}

// walk scans ws into e; called with c.mu held, returns with it released.
func (c *Cache) walk(ctx context.Context, ws davfs.Workspace, e *entry) (Totals, error) {
	done := make(chan struct{})
	e.wait, e.err = done, nil
	seq, gen := e.seq, c.gen
	c.stats.Scans++
	c.mu.Unlock()
	var tot Totals
	var err error
	select {
	case c.sem <- struct{}{}:
		tot, err = Scan(ctx, c.f, ws)
		<-c.sem
	case <-ctx.Done():
		err = davfs.ContextError(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e.wait = nil
	close(done)
	if err != nil {
		// Nothing kept of a failed walk: the next Get walks again.
		delete(c.entries, ws)
		return Totals{}, err
	}
	e.tot, e.at, e.gen = tot, c.cfg.Now(), gen
	// A change during the walk may be missing from it: answered this
	// once (it is at least as new as the request), walked again next time.
	e.stale = e.seq != seq
	return tot, nil
}

// evictLocked drops the oldest totals when the cache is full.
func (c *Cache) evictLocked() {
	if len(c.entries) < c.cfg.MaxWorkspaces {
		return
	}
	var oldest davfs.Workspace
	var at time.Time
	found := false
	for ws, e := range c.entries {
		if e.wait == nil && (!found || e.at.Before(at)) {
			oldest, at, found = ws, e.at, true
		}
	}
	if found {
		delete(c.entries, oldest)
	}
}

// Volume is VolumeOf the cache's FS.
func (c *Cache) Volume(scope davfs.Scope) (Volume, error) { return VolumeOf(c.f, scope) }
