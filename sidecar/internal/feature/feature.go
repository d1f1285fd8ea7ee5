// Package feature keeps one optional capability of the sidecar (the
// checkpoint store, the file watcher) apart from the files (issue #23): the
// agent shares the pod, the UID and the volume, so it can make such a
// capability fail to start (a symlinked store, its UID's inotify instances
// used up). A Feature that cannot start is reported unavailable with a
// reason, while the files go on being served, and is retried with
// exponential backoff (1 s doubling to 1 min by default) until it starts;
// a caller that meets it unavailable may ask for an early retry (Kick), at
// most one attempt per minimum interval. Every change of state is logged
// once and handed to OnChange (the metric).
//
// The clock is injected (Options.Now, Options.After), so the backoff is
// tested without sleeping.
//
// Limit: a Feature only ever goes from unavailable to available; one that
// started is not watched for a later failure (the checkpoint store and the
// watcher hold their fds once open).
package feature

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Default backoff bounds.
const (
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
)

// Options configure a Feature. Zero values take defaults.
type Options struct {
	// Name names the feature in logs, /readyz and metrics ("checkpoints").
	Name string
	// Start makes one attempt; nil means the feature is available. Its
	// error's message is shown to clients and must be safe (no host path).
	Start func() error
	// Logger receives one line per change of state. Nil: a null logger.
	Logger hclog.Logger
	// MinBackoff, MaxBackoff bound the wait between attempts.
	MinBackoff, MaxBackoff time.Duration
	// Now and After are the clock. Nil: time.Now and time.After.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// OnChange, if set, is told every change of state (and the first).
	OnChange func(available bool)
}

// Feature is one capability that may be unavailable. Safe for concurrent use.
type Feature struct {
	o    Options
	kick chan struct{}

	mu    sync.Mutex
	known bool  // an attempt was made
	err   error // the last attempt's error; nil: available
	last  time.Time
}

// New returns a Feature on which no attempt was made yet.
func New(o Options) *Feature {
	o.Logger = cmp.Or[hclog.Logger](o.Logger, hclog.NewNullLogger())
	o.MinBackoff = cmp.Or(o.MinBackoff, DefaultMinBackoff)
	o.MaxBackoff = max(cmp.Or(o.MaxBackoff, DefaultMaxBackoff), o.MinBackoff)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	return &Feature{o: o, kick: make(chan struct{}, 1)}
}

// Name is the feature's name.
func (f *Feature) Name() string { return f.o.Name }

// Err is nil when the feature is available, else why not (the last
// attempt's error, or "not started yet" before the first).
func (f *Feature) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.known {
		return errNotStarted
	}
	return f.err
}

type notStarted struct{}

func (notStarted) Error() string { return "not started yet" }

var errNotStarted error = notStarted{}

// Attempt makes one attempt now and records it. It returns its error.
func (f *Feature) Attempt() error {
	err := f.o.Start()
	f.mu.Lock()
	first := !f.known
	was := f.err
	f.known, f.err, f.last = true, err, f.o.Now()
	f.mu.Unlock()
	switch {
	case err == nil && (first || was != nil):
		f.o.Logger.Info("feature available", "feature", f.o.Name)
	case err != nil && (first || was == nil || was.Error() != err.Error()):
		// The reason is the safe message; the cause stays in the error
		// chain, which the log may show (it never holds content).
		f.o.Logger.Warn("feature unavailable; files are not affected, retrying with backoff", "feature", f.o.Name, "reason", err.Error())
	default:
		return err
	}
	if f.o.OnChange != nil {
		f.o.OnChange(err == nil)
	}
	return err
}

// Kick asks Run for an early attempt (a caller met the feature
// unavailable). It never blocks; attempts stay at most one per MinBackoff.
func (f *Feature) Kick() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Run attempts until the feature is available or ctx ends: at once if no
// attempt was made, then after each backoff (doubling from MinBackoff to
// MaxBackoff) or a Kick, whichever comes first.
func (f *Feature) Run(ctx context.Context) {
	if !f.attempted() {
		f.Attempt()
	}
	if f.Err() == nil {
		return
	}
	wait := f.o.MinBackoff
	timer := f.o.After(wait)
	for f.Err() != nil {
		select {
		case <-ctx.Done():
			return
		case <-timer:
			wait = min(2*wait, f.o.MaxBackoff)
			timer = nil
		case <-f.kick:
			if !f.sinceLast(f.o.MinBackoff) {
				continue // too soon; the backoff timer still runs
			}
		}
		if ctx.Err() != nil {
			return
		}
		f.Attempt()
		if timer == nil {
			timer = f.o.After(wait)
		}
	}
}

func (f *Feature) attempted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.known
}

// sinceLast reports whether at least d passed since the last attempt.
func (f *Feature) sinceLast(d time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.o.Now().Before(f.last.Add(d))
}
