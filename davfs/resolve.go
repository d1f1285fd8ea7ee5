package davfs

import (
	"errors"
	"strings"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// Resolution never follows a symlink. With openat2 the kernel walks the
// whole path beneath the root fd with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV; without it (old kernel, seccomp, or
// Config.DisableOpenat2) walkBeneath opens one segment at a time with
// O_NOFOLLOW and checks the device of every directory. Either way a symlink
// anywhere on the path fails with ELOOP, a mount crossing with EXDEV.

const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// oAny opens anything, to fstat; the other flags are fdio's (every open
// adds fdio.Common).
const oAny = unix.O_PATH

// probeOpenat2 reports whether openat2 works here (ENOSYS on old kernels,
// EPERM under some seccomp profiles).
func probeOpenat2(dirfd int) bool {
	fd, err := unix.Openat2(dirfd, ".", &unix.OpenHow{Flags: fdio.DirPath | fdio.Common, Resolve: resolveFlags})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// openBeneath opens segs (already validated) beneath r without following
// any symlink, including the last segment. flags are oDirPath, oDirRead,
// oFile or oAny. An O_PATH result that is a symlink is refused with ELOOP.
func (f *FS) openBeneath(r root, segs []string, flags int) (int, error) {
	var fd int
	var err error
	switch {
	case len(segs) == 0:
		fd, err = unix.Openat(r.fd, ".", flags|fdio.Common, 0)
	case f.useOpenat2:
		fd, err = openat2Retry(r.fd, strings.Join(segs, "/"), flags)
	default:
		fd, err = walkBeneath(r, segs, flags)
	}
	if err == unix.ENOTDIR && len(segs) > 0 {
		// O_DIRECTORY|O_NOFOLLOW on a trailing symlink says ENOTDIR: tell
		// a symlink apart from a plain file.
		pfd, perr := f.openBeneath(r, segs[:len(segs)-1], fdio.DirPath)
		if perr == nil {
			err = classifyAt(pfd, segs[len(segs)-1], err)
			unix.Close(pfd)
		} else if perr == unix.ELOOP || perr == unix.EXDEV {
			err = perr
		}
	}
	if err != nil {
		return -1, err
	}
	if flags&unix.O_PATH != 0 && flags&unix.O_DIRECTORY == 0 {
		// With O_DIRECTORY a trailing symlink fails with ENOTDIR (checked
		// on this kernel family); without it O_PATH|O_NOFOLLOW returns an
		// fd for the link itself, refused here.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return -1, unix.ELOOP
		}
	}
	return fd, nil
}

func openat2Retry(dirfd int, path string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | fdio.Common), Resolve: resolveFlags}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, path, &how)
		// EAGAIN: a concurrent rename raced the kernel's RESOLVE_BENEATH
		// check; retrying is what the man page asks for.
		if (err == unix.EAGAIN || err == unix.EINTR) && i < 16 {
			continue
		}
		return fd, err
	}
}

// walkBeneath is the fallback: one openat(O_NOFOLLOW) per segment, each
// intermediate one a directory on the root's device.
func walkBeneath(r root, segs []string, flags int) (int, error) {
	cur := r.fd
	closeCur := func() {
		if cur != r.fd {
			unix.Close(cur)
		}
	}
	for i, s := range segs {
		fl := fdio.DirPath
		if i == len(segs)-1 {
			fl = flags
		}
		next, err := openOnRoot(r, cur, s, fl) // EXDEV for a mount point
		if err == unix.ENOTDIR || err == unix.ELOOP {
			err = classifyAt(cur, s, err)
		}
		closeCur()
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// classifyAt turns an ENOTDIR/ELOOP from opening name in dirfd into ELOOP
// when name is a symlink, so both walks report symlinks alike.
func classifyAt(dirfd int, name string, err error) error {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.ELOOP
	}
	return err
}

// wsPath is a validated path inside a workspace.
type wsPath struct {
	ws   Workspace
	rel  string   // the request path, for messages
	segs []string // segments below the workspace root
	r    root     // namespace root
	base []string // segments from r to the workspace root: [project] or none
}

// full returns the segments from the namespace root to segs.
func (w wsPath) full(segs []string) []string {
	if len(w.base) == 0 {
		return segs
	}
	out := make([]string, 0, len(w.base)+len(segs))
	return append(append(out, w.base...), segs...)
}

func (w wsPath) isGlobal() bool { return w.ws.Scope == ScopeGlobal }

// isRoot reports whether w is the workspace root.
func (w wsPath) isRoot() bool { return len(w.segs) == 0 }

// name is the last segment ("" for the root).
func (w wsPath) name() string {
	if len(w.segs) == 0 {
		if len(w.base) > 0 {
			return w.base[len(w.base)-1]
		}
		return ""
	}
	return w.segs[len(w.segs)-1]
}

// parent returns the wsPath of w's parent directory (w must not be the root).
func (w wsPath) parent() wsPath {
	p := w
	p.segs = w.segs[:len(w.segs)-1]
	p.rel = strings.Join(p.segs, "/")
	return p
}

// fullRel is the path from the namespace root to w ("/"-joined full()).
// One allocation: it is on every read's path.
func (w wsPath) fullRel() string {
	parts, n := [2][]string{w.base, w.segs}, 0
	for _, part := range parts {
		for _, s := range part {
			n += len(s) + 1
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, part := range parts {
		for _, s := range part {
			if b.Len() > 0 {
				b.WriteByte('/')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// resolve validates a workspace reference and a path in it.
func (f *FS) resolve(ws Workspace, p string) (wsPath, error) {
	if err := f.alive(); err != nil {
		return wsPath{}, err
	}
	w := wsPath{ws: ws, rel: p}
	switch ws.Scope {
	case ScopeProject:
		if err := f.checkProjectRef(ws.Project); err != nil {
			return wsPath{}, err
		}
		w.r, w.base = f.projects, []string{ws.Project}
	case ScopeGlobal:
		if ws.Project != "" {
			return wsPath{}, newErr(CodeInvalidArgument, ReasonInvalidWorkspace, nil, "a GLOBAL workspace takes no project_name")
		}
		w.r = f.codex
	default:
		return wsPath{}, newErr(CodeInvalidArgument, ReasonInvalidWorkspace, nil, "workspace scope must be PROJECT or GLOBAL")
	}
	segs, err := f.splitPath(p)
	if err != nil {
		return wsPath{}, err
	}
	if ws.Scope == ScopeGlobal {
		if err := checkGlobal(p, segs); err != nil {
			return wsPath{}, err
		}
	}
	w.segs = segs
	return w, nil
}

// open opens w (or, for the Global root, CODEX_HOME itself: callers treat
// the Global root as virtual and never list it through this fd).
func (f *FS) open(w wsPath, flags int) (int, error) {
	fd, err := f.openBeneath(w.r, w.full(w.segs), flags)
	if err != nil {
		return -1, f.resolveErr(w, w.rel, err)
	}
	return fd, nil
}

// openParent opens w's parent directory (O_PATH) for *at calls on w.name().
func (f *FS) openParent(w wsPath, flags int) (int, error) {
	return f.open(w.parent(), flags)
}

// resolveErr maps a resolution error for the path rel of w, telling a
// missing project from a missing path.
func (f *FS) resolveErr(w wsPath, rel string, err error) error {
	switch fdio.Errno(err) {
	case unix.ENOENT, unix.ENOTDIR:
		return f.rootErr(w, fsErr(err, rel))
	case unix.ELOOP, unix.EXDEV:
		return f.rootErr(w, newErr(CodePermissionDenied, ReasonSymlink, err, "%q is or crosses a symbolic link", rel))
	}
	return fsErr(err, rel)
}

// wsErr returns the workspace root's own problem (a PROJECT workspace whose
// project is missing, a symlink or a file), nil otherwise. Operations that
// refuse the root for being the root report this first.
func (f *FS) wsErr(w wsPath) error {
	if w.ws.Scope == ScopeProject {
		return f.projectErr(w.ws.Project)
	}
	return nil
}

// rootErr is err unless the workspace root has a problem of its own
// (wsErr), which is reported instead.
func (f *FS) rootErr(w wsPath, err error) error {
	if werr := f.wsErr(w); werr != nil {
		return werr
	}
	return err
}

// projectErr returns the error for a project that is not a real directory
// under the projects root, nil if it is one.
func (f *FS) projectErr(name string) error {
	var st unix.Stat_t
	mnt, err := statxInto(f.projects.fd, name, unix.AT_SYMLINK_NOFOLLOW, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return newErr(CodeNotFound, ReasonProjectNotFound, err, "project %q not found", name)
	case err != nil:
		return fsErr(err, name)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return newErr(CodePermissionDenied, ReasonSymlink, nil, "project %q is a symbolic link", name)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return newErr(CodeNotFound, ReasonProjectNotFound, nil, "project %q not found (not a directory)", name)
	case !f.projects.contains(&st, mnt):
		return newErr(CodePermissionDenied, ReasonSymlink, nil, "project %q is a mount point", name)
	}
	return nil
}

// openName opens the single name in dirfd (a directory inside r) without
// following a symlink or crossing a mount: openat2 with the resolve flags,
// or openat(O_NOFOLLOW) and a mount check of the result.
func (f *FS) openName(r root, dirfd int, name string, flags int) (int, error) {
	if f.useOpenat2 {
		return openat2Retry(dirfd, name, flags)
	}
	return openOnRoot(r, dirfd, name, flags)
}

// openOnRoot opens the single name in dirfd with openat(O_NOFOLLOW) and
// refuses (EXDEV) a result on another mount than r.
func openOnRoot(r root, dirfd int, name string, flags int) (int, error) {
	fd, err := unix.Openat(dirfd, name, flags|fdio.Common, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := fstatOn(r, fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
