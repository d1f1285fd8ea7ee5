package davfs

import (
	"context"
	"io"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// The core's API for the packages beside it (davfs/checkpoint; see
// docs/architecture.md, "The checkpoint store"): what they need to read
// and write a workspace the way every operation does, and nothing more.
//
// Guarantees: a Target is a path validated like a request path (resolve);
// every fd these calls return was opened by the confined walk (openat2
// RESOLVE_BENEATH|NO_SYMLINKS|NO_XDEV, or the O_NOFOLLOW walk), so a name
// opened or stat'ed at it (OpenAt, LstatAt) never follows a symlink nor
// crosses a mount; Commit renames only davfs's own temp files, over the
// very inode the caller checked and only where the hard-link policy
// (links.go) allows; Locked runs the caller's step under the mutation
// lock, so it is serialised with every davfs write.
//
// Limits: the fds are raw and owned by the caller, who closes them; what
// the caller does with an fd (which names it writes, in what order) is
// its own policy: davfs confines where it acts, not what it decides.

// Target is a path resolved in a workspace: validated, not opened.
type Target struct{ w wsPath }

// Resolve validates ws and path in it like a request path: the same
// errors as every operation (InvalidArgument, PermissionDenied for a
// denied name, OUTSIDE_GLOBAL...). Nothing is opened.
func (f *FS) Resolve(ws Workspace, path string) (Target, error) {
	w, err := f.resolve(ws, path)
	return Target{w}, err
}

// Workspace is t's workspace.
func (t Target) Workspace() Workspace { return t.w.ws }

// Path is t's workspace-relative path ("" the workspace root).
func (t Target) Path() string { return t.w.rel }

// Name is t's last segment ("" for the root).
func (t Target) Name() string { return t.w.name() }

// Depth is the number of t's segments (0 for the root).
func (t Target) Depth() int { return len(t.w.segs) }

// IsRoot reports whether t is its workspace's root.
func (t Target) IsRoot() bool { return t.w.isRoot() }

// IsGlobal reports whether t is in the GLOBAL workspace.
func (t Target) IsGlobal() bool { return t.w.isGlobal() }

// IsSkillsRoot reports whether t is GLOBAL's skills/ (never deleted).
func (t Target) IsSkillsRoot() bool {
	return t.w.isGlobal() && len(t.w.segs) == 1 && t.w.segs[0] == GlobalSkills
}

// ValidPath reports whether p is a valid request path of ws (the checks of
// Resolve but the workspace's own, allocating nothing for short paths):
// for paths read back from a store, which are trusted no more than a
// request's.
func (f *FS) ValidPath(ws Workspace, p string) error {
	var buf [32]string
	segs, err := f.splitPathBuf(p, buf[:0])
	if err != nil {
		return err
	}
	if ws.Scope == ScopeGlobal {
		return checkGlobal(p, segs)
	}
	return nil
}

// StatTarget is Stat of t, except that a directory's revision is not
// handed out (seen.go): a read for the caller's own decision, not a
// client's.
func (f *FS) StatTarget(t Target) (Entry, error) { return f.stat(t.w) }

// WorkspaceErr is the workspace root's own problem (a PROJECT workspace
// whose project is missing, a symlink or a file), nil otherwise.
func (f *FS) WorkspaceErr(t Target) error { return f.wsErr(t.w) }

// OpenTarget opens t with flags (fdio.DirPath, fdio.DirRead, fdio.File)
// by the confined walk; the Global root opens CODEX_HOME itself, which
// the caller treats as virtual (only skills/ and AGENTS.md are in it).
func (f *FS) OpenTarget(t Target, flags int) (int, error) { return f.open(t.w, flags) }

// OpenParent opens t's parent directory with flags, for *at calls on
// t.Name(). t must not be the root.
func (f *FS) OpenParent(t Target, flags int) (int, error) { return f.openParent(t.w, flags) }

// OpenParentDir opens t's parent directory O_RDONLY (for *at calls and
// its fsync), as every write does. t must not be the root.
func (f *FS) OpenParentDir(t Target) (int, error) { return f.openParentDir(t.w) }

// OpenAt opens the single name in dirfd, a directory of t's namespace
// opened through these calls, with flags, never following a symlink nor
// crossing a mount (ELOOP, EXDEV).
func (f *FS) OpenAt(t Target, dirfd int, name string, flags int) (int, error) {
	return f.openName(t.w.r, dirfd, name, flags)
}

// LstatAt stats name in dirfd (as OpenAt) without following a symlink;
// EXDEV for a mount point.
func (f *FS) LstatAt(t Target, dirfd int, name string, st *unix.Stat_t) error {
	return lstatOn(t.w.r, dirfd, name, st)
}

// OpenErr maps an error of opening rel (t or below it) as every operation
// does: a missing project before a missing path, a symlink or mount
// crossing as PermissionDenied/SYMLINK.
func (f *FS) OpenErr(t Target, rel string, err error) error { return f.resolveErr(t.w, rel, err) }

// Visible reports whether a name read from the disk may be shown: valid,
// not denied, not a davfs temp file (what a listing shows).
func (f *FS) Visible(name string) bool { return f.visibleName(name) }

// Config is f's configuration, defaults applied.
func (f *FS) Config() Config { return f.cfg }

// CheckProjectName validates a project name as every PROJECT workspace's
// (the project need not exist).
func (f *FS) CheckProjectName(name string) error { return f.checkProjectRef(name) }

// ProjectErr is the error for a project that is not a real directory
// under the projects root, nil if it is one.
func (f *FS) ProjectErr(name string) error { return f.projectErr(name) }

// Locked runs step under the mutation lock: no davfs write runs
// meanwhile. step must not call back into f's mutations (they take the
// lock); reads and the calls of this file are fine.
func (f *FS) Locked(step func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return step()
}

// RecreateProject creates the directory of the project name (0755) if it
// is missing, durably, without the initializer (a restore brings a
// deleted project back). It runs under Locked.
func (f *FS) RecreateProject(name string) error {
	if err := unix.Mkdirat(f.projects.fd, name, 0o755); err != nil && err != unix.EEXIST {
		return fsErr(err, name)
	}
	return fsErr(f.syncRoot(), name)
}

// WriteTemp streams r (at most max bytes) into a new temp file in dirfd
// (t's parent, from OpenParentDir), sets mode and fsyncs it, as every
// write does before its commit. On an error the temp file is gone.
func (f *FS) WriteTemp(ctx context.Context, dirfd int, rel string, r io.Reader, max int64, mode uint32) (fdio.TempFile, error) {
	return f.writeTemp(ctx, dirfd, rel, r, max, mode, nil)
}

// Commit renames tmp onto t's name in pfd (t's parent, from
// OpenParentDir): over the file replace (the caller's lstat of it,
// checked again on an fd right before the rename: the same inode, and one
// the hard-link policy lets be replaced) or, with replace nil, onto a
// free name (AlreadyExists otherwise). It runs under Locked. On an error
// tmp is discarded; on success it is closed. The caller fsyncs pfd.
func (f *FS) Commit(pfd int, t Target, tmp fdio.TempFile, replace *unix.Stat_t) error {
	_, old, err := f.commit(pfd, t.w, tmp, replace)
	if err != nil {
		return err
	}
	closeRef(old)
	unix.Close(tmp.FD)
	return nil
}

// RootFD is the O_PATH fd of the namespace root of scope (the projects
// root, or CODEX_HOME), owned by f: never closed by the caller. It is for
// the placement checks of data kept beside the volumes (the checkpoint
// store must not be inside CODEX_HOME or a project).
func (f *FS) RootFD(s Scope) int {
	if s == ScopeGlobal {
		return f.codex.fd
	}
	return f.projects.fd
}

// ContextError is the error an operation returns when ctx ended
// (Canceled or DeadlineExceeded, as a *Error).
func ContextError(ctx context.Context) error { return ctxErr(ctx) }

// StaleError is the Aborted/REVISION_MISMATCH of rel, changed since it
// was read.
func StaleError(rel string) *Error { return errStale(rel) }

// TextReason says whether b is editable text (EditableOK) or why not.
func TextReason(b []byte) NonEditableReason { return classify(b) }
