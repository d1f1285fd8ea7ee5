package davfs

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirent is one name from getdents64 with its d_type (DT_UNKNOWN when the
// file system does not say).
type dirent struct {
	name string
	typ  uint8
}

var direntBufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// readDirents reads every name of the directory open as fd (O_RDONLY, at
// offset 0), without "." and "..". Names are raw bytes from the disk: the
// caller validates them like request names.
func readDirents(fd int) ([]dirent, error) {
	bp := direntBufPool.Get().(*[]byte)
	defer direntBufPool.Put(bp)
	buf := *bp
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		out = parseDirents(buf[:n], out)
	}
}

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name[].
const direntNameOff = int(unsafe.Offsetof(unix.Dirent{}.Name))

// parseDirents appends the records of the getdents64 buffer b to out. The
// names of one buffer share one allocation (arena, never written again
// once a name is cut from it) instead of one allocation per name.
func parseDirents(b []byte, out []dirent) []dirent {
	arena := make([]byte, 0, len(b))
	for len(b) >= direntNameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < direntNameOff || reclen > len(b) {
			break
		}
		typ := b[18]
		nameb := b[direntNameOff:reclen]
		for i, c := range nameb {
			if c == 0 {
				nameb = nameb[:i]
				break
			}
		}
		b = b[reclen:]
		if len(nameb) == 0 || (len(nameb) == 1 && nameb[0] == '.') || (len(nameb) == 2 && nameb[0] == '.' && nameb[1] == '.') {
			continue
		}
		start := len(arena)
		arena = append(arena, nameb...)
		out = append(out, dirent{name: unsafe.String(&arena[start], len(nameb)), typ: typ})
	}
	return out
}
