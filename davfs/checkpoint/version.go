package checkpoint

import (
	"context"
	"sync"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// Per-file versions (issue #15, "Sync clients without preconditions";
// docs/checkpoints.md "Versions"). With webdav.unconditionalWrites: keep, a
// WebDAV write that replaces or removes an existing resource without a
// precondition or a held lock is accepted once what it replaces is kept: a
// checkpoint of just that path (a file, or the directory a recursive
// DELETE or an overwriting MOVE/COPY removes), reason
// CheckpointBeforeWebDAVWrite, label "WebDAV <method>". Versions have their
// own bound (Config.MaxVersionsPerWorkspace), are pruned before
// every other checkpoint and never count against MaxPerWorkspace, so they
// cannot evict an operator's checkpoints.

// CheckpointBeforeWebDAVWrite is the reason of a per-file version.
const CheckpointBeforeWebDAVWrite = "before_webdav_write"

// DefaultVersionsPerWorkspace is MaxVersionsPerWorkspace's default.
const DefaultVersionsPerWorkspace = 200

// VersionMinAge is how long a version is safe from a newer one: keeping a
// version that would prune (by count or by bytes) one younger than this
// refuses the write with ResourceExhausted/CHECKPOINT_LIMIT (507) instead,
// so what a burst of writes replaced is never lost to the bound.
const VersionMinAge = 10 * time.Minute

// isVersion reports whether r is a per-file version.
func (r ckRef) isVersion() bool { return r.meta.Reason == CheckpointBeforeWebDAVWrite }

// KeepingOff is the message of the 428 a write gets when the gateway asks
// to keep what it replaces but this agent's checkpoints are disabled.
const KeepingOff = "send If-Match with the current ETag (or hold a lock): keeping replaced content (webdav.unconditionalWrites: keep) is off on this agent because its checkpoints are disabled (services.checkpoints.enabled)"

// KeepVersion keeps path of ws, which must have revision want, as a
// per-file version before a WebDAV write replaces or removes it, and
// returns the version's ID. The caller then commits the write with want as
// its expected revision under the mutation lock, so what the write
// replaces is what was kept: for a file, its revision is the same before
// and after the capture (the revision binds the content and the inode's
// stat, and the capture reads it whole from one fd), else the version is
// dropped and the write refused (REVISION_MISMATCH); for a directory, the
// caller's recursive delete refuses to remove anything changed after a
// moment taken before this capture began (DeleteOptions.ChangedAfter: a
// later read of the revision by anyone does not move it), and a directory
// holding names the version leaves out (Skipped: .git, links, special or
// unreadable files) is refused (PRECONDITION_REQUIRED, KeepSkipped), as
// the delete would unlink what nothing keeps.
// A version that cannot be stored fails the write with that error
// (CHECKPOINT_LIMIT, NO_SPACE...) and nothing changes.
//
// The version is held (never pruned, whatever its age) until the caller
// calls release, which it must do once its write or delete has finished,
// on every path (errors and panics too: defer it); release may be called
// more than once. Without the hold, a checkpoint created while a long
// upload streams could evict the only copy of what the upload replaces.
// On an error, or when nothing was kept (""), release is a no-op.
func (f *Store) KeepVersion(ctx context.Context, ws davfs.Workspace, path, want, method, operator string) (id string, release func(), err error) {
	if f.ck == nil {
		return "", noRelease, davfs.PreconditionRequired(KeepingOff)
	}
	w, err := f.fs.Resolve(ws, path)
	if err != nil {
		return "", noRelease, err
	}
	if e, err := f.fs.StatTarget(w); err != nil || e.Revision != want {
		return "", noRelease, davfs.StaleError(w.Path())
	}
	// Held by the store from before the version exists (ckStore.create).
	c, err := f.createCheckpoint(ctx, ws, CheckpointOptions{Path: path, Label: "WebDAV " + method, Operator: operator}, CheckpointBeforeWebDAVWrite)
	if err != nil {
		return "", noRelease, err
	}
	// The release of the hold ckStore.create took on the version: it ends
	// the hold once, however often it is called.
	release = sync.OnceFunc(func() { f.ck.release(c.ID) })
	ok := false
	defer func() {
		if !ok {
			release()
		}
	}()
	e, err := f.fs.StatTarget(w)
	if err != nil || e.Revision != want || (e.Type == davfs.TypeFile && c.Files != 1) {
		// Changed while it was read, or left out as still changing: the
		// version is not what the write would replace.
		f.ck.dropVersion(ws, c.ID, release)
		return "", noRelease, davfs.StaleError(w.Path())
	}
	if e.Type == davfs.TypeDirectory && c.Files == 0 && c.Skipped == 0 {
		// Only empty directories: nothing to keep, and a sync that removes
		// every directory it empties must not use up the versions' bound.
		f.ck.dropVersion(ws, c.ID, release)
		return "", noRelease, nil
	}
	if e.Type == davfs.TypeDirectory && c.Skipped > 0 {
		// The recursive delete would unlink what the version left out
		// (.git, node_modules, links, FIFOs, unreadable or still changing
		// files): nothing could bring those back, so keeping is no answer.
		f.ck.dropVersion(ws, c.ID, release)
		return "", noRelease, davfs.PreconditionRequired(KeepSkipped)
	}
	ok = true
	return c.ID, release, nil
}

func noRelease() {}

// DropVersionIfCurrent deletes id, the version KeepVersion kept of path of
// ws, when path still has rev, the revision the version holds (a write
// that failed replaced nothing: keeping it twice would only use up the
// versions' bound), and reports whether it did. When path changed, or
// another holds the version (a restore reading it), it stays. Either way
// the caller's hold on it ends (release).
func (f *Store) DropVersionIfCurrent(ws davfs.Workspace, path, id, rev string, release func()) bool {
	defer release()
	if f.ck == nil {
		return false
	}
	w, err := f.fs.Resolve(ws, path)
	if err != nil {
		return false
	}
	if e, err := f.fs.StatTarget(w); err != nil || e.Revision != rev {
		return false
	}
	return f.ck.dropVersion(ws, id, release)
}

// dropVersion releases the caller's hold on the version id of ws and
// deletes it, unless someone else holds it too (a restore reading it):
// then it stays, a checkpoint like any other. Both happen under the
// store's lock, so no prune plans around the drop. It reports whether id
// was deleted.
func (s *ckStore) dropVersion(ws davfs.Workspace, id string, release func()) bool {
	s.gc.Lock()
	defer s.gc.Unlock()
	release()
	if s.isBusy(id) {
		return false
	}
	if _, err := s.readMeta(ws, id); err != nil {
		return false
	}
	if s.remove(ckWorkspaceKey(ws), id) != nil {
		return false
	}
	s.collect(nil)
	return true
}

// KeepSkipped is the message of the 428 a keep write over a directory gets
// when the directory holds names a version cannot keep.
const KeepSkipped = "the folder holds names a version cannot keep (denied names such as .git or node_modules, links, special or unreadable files); send If-Match with the current ETag or hold a lock, or delete it through the portal or the REST API"

// MaxHoldingDecodes bounds the manifests one ListCheckpointsHolding call
// reads (each streamed up to the path: ckStore.holds).
const MaxHoldingDecodes = 20

// ListCheckpointsHolding lists, newest first, the checkpoints of ws that
// hold path (a file or directory, workspace-relative): per-file versions
// and every other checkpoint whose capture includes that name. An empty
// path is ListCheckpoints.
//
// A version of path itself answers from its description; every other
// candidate (a checkpoint of the workspace or of a directory above path)
// is answered from its manifest (streamed, never decoded whole nor
// cached: ckStore.holds), at most MaxHoldingDecodes of them,
// the newest first: older candidates beyond that (or not reached before
// ctx ended) are left out of the answer, and truncated says so, so that a
// caller does not present the answer as complete. The store's lock is
// held only for the listing and for each manifest read, never across the
// decodes, so keep writes and creates are not stalled behind a long
// answer.
func (f *Store) ListCheckpointsHolding(ctx context.Context, ws davfs.Workspace, path string) (cs []Checkpoint, truncated bool, err error) {
	if path == "" {
		cs, err = f.ListCheckpoints(ctx, ws)
		return cs, false, err
	}
	w, err := f.checkpointCall(ws, path)
	if err != nil {
		return nil, false, err
	}
	f.ck.gc.RLock()
	all, err := f.ck.list(ws)
	f.ck.gc.RUnlock()
	if err != nil {
		return nil, false, err
	}
	out := make([]Checkpoint, 0, len(all))
	decoded := 0
	for _, c := range all {
		if !within(w.Path(), c.Root) {
			continue // taken of another part of the workspace
		}
		if c.Reason == CheckpointBeforeWebDAVWrite && c.Root == w.Path() {
			out = append(out, c) // a version of path holds it
			continue
		}
		if decoded >= MaxHoldingDecodes || ctx.Err() != nil {
			truncated = true
			continue
		}
		decoded++
		f.ck.gc.RLock()
		ok := f.ck.holds(ws, c.ID, w.Path()) // damaged or just deleted: it holds nothing that can be restored
		f.ck.gc.RUnlock()
		if ok {
			out = append(out, c)
		}
	}
	return out, truncated, nil
}
