package davfs

import (
	"context"
	"strconv"
	"time"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// Dir is one directory held open by the confined resolution, for code
// beside the core that follows a directory over time (the watcher,
// davfs/watch). It offers what such code needs and no more: the held fd
// as a /proc/self/fd path (to put an inotify watch on the fd, never on a
// joined host path), whether the path still resolves to the held
// directory, the listing filter, and confined reads of the directory and
// its names. Those reads are the caller's own, not a client's: they do not
// record a directory revision as handed out (seen.go); HandOut does, for
// what the caller shows a client.
type Dir struct {
	f        *FS
	p        wsPath
	fd       int // O_PATH, from the confined resolution
	dev, ino uint64
}

// CheckDir validates dir of ws as any request path is validated (an
// invalid, denylisted or outside-Global path is refused); it opens nothing.
func (f *FS) CheckDir(ws Workspace, dir string) error {
	_, err := f.resolve(ws, dir)
	return err
}

// OpenDir resolves dir of ws through the confined resolution (openat2
// RESOLVE_BENEATH|NO_SYMLINKS|NO_XDEV, or the O_NOFOLLOW walk) and holds
// it. Something that is not a directory is NotADirectory; the caller
// closes the Dir.
func (f *FS) OpenDir(ws Workspace, dir string) (*Dir, error) {
	p, err := f.resolve(ws, dir)
	if err != nil {
		return nil, err
	}
	if p.isGlobal() && len(p.segs) == 1 && p.segs[0] == GlobalAgents {
		return nil, newErr(CodeFailedPrecondition, ReasonNotADirectory, nil, "%q is not a directory", p.rel)
	}
	fd, err := f.open(p, fdio.DirPath)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := fstatOn(p.r, fd, &st); err != nil || !fdio.IsType(&st, unix.S_IFDIR) {
		unix.Close(fd)
		return nil, newErr(CodeFailedPrecondition, ReasonNotADirectory, err, "%q is not a directory", p.rel)
	}
	return &Dir{f: f, p: p, fd: fd, dev: st.Dev, ino: st.Ino}, nil
}

// Close releases the held fd.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Path is the directory's workspace-relative path, as OpenDir was given it.
func (d *Dir) Path() string { return d.p.rel }

// Workspace is the directory's workspace.
func (d *Dir) Workspace() Workspace { return d.p.ws }

// ProcPath names the held fd (/proc/self/fd/N): what an inotify watch
// is put on, and what its events name.
func (d *Dir) ProcPath() string { return "/proc/self/fd/" + strconv.Itoa(d.fd) }

// Identity is the held directory's (device, inode).
func (d *Dir) Identity() (dev, ino uint64) { return d.dev, d.ino }

// GlobalRoot reports whether d is the Global workspace's root, in which
// only skills and AGENTS.md are visible.
func (d *Dir) GlobalRoot() bool { return d.p.isGlobal() && d.p.isRoot() }

// Same re-resolves d's path through the confined resolution and reports
// whether it still leads to the held directory (not moved, replaced by a
// symlink swap, or deleted).
func (d *Dir) Same() bool {
	fd, err := d.f.open(d.p, fdio.DirPath)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return fstatOn(d.p.r, fd, &st) == nil && st.Dev == d.dev && st.Ino == d.ino && st.Nlink != 0
}

// Visible reports whether a listing of d would show name: valid, not
// denylisted, not a davfs temp file and, in the Global root, skills or
// AGENTS.md. It stats nothing.
func (d *Dir) Visible(name string) bool {
	return d.f.visibleName(name) && (!d.GlobalRoot() || name == GlobalSkills || name == GlobalAgents)
}

// Ino is the inode of name in d, 0 when it cannot be read.
func (d *Dir) Ino(name string) uint64 {
	var st unix.Stat_t
	if fdio.Fstatat(d.fd, name, &st) != nil {
		return 0
	}
	return st.Ino
}

// Stat is FS.Stat of name in d ("" is d itself), resolved from the
// workspace root: a symlink, FIFO or a name under a moved-away directory
// is an error.
func (d *Dir) Stat(ctx context.Context, name string) (Entry, error) {
	rel := d.p.rel
	if name != "" {
		rel = d.Child(name)
	}
	return d.f.Stat(ctx, d.p.ws, rel, ForMutation)
}

// Child is the workspace path of name in d.
func (d *Dir) Child(name string) string { return childRel(d.p.rel, name) }

// dirChunk: the entries Entries hands over at a time (a directory of
// 200,000 names is read in chunks, never as one slice of Entries).
const dirChunk = 1024

// Entries calls fn with the Entries a listing of d shows (unsorted),
// dirChunk at a time.
func (d *Dir) Entries(ctx context.Context, fn func([]Entry)) error {
	if d.GlobalRoot() {
		es, err := d.f.ReadDir(ctx, d.p.ws, d.p.rel, ForMutation)
		if err != nil {
			return err
		}
		fn(es)
		return nil
	}
	fd, _, items, err := d.f.listDir(ctx, d.p)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for len(items) > 0 {
		n := min(len(items), dirChunk)
		es, err := d.f.entriesOf(ctx, fd, d.p, items[:n])
		if err != nil {
			return err
		}
		fn(es)
		items = items[n:]
	}
	return nil
}

// HandOut records e's revision, when e is a directory, as shown to a
// client at readAt (a time no later than the read that produced it): a
// recursive delete carrying it may remove what was there by then.
func (f *FS) HandOut(e Entry, readAt time.Time) {
	if e.Type == TypeDirectory && e.Revision != "" {
		f.seen.noteAt(e.Revision, readAt.UnixNano())
	}
}

// Alive is nil while f is open, the Unavailable error once it is closed.
func (f *FS) Alive() error { return f.alive() }

// PathError maps a system call error on the workspace path rel to a
// davfs *Error (never with a host path in its message).
func PathError(err error, rel string) error { return fsErr(err, rel) }
