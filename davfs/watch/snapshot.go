package watch

import (
	"context"
	"maps"
	"slices"

	"github.com/agentworkspace/files/davfs"
)

// Snapshot and diff: what a watch knows of its directory, read and
// compared through the core (davfs.Dir: confined, and the watcher's own
// reads, which hand no directory revision out).

// knownEntry is what a watch knows of one name: its inode (rename
// pairing) and a 64-bit FNV-1a digest of its revision (revKey): a
// directory of 200,000 names keeps 16 bytes per name, not its revision
// strings.
type knownEntry struct {
	ino uint64
	rev uint64
}

// revKey is the FNV-1a digest of a revision string. Two revisions of one
// name with the same digest (a chance of 2^-64) would hide one Modified.
func revKey(rev string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(rev); i++ {
		h = (h ^ uint64(rev[i])) * 1099511628211
	}
	return h
}

// snapshot lists d through the confined listing, chunk by chunk, and
// returns what is known of each name and d's own revision.
func snapshot(ctx context.Context, d *davfs.Dir) (map[string]knownEntry, string, error) {
	known := map[string]knownEntry{}
	err := d.Entries(ctx, func(es []davfs.Entry) {
		for _, e := range es {
			known[e.Name] = knownEntry{ino: d.Ino(e.Name), rev: revKey(e.Revision)}
		}
	})
	if err != nil {
		return nil, "", err
	}
	self, err := d.Stat(ctx, "")
	if err != nil {
		return nil, "", err
	}
	return known, self.Revision, nil
}

// reload brings what d knows up to date for a Directory change: by a
// confined Stat of each changed name (names), or, with relist (more names
// than MaxPending, or after a kernel overflow), by listing the directory
// again. It is false when the directory cannot be read any more.
func (w *Watcher) reload(ctx context.Context, d *dirWatch, names map[string]struct{}, relist bool) bool {
	if relist {
		w.stats.relists.Add(1)
		known, rev, err := snapshot(ctx, d.dir)
		if err != nil {
			return false
		}
		d.known, d.rev = known, rev
		return true
	}
	for name := range names {
		if e, err := d.dir.Stat(ctx, name); err != nil {
			delete(d.known, name)
		} else {
			d.known[name] = knownEntry{ino: d.dir.Ino(name), rev: revKey(e.Revision)}
		}
	}
	if self, err := d.dir.Stat(ctx, ""); err == nil {
		d.rev = self.Revision
	}
	return true
}

// observed is one changed name as a confined Stat found it.
type observed struct {
	name  string
	rel   string // its workspace path
	entry davfs.Entry
	ino   uint64
	ok    bool // it is there (and visible)
}

// observe stats each changed name of d, in name order.
func observe(ctx context.Context, d *davfs.Dir, names map[string]struct{}) []observed {
	var out []observed
	for _, name := range slices.Sorted(maps.Keys(names)) {
		o := observed{name: name, rel: d.Child(name)}
		if e, err := d.Stat(ctx, name); err == nil {
			o.entry, o.ino, o.ok = e, d.Ino(name), true
		}
		out = append(out, o)
	}
	return out
}

// compare turns what was observed into changes against known, and brings
// known up to date. It is pure: a name that appeared is Created, one whose
// revision moved Modified, one that went Removed, and a Removed and a
// Created of the same (non-zero) inode one Renamed.
func compare(known map[string]knownEntry, obs []observed) []Change {
	type gone struct {
		path string
		ino  uint64
	}
	var out []Change
	var removed []gone
	created := map[uint64]int{} // ino → index in out
	for _, o := range obs {
		old, had := known[o.name]
		if !o.ok {
			if had {
				delete(known, o.name)
				removed = append(removed, gone{o.rel, old.ino})
			}
			continue
		}
		known[o.name] = knownEntry{ino: o.ino, rev: revKey(o.entry.Revision)}
		switch {
		case !had:
			created[o.ino] = len(out)
			out = append(out, Change{Kind: ChangeCreated, Path: o.rel, Entry: o.entry})
		case old.rev != revKey(o.entry.Revision):
			out = append(out, Change{Kind: ChangeModified, Path: o.rel, Entry: o.entry})
		}
	}
	for _, r := range removed {
		if i, ok := created[r.ino]; ok && r.ino != 0 && out[i].Kind == ChangeCreated {
			out[i].Kind, out[i].FromPath = ChangeRenamed, r.path
			delete(created, r.ino)
			continue
		}
		out = append(out, Change{Kind: ChangeRemoved, Path: r.path})
	}
	return out
}

// diff stats each changed name through the confined Stat and compares it
// with what d knew; with changes (or self) it adds d's own revision when
// that moved, so a later rename or delete of the directory is not refused.
func (w *Watcher) diff(ctx context.Context, d *dirWatch, names map[string]struct{}, self bool) []Change {
	out := compare(d.known, observe(ctx, d.dir, names))
	if len(out) > 0 || self {
		if e, err := d.dir.Stat(ctx, ""); err == nil && e.Revision != d.rev {
			d.rev = e.Revision
			out = append(out, Change{Kind: ChangeModified, Path: d.path, Entry: e})
		}
	}
	return out
}
