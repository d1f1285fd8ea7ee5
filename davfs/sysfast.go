package davfs

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Allocation-free variants of the few system calls on davfs's hot paths
// (Stat, listings): golang.org/x/sys/unix copies every path argument into
// a fresh heap slice to NUL-terminate it. Here short paths are
// NUL-terminated in a caller's stack buffer instead; longer ones take the
// ordinary unix wrappers. Behaviour (flags, retries, errors) is exactly the
// wrappers'.
//
// Raw getdents64. On a local file system (root.localFS) listings read
// names with getdents64 as a raw system call (the raw argument), without
// the runtime's entersyscall/exitsyscall. A listing reads names in 16 KiB
// batches of ≈ 90 µs each, under the stream's lock; as an ordinary call,
// one that spans a sysmon tick (20 µs) while the other P is busy has its P
// handed to another thread, and on return waits for a P while the other
// workers wait for the lock. Measured on the real sidecar (PROPFIND Depth 1
// of 10,000 files, A/B, docs/benchmarks/webdav.md, session 4): 5–9 % less
// wall time. Only getdents, and only on a directory davfs opened itself
// beneath a local root without crossing a mount, so the call never reaches
// a network or FUSE file system. A raw call keeps its P (and holds up a
// stop-the-world) while it waits: for a cold directory block, or for the
// directory's lock while a create, rename or (without a journal) a
// directory fsync in it writes — milliseconds at worst on a local disk.
// statx stays an ordinary call: it is short (≈ 1 µs, 1–3 % measured),
// and a stat of a listed name can cross into a mount point's file system
// before davfs refuses it.

// cpathMax is the longest path (without its NUL) the stack buffers hold.
const cpathMax = 511

// cpath is a NUL-terminated path in a stack buffer.
type cpath struct {
	n   int
	buf [cpathMax + 1]byte
}

// set stores a, "/" when both are non-empty, and b. It reports false
// when the result does not fit in the buffer.
func (c *cpath) set(a, b string) bool {
	c.n = 0
	return c.add(a) && c.add(b)
}

// add appends "/" (unless c is empty) and s; an empty s adds nothing. It
// reports false when the result does not fit in the buffer.
func (c *cpath) add(s string) bool {
	if s == "" {
		c.buf[c.n] = 0
		return true
	}
	n := c.n + len(s)
	if c.n > 0 {
		n++
	}
	if n > cpathMax {
		return false
	}
	i := c.n
	if i > 0 {
		c.buf[i] = '/'
		i++
	}
	i += copy(c.buf[i:], s)
	c.buf[i] = 0
	c.n = i
	return true
}

func (c *cpath) ptr() *byte { return &c.buf[0] }

// openat2C is openat2Retry for a path already in c.
func openat2C(dirfd int, c *cpath, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | oCommon), Resolve: resolveFlags}
	for i := 0; ; i++ {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(c.ptr())),
			uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
		if e == 0 {
			return int(r), nil
		}
		if (e == unix.EAGAIN || e == unix.EINTR) && i < 16 {
			continue
		}
		return -1, e
	}
}

// statxC is the statx system call on a path in c.
func statxC(dirfd int, c *cpath, flags, mask int, sx *unix.Statx_t) error {
	_, _, e := unix.Syscall6(unix.SYS_STATX, uintptr(dirfd), uintptr(unsafe.Pointer(c.ptr())),
		uintptr(flags), uintptr(mask), uintptr(unsafe.Pointer(sx)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// getdents is unix.Getdents (getdents64), a raw system call when raw is
// set: fd is a directory davfs opened beneath a local root (see above).
func getdents(fd int, buf []byte, raw bool) (int, error) {
	if !raw || len(buf) == 0 {
		return unix.Getdents(fd, buf)
	}
	n, _, e := unix.RawSyscall(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// closePath closes an O_PATH fd. Closing one never blocks (O_PATH files
// have no flush operation and hold no locks), so it is a raw system call,
// without the scheduler hand-off of unix.Close.
func closePath(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}
