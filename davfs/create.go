package davfs

import (
	"context"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

func errProtected(format string, args ...any) *Error {
	return newErr(CodePermissionDenied, ReasonProtected, nil, format, args...)
}

// CreateEntry creates an empty file (0644) or directory (0755) named name in
// the existing directory parent. name is one segment, validated like a path
// segment (InvalidArgument/INVALID_NAME, PermissionDenied/DENYLISTED). An
// existing name of any kind is AlreadyExists and is left untouched
// (O_CREAT|O_EXCL, mkdirat). The mode is set with fchmod so the umask does
// not change it. At the Global root only the file AGENTS.md can be created.
// A directory revision it returns counts as shown to a client unless use
// says ForMutation (seen.go).
func (f *FS) CreateEntry(ctx context.Context, ws Workspace, parent, name string, typ EntryType, use ...Use) (Entry, error) {
	if typ != TypeFile && typ != TypeDirectory {
		return Entry{}, newErr(CodeInvalidArgument, ReasonInvalidArgument, nil, "type must be FILE or DIRECTORY")
	}
	pw, err := f.resolve(ws, parent)
	if err != nil {
		return Entry{}, err
	}
	if err := f.checkName(name); err != nil {
		return Entry{}, f.rootErr(pw, err)
	}
	w, err := f.resolve(ws, childRel(parent, name))
	if err != nil {
		return Entry{}, err
	}
	if w.isGlobal() && len(w.segs) == 1 {
		switch {
		case name == GlobalSkills:
			return Entry{}, newErr(CodeAlreadyExists, ReasonAlreadyExists, nil, "%q already exists", name)
		case typ != TypeFile:
			return Entry{}, errProtected("%q at the Global root can only be a file", name)
		}
	}
	pfd, e, err := f.lockedCreate(w, name, typ)
	if pfd < 0 {
		return Entry{}, err
	}
	defer unix.Close(pfd)
	// The directory fsync runs after the unlock (other mutations need not
	// queue behind it); success is only returned once it is done.
	if err := fdio.FsyncDir(pfd); err != nil {
		return Entry{}, fsErr(err, w.rel)
	}
	f.handOut(use, e)
	return e, err
}

// lockedCreate is CreateEntry's part under the mutation lock: the create
// and the new entry's stat. Once the entry is created it returns the
// parent directory (O_RDONLY, for the fsync; the caller closes it) with
// the stat's result, else -1 and the error.
func (f *FS) lockedCreate(w wsPath, name string, typ EntryType) (int, Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pfd, err := f.openParentDir(w)
	if err != nil {
		return -1, Entry{}, err
	}
	if err := createIn(pfd, w, name, typ); err != nil {
		unix.Close(pfd)
		return -1, Entry{}, err
	}
	e, err := f.statEntry(pfd, w, name)
	return pfd, e, err
}

func createIn(pfd int, w wsPath, name string, typ EntryType) error {
	flags, mode := unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint32(0o644)
	if typ != TypeFile {
		if err := unix.Mkdirat(pfd, name, 0o755); err != nil {
			return fsErr(err, w.rel)
		}
		flags, mode = fdio.DirRead, 0o755
	}
	fd, err := unix.Openat(pfd, name, flags|fdio.Common, mode)
	if err != nil {
		return fsErr(err, w.rel)
	}
	err = unix.Fchmod(fd, mode)
	unix.Close(fd)
	return fsErr(err, w.rel)
}
