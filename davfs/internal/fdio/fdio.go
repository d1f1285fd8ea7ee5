// Package fdio holds the file-descriptor system calls that the confined
// core (davfs) and the packages beside it (davfs/checkpoint) share: open
// flags, directory reads, stat helpers, temp files, fsync and errno
// extraction. It knows nothing of workspaces, paths or policy: every call
// acts on an fd its caller already holds, and confinement (which fd may be
// opened, what a name may be) stays with davfs.
package fdio

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Open flags of the confined walk: every open adds Common.
const (
	DirPath = unix.O_PATH | unix.O_DIRECTORY   // a directory to act in (*at calls)
	DirRead = unix.O_RDONLY | unix.O_DIRECTORY // a directory to list or fsync
	File    = unix.O_RDONLY | unix.O_NONBLOCK  // a file to read; O_NONBLOCK: never hang on a FIFO
	Common  = unix.O_NOFOLLOW | unix.O_CLOEXEC
)

// Errno extracts a unix.Errno from err, 0 if there is none.
func Errno(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// Fstatat stats name in dirfd without following a symlink, retrying EINTR.
func Fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// IsType reports whether st is of the file type t (unix.S_IFREG, ...).
func IsType(st *unix.Stat_t, t uint32) bool { return st.Mode&unix.S_IFMT == t }

// FsyncDir makes a rename or unlink in dirfd durable. dirfd is O_RDONLY.
func FsyncDir(dirfd int) error {
	err := unix.Fsync(dirfd)
	if err == unix.EINVAL || err == unix.EROFS {
		return nil // file systems without directory fsync
	}
	return err
}

// ReadAllAt reads exactly size bytes at offset 0 (plus one probe byte to
// notice growth) into dst. It reports ok=false if the file is not size
// bytes long any more.
func ReadAllAt(fd int, size int64, dst []byte) ([]byte, bool, error) {
	need := int(size) + 1
	if cap(dst) < need {
		dst = make([]byte, need)
	}
	dst = dst[:need]
	n := 0
	for n < need {
		m, err := unix.Pread(fd, dst[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		n += m
		if m == 0 || n < need {
			// A regular file reads short only at its end; anything else
			// (a spurious short read) leaves n != size, which the caller
			// treats as "changed" and reads again.
			break
		}
	}
	return dst[:n], int64(n) == size, nil
}
