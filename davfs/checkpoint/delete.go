package checkpoint

import (
	"context"
	"strings"

	"github.com/agentworkspace/files/davfs"
)

// The automatic checkpoint before a delete, composed above the core: the
// core's own checks first (davfs.FS.CheckDelete, CheckProjectDelete), then
// the checkpoint, then the core's delete. A delete that fails after its
// checkpoint was taken keeps the checkpoint and still returns its ID.

// DeleteOptions are the choices of DeleteEntry and DeleteProject.
type DeleteOptions struct {
	// Delete is the core's part (Recursive, Replace, ChangedAfter,
	// KeptDirsOnly; Kept is set here from Version).
	Delete davfs.DeleteOptions
	// SkipCheckpoint deletes without the automatic checkpoint a recursive
	// delete otherwise takes first: the caller's explicit override for a
	// full store (ResourceExhausted/CHECKPOINT_LIMIT). The delete then
	// cannot be undone.
	SkipCheckpoint bool
	// Operator names who asked, for the automatic checkpoint.
	Operator string
	// Files checkpoints a regular file too before its delete
	// (CheckpointBeforeDelete), so that a file deleted through REST or
	// gRPC can be undone as a folder can. WebDAV leaves it off.
	Files bool
	// Version is a per-file version just kept of path (KeepVersion): it is
	// the automatic checkpoint of the delete and, with
	// Delete.ChangedAfter set, what the delete of a directory may remove
	// (davfs.DeleteOptions.Kept).
	Version string
}

// DeleteEntry is davfs.FS.DeleteEntryWith with, for a recursive delete of
// a directory (or, with opts.Files, of a regular file) whose revision
// matches and automatic checkpoints on, an
// automatic checkpoint of that directory first (CheckpointBeforeDelete);
// if that fails, nothing is deleted and its error is returned (a full
// store: ResourceExhausted/CHECKPOINT_LIMIT, which opts.SkipCheckpoint
// overrides). It returns the automatic checkpoint's ID ("" when none was
// taken: off, skipped, not a directory, or nothing a checkpoint could
// hold), also with the delete's error.
func (f *Store) DeleteEntry(ctx context.Context, ws davfs.Workspace, path, expectedRevision string, opts DeleteOptions) (string, error) {
	t, err := f.fs.CheckDelete(ws, path, expectedRevision)
	if err != nil {
		return "", err
	}
	auto := ""
	if !opts.SkipCheckpoint && f.ck != nil && f.ck.cfg.Automatic && (opts.Delete.Recursive || opts.Files) {
		// StatTarget, unlike Stat, does not hand the revision out.
		e, err := f.fs.StatTarget(t)
		want := (e.Type == davfs.TypeDirectory && opts.Delete.Recursive) || (e.Type == davfs.TypeFile && opts.Files)
		if err == nil && want && e.Revision == expectedRevision {
			if auto, err = f.autoCheckpoint(ctx, ws, path, CheckpointBeforeDelete, opts.Operator, opts.Version); err != nil {
				return "", err
			}
		}
	}
	opts.Delete.Kept = nil
	if opts.Version != "" && !opts.Delete.ChangedAfter.IsZero() && f.ck != nil {
		// A keep delete of a directory: nothing the version does not hold
		// is deleted (a file's own revision check already binds it).
		if e, err := f.fs.StatTarget(t); err == nil && e.Type == davfs.TypeDirectory {
			if opts.Delete.Kept, err = f.keptEntries(ws, opts.Version, t.Path()); err != nil {
				return auto, err
			}
		}
	}
	return auto, f.fs.DeleteEntryWith(ctx, ws, path, expectedRevision, opts.Delete)
}

// DeleteProject is davfs.FS.DeleteProject with, when automatic
// checkpoints are on, a checkpoint of the project first
// (CheckpointBeforeProjectDelete; without .git and denylisted directories,
// which checkpoints never hold); if that fails, nothing is deleted. Only
// SkipCheckpoint and Operator of opts apply. It returns the automatic
// checkpoint's ID, also with the delete's error.
func (f *Store) DeleteProject(ctx context.Context, name, confirmName string, opts DeleteOptions) (string, error) {
	if err := f.fs.CheckProjectDelete(name, confirmName); err != nil {
		return "", err
	}
	auto := ""
	if !opts.SkipCheckpoint && f.fs.ProjectErr(name) == nil {
		// The automatic checkpoint that can bring it back.
		var err error
		ws := davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
		if auto, err = f.autoCheckpoint(ctx, ws, "", CheckpointBeforeProjectDelete, opts.Operator, ""); err != nil {
			return "", err
		}
	}
	return auto, f.fs.DeleteProject(ctx, name, confirmName)
}

// keptEntries reads the version id of ws back as the entries below rel (a
// keep delete's davfs.DeleteOptions.Kept). A version that cannot be read
// refuses the delete: what it holds is unknown.
func (f *Store) keptEntries(ws davfs.Workspace, id, rel string) (map[string]*davfs.Kept, error) {
	f.ck.gc.RLock()
	m, err := f.ck.readManifest(ws, id)
	f.ck.gc.RUnlock()
	if err != nil {
		return nil, newErr(davfs.CodeAborted, davfs.ReasonRevisionMismatch, err, "the version kept of %q cannot be read back", rel)
	}
	out := make(map[string]*davfs.Kept, len(m.Entries))
	for i := range m.Entries {
		if e := &m.Entries[i]; strings.HasPrefix(e.Path, rel+"/") {
			out[e.Path] = &davfs.Kept{Dir: e.Dir, Dev: e.Dev, Ino: e.Ino, Size: e.Size, Mtime: e.Mtime, Ctime: e.Ctime, Hash: e.Hash, Key: e.Key}
		}
	}
	return out, nil
}
