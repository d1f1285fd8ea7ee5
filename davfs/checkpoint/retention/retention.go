// Package retention decides which stored checkpoints go: the age, count
// and byte policies of services.checkpoints (docs/checkpoints.md,
// "Limits"). It is pure: it plans on descriptions the store read for it
// and touches no disk, so every rule is tested by table.
//
// What it guarantees: a held checkpoint (a restore reads it, or the write
// of a per-file version still runs) is never planned for removal, nor the
// new checkpoint itself, nor a per-file version younger than
// Policy.VersionMinAge; a new per-file version evicts only other versions.
// What it does not: it does not remove anything, and the byte plan is
// only as exact as the sizes it is handed.
package retention

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Kind is what took a checkpoint, in eviction order: versions go first,
// then automatic checkpoints, manual ones last.
type Kind int

const (
	Version   Kind = iota // a per-file version kept before a WebDAV write
	Automatic             // taken by the service itself (before a delete or restore)
	Manual                // taken by an operator
)

// Stored is one stored checkpoint as the policies see it.
type Stored struct {
	Workspace string // the store's workspace key
	ID        string // IDs sort by creation time
	Created   time.Time
	Kind      Kind
	Held      bool // a restore reads it, or its write still runs: never removed
}

// Policy holds the limits of services.checkpoints.
type Policy struct {
	MaxAge          time.Duration // older checkpoints go
	PerWorkspace    int           // checkpoints other than versions, per workspace
	VersionsPerWS   int           // per-file versions, per workspace
	VersionMinAge   time.Duration // a version younger than this is never evicted
	MaxBytes        int64         // what the objects may occupy after a capture
	Now             time.Time
	NewID           string // the checkpoint just committed ("" for the age policy)
	NewWorkspaceKey string // its workspace
}

// Expired returns the checkpoints older than MaxAge that are not held.
func (p Policy) Expired(cs []Stored) []Stored {
	cut := p.Now.Add(-p.MaxAge)
	var out []Stored
	for _, c := range cs {
		if c.Created.Before(cut) && !c.Held {
			out = append(out, c)
		}
	}
	return out
}

// SortForEviction puts cs in eviction order: by Kind, oldest first in
// each (IDs sort by creation time).
func SortForEviction(cs []Stored) {
	slices.SortFunc(cs, func(a, b Stored) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.ID, b.ID))
	})
}

// newIsVersion reports whether the new checkpoint is a per-file version.
func (p Policy) newIsVersion(cs []Stored) bool {
	for _, c := range cs {
		if c.Workspace == p.NewWorkspaceKey && c.ID == p.NewID {
			return c.Kind == Version
		}
	}
	return false
}

// Evictable reports whether c may be removed to make room for the new
// checkpoint: not the new one, not held, not a version younger than
// VersionMinAge, and, for a new version, only another version.
func (p Policy) Evictable(cs []Stored, c Stored) bool {
	return p.evictable(p.newIsVersion(cs), c)
}

func (p Policy) evictable(newIsVersion bool, c Stored) bool {
	isVersion := c.Kind == Version
	return !(c.Workspace == p.NewWorkspaceKey && c.ID == p.NewID) && !c.Held &&
		(!isVersion || p.Now.Sub(c.Created) >= p.VersionMinAge) && (isVersion || !newIsVersion)
}

// ByCount plans, over cs in eviction order (SortForEviction), the
// removals that bring the new checkpoint's workspace within its count
// limits (versions and the others counted apart). drop[i] is set for
// cs[i]. refuse is true when the new checkpoint is a version that does
// not fit even so: it goes, and nothing else.
func (p Policy) ByCount(cs []Stored) (drop []bool, refuse bool) {
	newIsVersion := p.newIsVersion(cs)
	count := map[bool]int{}
	for _, c := range cs {
		if c.Workspace == p.NewWorkspaceKey {
			count[c.Kind == Version]++
		}
	}
	limit := map[bool]int{true: p.VersionsPerWS, false: p.PerWorkspace}
	drop = make([]bool, len(cs))
	for i, c := range cs {
		v := c.Kind == Version
		if c.Workspace == p.NewWorkspaceKey && p.evictable(newIsVersion, c) && count[v] > limit[v] {
			drop[i] = true
			count[v]--
		}
	}
	return drop, newIsVersion && count[true] > limit[true]
}

// ByBytes adds to drop (parallel to cs, in eviction order) evictable
// checkpoints until what the rest references fits in MaxBytes. objects[i]
// names what cs[i] references (none: damaged, or holding no file; removing
// it frees nothing known); sizes gives what each object occupies. It reports
// whether the rest fits; never when unknown (a checkpoint whose contents
// could not be read).
func (p Policy) ByBytes(cs []Stored, drop []bool, objects [][]string, sizes map[string]int64, unknown bool) bool {
	newIsVersion := p.newIsVersion(cs)
	counts := map[string]int{}
	for i := range cs {
		if !drop[i] {
			for _, o := range objects[i] {
				counts[o]++
			}
		}
	}
	var total int64
	for o := range counts {
		total += sizes[o]
	}
	for i, c := range cs {
		if total <= p.MaxBytes {
			break
		}
		if drop[i] || !p.evictable(newIsVersion, c) || len(objects[i]) == 0 {
			continue
		}
		drop[i] = true
		for _, o := range objects[i] {
			if counts[o]--; counts[o] == 0 {
				total -= sizes[o]
			}
		}
	}
	return !unknown && total <= p.MaxBytes
}
