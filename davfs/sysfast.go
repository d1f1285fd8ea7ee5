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
// Raw calls. On a local file system (root.localFS) the statx and
// getdents64 calls of read paths (listings, Stat, a GET's open checks) are
// made as raw system calls (the raw argument), without the runtime's
// entersyscall/exitsyscall. A listing makes one statx per entry and reads
// names in 16 KiB getdents batches of ≈ 90 µs each; as ordinary calls,
// every one that spans a sysmon tick (20 µs) while the other Ps are busy
// has its P handed to another thread and back, and keeps sysmon at its
// fastest tick. Measured on the real sidecar (PROPFIND Depth 1 of 10,000
// files, docs/benchmarks/webdav.md, session 4): server CPU per PROPFIND
// 38.5 / 39.0 ms → 33.0 / 35.0 ms. The cost is that the P stays with the
// calling goroutine for the call's duration: microseconds on a warm cache,
// one disk read on a cold one, and a lookup that misses the dentry cache
// waits for the directory's lock, which a concurrent create or rename (or,
// without a journal, a directory fsync) holds across device writes;
// the scheduler still preempts the goroutine between calls. Mutation paths
// (bounded by fsync anyway) and network and FUSE file systems, where a
// call can wait on a server for seconds, keep ordinary calls.

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

// statxC is the statx system call on a path in c (raw: see above).
func statxC(dirfd int, c *cpath, flags, mask int, sx *unix.Statx_t, raw bool) error {
	call := unix.Syscall6
	if raw {
		call = unix.RawSyscall6
	}
	_, _, e := call(unix.SYS_STATX, uintptr(dirfd), uintptr(unsafe.Pointer(c.ptr())),
		uintptr(flags), uintptr(mask), uintptr(unsafe.Pointer(sx)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// getdents is unix.Getdents (getdents64), a raw system call when raw is
// set (see above).
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
