package watch

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentworkspace/files/davfs"
)

// Config bounds a Watcher. Zero values take the defaults in brackets.
type Config struct {
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

	// Observer hears of every change published (its workspace) and of
	// every kernel overflow, for figures kept apart from the streams
	// (davfs/usage's cache). Called with the watcher's lock held: it must
	// not call back into the Watcher [none].
	Observer Observer

	// Logger receives operational detail (never content, never a host
	// path) [a null logger].
	Logger hclog.Logger
	// Now is the clock of aggregation and lingering [time.Now]; flushes
	// are still scheduled on real timers.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
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
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// positiveOr sets *v to d unless it is positive.
func positiveOr[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Observer is told what the watcher published (Config.Observer).
type Observer interface {
	Changed(ws davfs.Workspace) // a change in ws was published
	Overflow()                  // events were lost: anything derived is stale
}
