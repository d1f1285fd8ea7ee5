package davfs

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mount checks. openat2's RESOLVE_NO_XDEV refuses to cross any mount,
// including a bind mount from the same file system (same st_dev). Where
// davfs stats or opens a single name itself (listings, the fallback walk,
// recursive deletes) it compares the mount ID from statx (STATX_MNT_ID,
// Linux 5.8+) with the root's, and the device number always; on kernels
// without a mount ID only the device is compared (a same-file-system bind
// mount is then not detected: an operator-made mount, never an agent's).

// contains reports whether a file with stat st on mount mnt (0: unknown)
// lies on r's mount.
func (r root) contains(st *unix.Stat_t, mnt uint64) bool {
	return st.Dev == r.dev && (mnt == 0 || r.mnt == 0 || mnt == r.mnt)
}

// statxInto stats name in dirfd (flags: AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH)
// into st, the same fields as fstatat would fill, and returns the mount ID
// (0 when the kernel does not report one).
func statxInto(dirfd int, name string, flags int, st *unix.Stat_t) (uint64, error) {
	var sx unix.Statx_t
	var err error
	for {
		err = statx(dirfd, name, flags|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &sx)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.ENOSYS {
		return 0, unix.Fstatat(dirfd, name, st, flags)
	}
	if err != nil {
		return 0, err
	}
	*st = unix.Stat_t{
		Dev:    unix.Mkdev(sx.Dev_major, sx.Dev_minor),
		Ino:    sx.Ino,
		Mode:   uint32(sx.Mode),
		Uid:    sx.Uid,
		Gid:    sx.Gid,
		Rdev:   unix.Mkdev(sx.Rdev_major, sx.Rdev_minor),
		Size:   int64(sx.Size),
		Blocks: int64(sx.Blocks),
		Atim:   unix.Timespec{Sec: sx.Atime.Sec, Nsec: int64(sx.Atime.Nsec)},
		Mtim:   unix.Timespec{Sec: sx.Mtime.Sec, Nsec: int64(sx.Mtime.Nsec)},
		Ctim:   unix.Timespec{Sec: sx.Ctime.Sec, Nsec: int64(sx.Ctime.Nsec)},
	}
	// Their widths differ between architectures (uint64/int64 on amd64,
	// uint32/int32 on arm64).
	setWidths(&st.Nlink, &st.Blksize, sx.Nlink, sx.Blksize)
	if sx.Mask&unix.STATX_MNT_ID != 0 {
		return sx.Mnt_id, nil
	}
	return 0, nil
}

// statx is unix.Statx with the name made NUL-terminated in a buffer on the
// stack instead of a heap copy: a listing stats every entry, and the copy
// was one of its allocations per entry. Names longer than a directory
// entry's (NAME_MAX) or holding a NUL take unix.Statx itself (which
// refuses the NUL).
func statx(dirfd int, name string, flags, mask int, sx *unix.Statx_t) error {
	var b [unix.NAME_MAX + 1]byte
	if len(name) >= len(b) || strings.IndexByte(name, 0) >= 0 {
		return unix.Statx(dirfd, name, flags, mask, sx)
	}
	copy(b[:], name)
	// unsafe.Pointer rule 4: converted in the argument list of a call to
	// an assembly function (unix.Syscall6), b and sx are kept alive and
	// not moved until the call returns, as in x/sys's own wrappers.
	_, _, e := unix.Syscall6(unix.SYS_STATX, uintptr(dirfd), uintptr(unsafe.Pointer(&b[0])),
		uintptr(flags), uintptr(mask), uintptr(unsafe.Pointer(sx)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// setWidths stores Nlink and Blksize whatever their widths.
func setWidths[N ~uint32 | ~uint64, B ~int32 | ~int64](nlink *N, blksize *B, n, b uint32) {
	*nlink, *blksize = N(n), B(b)
}

// lstatOn stats name in dirfd without following a symlink and fails with
// EXDEV if it is not on r's mount (a mount point or bind mount). An
// automount point is not mounted by the stat (AT_NO_AUTOMOUNT): it is
// refused as what it is.
func lstatOn(r root, dirfd int, name string, st *unix.Stat_t) error {
	mnt, err := statxInto(dirfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, st)
	if err != nil {
		return err
	}
	if !r.contains(st, mnt) {
		return unix.EXDEV
	}
	return nil
}

// fstatOn is lstatOn for an open fd.
func fstatOn(r root, fd int, st *unix.Stat_t) error {
	mnt, err := statxInto(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, st)
	if err != nil {
		return err
	}
	if !r.contains(st, mnt) {
		return unix.EXDEV
	}
	return nil
}
