package watch

import (
	"sync/atomic"

	"github.com/agentworkspace/files/davfs"
)

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
	Workspace   davfs.Workspace
	Directory   string      // the subscribed directory the change was seen in
	Path        string      // the entry (Created/Modified/Removed/Renamed), the directory (Directory)
	FromPath    string      // Renamed: the old path
	Entry       davfs.Entry // Created/Modified/Renamed/Directory: the entry as it is now (no content)
	Reason      ResyncReason
	Directories []string // Ready: the live directories; Resync: the affected ones (empty: all)

	seq uint64
	key string // the dirWatch key, for replay
}

// Stats are the Watcher's gauges and counters.
type Stats struct {
	Subscribers int
	WatchedDirs int
	Events      uint64                  // changes queued to subscribers
	Filtered    uint64                  // inotify events dropped by the confinement filter
	Drops       uint64                  // changes lost to a full subscriber queue
	Resyncs     map[ResyncReason]uint64 // resync changes sent, by reason
	Relists     uint64                  // watched directories listed again whole (kernel overflow, more than MaxPending names)
}

type counters struct {
	events, filtered, drops, relists atomic.Uint64
	resyncs                          [len(resyncNames)]atomic.Uint64 // by reason
}

func (c *counters) load() Stats {
	st := Stats{Events: c.events.Load(), Filtered: c.filtered.Load(), Drops: c.drops.Load(), Relists: c.relists.Load()}
	st.Resyncs = map[ResyncReason]uint64{}
	for r := ResyncOverflow; int(r) < len(resyncNames); r++ {
		st.Resyncs[r] = c.resyncs[r].Load()
	}
	return st
}
