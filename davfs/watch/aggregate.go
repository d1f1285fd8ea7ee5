package watch

import "time"

// Aggregation: what one watched directory has pending between two
// flushes, and when the next flush is due. It is pure: the caller hands
// in the time (the injected clock) and runs the flush; nothing here reads
// the kernel or the file system (the model is syncthing's
// lib/watchaggregator).

// burstPeriod is the rate period of BurstEntries: more names than that in
// one directory within it make a burst.
const burstPeriod = time.Second

// aggConfig is the part of Config that aggregation reads.
type aggConfig struct {
	coalesce, burstHold      time.Duration
	burstEntries, maxPending int
}

func (c Config) agg() aggConfig {
	return aggConfig{coalesce: c.Coalesce, burstHold: c.BurstHold, burstEntries: c.BurstEntries, maxPending: c.MaxPending}
}

// aggregator is one directory's pending state (under Watcher.mu).
type aggregator struct {
	pending map[string]struct{}
	self    bool // the directory's own attributes (or revision) changed
	burst   bool
	relist  bool // more than maxPending names since the last flush: list it again
	refresh bool // re-read what is known silently (after a kernel overflow)
	armed   bool
	hot     bool // the last batch was a burst: hold the next one
	// names published one by one in the current rate period (a second):
	// a slow, steady burst (a shell loop) is coalesced too.
	recentN  int
	recentAt time.Time
	// the rate period does not restart before then: a burst that slows
	// down (a loaded machine) is still one burst
	hotUntil time.Time
}

// batch is what one flush publishes.
type batch struct {
	names                        map[string]struct{}
	self, burst, relist, refresh bool
}

// name records that name changed at now.
func (a *aggregator) name(name string, now time.Time, c aggConfig) {
	if now.Sub(a.recentAt) > burstPeriod && now.After(a.hotUntil) {
		a.recentAt, a.recentN = now, 0
	}
	// The names stay pending in a burst too (up to maxPending): the flush
	// then stats just those, not the whole directory.
	if !a.relist {
		if a.pending == nil {
			a.pending = map[string]struct{}{}
		}
		a.pending[name] = struct{}{}
		if len(a.pending) > c.maxPending {
			a.relist, a.pending = true, map[string]struct{}{}
		}
	}
	if len(a.pending)+a.recentN > c.burstEntries || a.relist {
		a.burst = true
	}
}

// touch records that the directory's own attributes or revision changed.
func (a *aggregator) touch() { a.self = true }

// overflowed: the kernel dropped events; the next flush re-reads the
// directory.
func (a *aggregator) overflowed() { a.refresh = true }

// arm returns the delay to the next flush; ok is false when one is
// already scheduled.
func (a *aggregator) arm(c aggConfig) (delay time.Duration, ok bool) {
	if a.armed {
		return 0, false
	}
	a.armed = true
	if a.hot {
		return c.burstHold, true
	}
	return c.coalesce, true
}

// take hands over what is pending and starts afresh.
func (a *aggregator) take() batch {
	b := batch{names: a.pending, self: a.self, burst: a.burst, relist: a.relist, refresh: a.refresh}
	if b.names == nil {
		b.names = map[string]struct{}{}
	}
	a.pending, a.burst, a.relist, a.armed, a.refresh, a.self = map[string]struct{}{}, false, false, false, false, false
	return b
}

// published records a flush that published b at now: a burst holds the
// next one, a batch of names counts towards the rate period.
func (a *aggregator) published(b batch, now time.Time, c aggConfig) {
	a.hot = b.burst
	if b.burst {
		a.hotUntil = now.Add(c.burstHold + burstPeriod)
	} else {
		a.recentN += len(b.names)
	}
}

// refreshed turns a batch after a kernel overflow into one of what differs
// between known and snap: such a batch is a burst (a reload) when it
// names more than burstEntries.
func refreshed(b batch, known, snap map[string]knownEntry, c aggConfig) batch {
	for n, k := range snap {
		if old, ok := known[n]; !ok || old.rev != k.rev {
			b.names[n] = struct{}{}
		}
	}
	for n := range known {
		if _, ok := snap[n]; !ok {
			b.names[n] = struct{}{}
		}
	}
	b.burst = len(b.names) > c.burstEntries
	b.relist = b.burst
	return b
}
