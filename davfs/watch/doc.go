// Package watch is live changes (issue #16): a Watcher watches only the
// directories its subscribers ask for, through the same confinement as
// every other davfs operation, and turns what inotify reports into
// Changes. It uses the core only through davfs's exported API (FS.OpenDir
// and Dir, FS.CheckDir, FS.HandOut); davfs does not import it.
//
// The package is split by concern: kernel.go is the thin fsnotify
// adapter; aggregate.go is the pure coalescing of events per directory on
// an injected clock (no kernel, no file system: tested by table);
// snapshot.go reads and compares a directory through the core; fanout.go
// is the subscriptions, their queues and the resume ring; watcher.go ties
// them together.
//
// Guarantees:
//   - A watched directory is opened by davfs's confined resolution (openat2
//     RESOLVE_BENEATH|NO_SYMLINKS|NO_XDEV, or the O_NOFOLLOW walk) and the
//     inotify watch is put on that fd (/proc/self/fd/N), never on a joined
//     host path; the fd is held for the life of the watch.
//   - A name is reported only if a listing would show it: denylisted names,
//     davfs temp files, invalid names and, in the Global root, anything but
//     skills and AGENTS.md are dropped before anything is stat'ed; each
//     remaining name is stat'ed through FS.Stat (confined, from the root),
//     so a symlink, FIFO or a name under a moved-away directory yields no
//     Created/Modified, only, if it was visible before, Removed.
//   - Before a batch is published the watched directory is re-resolved and
//     compared (dev, inode) with the watched one; a directory that moved,
//     was replaced (a symlink swap) or was deleted ends its watch with a
//     Resync(GONE) for that directory, never with events from its new place.
//   - A Change carries metadata (path, type, size, times, revision), never
//     content.
//
// Bounds: at most MaxDirs watched directories per Watcher (one inotify
// instance) and MaxDirsPerSubscriber per subscription; directories over
// either cap, or refused by the kernel (ENOSPC at fs.inotify.max_user_watches),
// are reported as Resync(LIMIT) with the directories that are not live. Each
// subscriber has a bounded queue; a subscriber that falls behind loses its
// queue and receives one Resync(OVERFLOW); a kernel queue overflow gives
// every subscriber a Resync(OVERFLOW). Bursts are coalesced per directory:
// names changed within Coalesce are published together, and once more than
// BurstEntries names changed within a second, the rest is one Directory
// ("reload this directory") change; while a burst lasts (until names stop
// arriving for BurstHold plus a second), the directory is published at
// most every BurstHold. A burst of any size thus costs at most
// BurstEntries entry changes plus one reload per BurstHold.
//
// Cost: what the watcher knows of a directory is updated incrementally,
// by a confined Stat of each name an event named (burst or not), so a
// write costs the same in a directory of 10 names or of 200,000 (issue
// #23). The directory is listed again whole only when that cannot be
// trusted or would cost more: after a kernel queue overflow, and when more
// than MaxPending names changed before one flush (then once for all of
// them).
//
// Limits: changes inside a subscribed directory's subdirectories are not
// reported unless those are subscribed too. Renames are paired by inode
// within one batch of one directory; a move between directories is a
// Removed and a Created. Watches whose last subscriber left linger for
// Linger so that a reconnecting client resumes without a gap.
package watch
