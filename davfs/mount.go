package davfs

import (
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
// (0 when the kernel does not report one). raw: a raw system call, for a
// dirfd on a local file system (sysfast.go).
func statxInto(dirfd int, name string, flags int, st *unix.Stat_t, raw bool) (uint64, error) {
	var sx unix.Statx_t
	var err error
	var c cpath
	short := c.set(name, "")
	for {
		if short {
			err = statxC(dirfd, &c, flags|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &sx, raw)
		} else {
			err = unix.Statx(dirfd, name, flags|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &sx)
		}
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
		Dev:     unix.Mkdev(sx.Dev_major, sx.Dev_minor),
		Ino:     sx.Ino,
		Nlink:   uint64(sx.Nlink),
		Mode:    uint32(sx.Mode),
		Uid:     sx.Uid,
		Gid:     sx.Gid,
		Rdev:    unix.Mkdev(sx.Rdev_major, sx.Rdev_minor),
		Size:    int64(sx.Size),
		Blksize: int64(sx.Blksize),
		Blocks:  int64(sx.Blocks),
		Atim:    unix.Timespec{Sec: sx.Atime.Sec, Nsec: int64(sx.Atime.Nsec)},
		Mtim:    unix.Timespec{Sec: sx.Mtime.Sec, Nsec: int64(sx.Mtime.Nsec)},
		Ctim:    unix.Timespec{Sec: sx.Ctime.Sec, Nsec: int64(sx.Ctime.Nsec)},
	}
	if sx.Mask&unix.STATX_MNT_ID != 0 {
		return sx.Mnt_id, nil
	}
	return 0, nil
}

// lstatOn stats name in dirfd without following a symlink and fails with
// EXDEV if it is not on r's mount (a mount point or bind mount).
func lstatOn(r root, dirfd int, name string, st *unix.Stat_t) error {
	return lstatAt(r, dirfd, name, st, false)
}

// lstatRead is lstatOn for read paths (listings, Stat): a raw system call
// on a local file system (sysfast.go).
func lstatRead(r root, dirfd int, name string, st *unix.Stat_t) error {
	return lstatAt(r, dirfd, name, st, r.localFS)
}

func lstatAt(r root, dirfd int, name string, st *unix.Stat_t, raw bool) error {
	mnt, err := statxInto(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, st, raw)
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
	return fstatAt(r, fd, st, false)
}

// fstatRead is fstatOn for read paths (lstatRead).
func fstatRead(r root, fd int, st *unix.Stat_t) error {
	return fstatAt(r, fd, st, r.localFS)
}

func fstatAt(r root, fd int, st *unix.Stat_t, raw bool) error {
	mnt, err := statxInto(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, st, raw)
	if err != nil {
		return err
	}
	if !r.contains(st, mnt) {
		return unix.EXDEV
	}
	return nil
}
