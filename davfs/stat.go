package davfs

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

func modTime(st *unix.Stat_t) time.Time { return time.Unix(0, st.Mtim.Nano()) }

func changeTime(st *unix.Stat_t) time.Time { return time.Unix(0, st.Ctim.Nano()) }

// fileEntry is the Entry of the regular file name (workspace path rel)
// whose stat is st, with the revision and editability of its content c.
func fileEntry(name, rel string, st *unix.Stat_t, c content) Entry {
	return Entry{Name: name, Path: rel, Type: TypeFile, Size: st.Size, ModTime: modTime(st), ChangeTime: changeTime(st),
		Revision: c.revision(st), Reason: c.class, Editable: c.class == EditableOK}
}

// statOnlyEntry is fileEntry for a file whose content is not hashed, why
// says why: its revision is the stat's alone.
func statOnlyEntry(name, rel string, st *unix.Stat_t, why NonEditableReason) Entry {
	return Entry{Name: name, Path: rel, Type: TypeFile, Size: st.Size, ModTime: modTime(st), ChangeTime: changeTime(st),
		Revision: statRevision(st), Reason: why, MultipleLinks: why == NotEditableMultipleLinks}
}

// dirEntry is the Entry of the directory name (workspace path rel) whose
// stat is st.
func dirEntry(name, rel string, st *unix.Stat_t) Entry {
	return Entry{Name: name, Path: rel, Type: TypeDirectory, ModTime: modTime(st), ChangeTime: changeTime(st), Revision: dirRevision(st)}
}

func errNotRegular(rel string) *Error {
	return newErr(CodeFailedPrecondition, ReasonNotRegular, nil, "%q is not a regular file or directory", rel)
}

// statEntry builds the Entry of name in the directory dirfd (w is the
// entry's own path). A symlink is refused (SYMLINK), a FIFO, socket or
// device too (NOT_REGULAR): such names never appear in listings either.
func (f *FS) statEntry(dirfd int, w wsPath, name string) (Entry, error) {
	var st unix.Stat_t
	if err := lstatOn(w.r, dirfd, name, &st); err != nil {
		return Entry{}, fsErr(err, w.rel)
	}
	return f.entryFromStat(dirfd, w, name, &st, 0)
}

// quickEntry builds the Entry of a directory or regular file from its
// stat alone when no read is needed: a directory on r's device, a file
// with several links or over the editable size, or one whose content hash
// is cached. ok is false for anything else (entryFromStat then decides).
func (f *FS) quickEntry(r root, name, rel string, st *unix.Stat_t) (Entry, bool) {
	switch {
	case fdio.IsType(st, unix.S_IFDIR) && st.Dev == r.dev:
		return dirEntry(name, rel, st), true
	case !fdio.IsType(st, unix.S_IFREG):
		return Entry{}, false
	case st.Nlink > 1:
		return statOnlyEntry(name, rel, st, NotEditableMultipleLinks), true
	case st.Size > f.cfg.MaxEditableFileSize:
		return statOnlyEntry(name, rel, st, NotEditableTooLarge), true
	}
	c, hit := f.cache.get(keyOf(st))
	if !hit {
		return Entry{}, false
	}
	return fileEntry(name, rel, st, c), true
}

func (f *FS) entryFromStat(dirfd int, w wsPath, name string, st *unix.Stat_t, attempt int) (Entry, error) {
	if e, ok := f.quickEntry(w.r, name, w.rel, st); ok {
		return e, nil
	}
	// quickEntry declined: a directory on another device, something that
	// is neither a directory nor a regular file, or a regular file with one
	// link, within the editable size, whose content hash is not cached yet.
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return Entry{}, newErr(CodePermissionDenied, ReasonSymlink, nil, "%q is a mount point", w.rel)
	case unix.S_IFLNK:
		return Entry{}, errSymlink(w.rel)
	case unix.S_IFREG:
	default:
		return Entry{}, errNotRegular(w.rel)
	}
	c, ok := f.cache.get(keyOf(st))
	if !ok {
		fd, err := f.openName(w.r, dirfd, name, fdio.File)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
				return Entry{}, fsErr(classifyAt(dirfd, name, err), w.rel)
			}
			return statOnlyEntry(name, w.rel, st, NotEditableUnknown), nil // unreadable (permissions)
		}
		var now unix.Stat_t
		err = fstatOn(w.r, fd, &now)
		if err == nil && (now.Ino != st.Ino || now.Dev != st.Dev || !fdio.IsType(&now, unix.S_IFREG) || now.Nlink != 1) {
			// Replaced between fstatat and open: start again from the new state.
			unix.Close(fd)
			if attempt >= 3 {
				return Entry{}, newErr(CodeAborted, ReasonRevisionMismatch, nil, "%q keeps changing", w.rel)
			}
			return f.entryFromStat(dirfd, w, name, &now, attempt+1)
		}
		if err == nil {
			*st = now
			c, _, err = f.fileContent(fd, st, false)
		}
		unix.Close(fd)
		if err == unix.EXDEV {
			return Entry{}, fsErr(err, w.rel) // a file bind mount
		}
		if err != nil {
			return statOnlyEntry(name, w.rel, st, NotEditableUnknown), nil
		}
	}
	return fileEntry(name, w.rel, st, c), nil
}

// skip reports whether a listing hides an entry that failed with err
// (it vanished, is a symlink, a special file or a mount point).
func skip(err error) bool {
	switch ReasonOf(err) {
	case ReasonNotFound, ReasonSymlink, ReasonNotRegular:
		return true
	}
	return false
}

// Stat returns the Entry of one path (the workspace root for ""). The
// Global root is virtual: a directory whose revision covers its two
// children. A symlink is refused (PermissionDenied/SYMLINK); FIFOs,
// sockets and devices are FailedPrecondition/NOT_REGULAR.
// A directory revision it returns counts as shown to a client unless use
// says ForMutation (seen.go).
func (f *FS) Stat(ctx context.Context, ws Workspace, path string, use ...Use) (Entry, error) {
	if e, ok := f.statQuick(ws, path); ok {
		f.handOut(use, e)
		return e, nil
	}
	w, err := f.resolve(ws, path)
	if err != nil {
		return Entry{}, err
	}
	e, err := f.stat(w)
	if err == nil {
		f.handOut(use, e)
	}
	return e, err
}

// statQuick is Stat of an entry below a PROJECT workspace root whose
// Entry needs no file read (see quickEntry), with the same validation as
// resolve. The entry itself is opened with O_PATH|O_NOFOLLOW by openat2
// with the resolve flags (no symlink followed anywhere, a trailing one
// yields an fd of the link, which quickEntry refuses; no mount crossed,
// the last segment included) and fstat'ed: measured slightly cheaper than
// opening the parent and statx'ing the name. ok is false for anything
// else, errors included: Stat then takes the full path, which also
// reports errors exactly.
func (f *FS) statQuick(ws Workspace, p string) (Entry, bool) {
	if !f.useOpenat2 || ws.Scope != ScopeProject || p == "" || f.alive() != nil || f.checkProjectRef(ws.Project) != nil {
		return Entry{}, false
	}
	var buf [8]string
	segs, err := f.splitPathBuf(p, buf[:])
	if err != nil || len(segs) == 0 {
		return Entry{}, false
	}
	// p is validated: its segments joined by "/" are p itself.
	fd, err := openat2Retry(f.projects.fd, ws.Project+"/"+p, oAny)
	if err != nil {
		return Entry{}, false
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if err != nil || !f.projects.contains(&st, 0) {
		return Entry{}, false
	}
	return f.quickEntry(f.projects, segs[len(segs)-1], p, &st)
}

func (f *FS) stat(w wsPath) (Entry, error) {
	if w.isGlobal() && w.isRoot() {
		e, _, err := f.globalRoot()
		return e, err
	}
	if w.isRoot() {
		fd, err := f.open(w, fdio.DirPath)
		if err != nil {
			return Entry{}, err
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return Entry{}, fsErr(err, w.rel)
		}
		if !fdio.IsType(&st, unix.S_IFDIR) {
			return Entry{}, newErr(CodeNotFound, ReasonProjectNotFound, nil, "project %q not found", w.ws.Project)
		}
		return dirEntry(w.name(), "", &st), nil
	}
	var e Entry
	var err error
	if len(w.base) == 0 && len(w.segs) == 1 {
		// An entry directly in a held root (Global): statx on the root fd
		// itself, no parent to open. A PROJECT workspace's root is the
		// project directory, resolved from the projects root on every call.
		e, err = f.statEntry(w.r.fd, w, w.name())
	} else {
		pfd, perr := f.openParent(w, fdio.DirPath)
		if perr != nil {
			return Entry{}, perr
		}
		e, err = f.statEntry(pfd, w, w.name())
		unix.Close(pfd)
	}
	if err == nil && w.isGlobal() && len(w.segs) == 1 && (e.Type == TypeDirectory) != (w.segs[0] == GlobalSkills) {
		// Global's two names only count with their proper types.
		return Entry{}, newErr(CodeFailedPrecondition, ReasonNotRegular, nil, "%q has an unexpected type", w.rel)
	}
	return e, err
}

// globalRoot returns the virtual Global root and its visible children.
func (f *FS) globalRoot() (Entry, []Entry, error) {
	var kids []Entry
	var st unix.Stat_t
	root := Entry{Type: TypeDirectory}
	h := xxhash.New()
	var b [8]byte
	if err := lstatOn(f.codex, f.codex.fd, GlobalSkills, &st); err == nil && fdio.IsType(&st, unix.S_IFDIR) {
		kids = append(kids, dirEntry(GlobalSkills, GlobalSkills, &st))
		binary.LittleEndian.PutUint64(b[:], statSum(&st))
		h.Write(b[:])
		root.ModTime = modTime(&st)
		root.ChangeTime = changeTime(&st)
	}
	h.Write([]byte{0})
	w := wsPath{ws: Workspace{Scope: ScopeGlobal}, rel: GlobalAgents, segs: []string{GlobalAgents}, r: f.codex}
	e, err := f.statEntry(f.codex.fd, w, GlobalAgents)
	switch {
	case err == nil && e.Type == TypeFile:
		kids = append(kids, e)
		h.WriteString(e.Revision)
		if e.ModTime.After(root.ModTime) {
			root.ModTime = e.ModTime
		}
	case err != nil && !skip(err):
		return Entry{}, nil, err
	}
	root.Revision = string(hex64([]byte{'g'}, h.Sum64()))
	return root, kids, nil
}
