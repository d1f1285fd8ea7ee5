package dav

// Per-file versions as the WebDAV adapter keeps them (docs/checkpoints.md
// "Versions"): what keeping did for one request, and the keep before a
// removal. The version itself is checkpoint.Store.KeepVersion's.

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
)

// Unconditional records what keeping did for one WebDAV request (the
// sidecar tells the gateway, which audits it).
type Unconditional struct {
	mu       sync.Mutex
	used     bool
	versions []string
	byName   map[string]string // WebDAV name → version kept of it
	empty    map[string]bool   // WebDAV names of directories holding no file, kept as nothing
}

// Used reports whether a write of the request went ahead without a
// precondition because keeping was on, and the IDs of the versions it kept
// (none when it replaced nothing, e.g. a MOVE of its source to a new name).
func (u *Unconditional) Used() (used bool, ids []string) {
	u.locked(func() { used, ids = u.used, append([]string(nil), u.versions...) })
	return used, ids
}

// locked runs fn with u locked. A nil u (a call outside a WebDAV request)
// records and answers nothing: fn does not run.
func (u *Unconditional) locked(fn func()) {
	if u != nil {
		u.mu.Lock()
		defer u.mu.Unlock()
		fn()
	}
}

func (u *Unconditional) note(name, id string) {
	u.locked(func() {
		u.used = true
		if id != "" {
			u.versions = append(u.versions, id)
			if u.byName == nil {
				u.byName = map[string]string{}
			}
			u.byName[name] = id
		}
	})
}

// forget drops id, a version of name dropped again because its write
// failed and replaced nothing.
func (u *Unconditional) forget(name, id string) {
	u.locked(func() {
		u.versions = slices.DeleteFunc(u.versions, func(v string) bool { return v == id })
		if u.byName[name] == id {
			delete(u.byName, name)
		}
	})
}

func (u *Unconditional) noteEmpty(name string) {
	u.locked(func() {
		if u.empty == nil {
			u.empty = map[string]bool{}
		}
		u.empty[name] = true
	})
}

// keptEmpty reports whether name is a directory this request's keep found
// holding only empty directories (so no version, and no automatic
// checkpoint, is needed before its delete).
func (u *Unconditional) keptEmpty(name string) (empty bool) {
	u.locked(func() { empty = u.empty[name] })
	return empty
}

// dropUnusedVersion deletes id, the version a PUT kept of t, when the
// upload failed or was aborted and t still has rev, the revision the
// version holds: then it is the current content and keeping it twice would
// only use up the versions' bound. When t changed (the upload's error may
// have come after its commit), or another holds the version (a restore
// reading it), the version stays. Either way the PUT's hold on it ends
// (release).
func (d *davFS) dropUnusedVersion(t target, id, rev string, release func()) {
	if d.ck.DropVersionIfCurrent(t.ws, t.path, id, rev, release) {
		d.st.Kept.forget(t.name, id)
	}
}

// of is the version kept of name in this request ("" none).
func (u *Unconditional) of(name string) (id string) {
	u.locked(func() { id = u.byName[name] })
	return id
}

// keepBefore is expectedRevision's answer to a Required write with Keep
// and no IfMatch: a removal (RemoveAll, also the one making room for a
// COPY or MOVE) keeps what it removes first; a Rename's source loses
// nothing (it lives on at the destination) and goes ahead as it is.
// release ends the hold on the version kept (checkpoint.Store.KeepVersion): the caller
// calls it once its delete has finished.
func (d *davFS) keepBefore(ctx context.Context, op string, t target, e davfs.Entry) (rev string, release func(), err error) {
	// Handed out so that the delete's revision check holds; what the
	// delete refuses is bounded by the moment RemoveAll took before this
	// (DeleteOptions.ChangedAfter), not by this or any later hand-out.
	d.fs.HandOut(e, time.Now())
	id := ""
	release = noRelease
	if op == "removeall" {
		if id, release, err = d.ck.KeepVersion(ctx, t.ws, t.path, e.Revision, d.pre(t.name).Keep, d.st.Operator); err != nil {
			return "", noRelease, d.wrapErr(op, t.name, err)
		}
		if id == "" && e.Type == davfs.TypeDirectory {
			d.st.Kept.noteEmpty(t.name)
		}
	} else if !d.ck.CheckpointsEnabled() {
		return "", noRelease, d.wrapErr(op, t.name, davfs.PreconditionRequired(checkpoint.KeepingOff))
	}
	d.st.Kept.note(t.name, id)
	return e.Revision, release, nil
}

func noRelease() {}
