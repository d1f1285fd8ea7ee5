package davfs

import (
	"bytes"
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

// parseDirents appends the records of the getdents64 buffer b to out.
func parseDirents(b []byte, out []dirent) []dirent {
	for len(b) >= direntNameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < direntNameOff || reclen > len(b) {
			break
		}
		typ := b[18]
		nameb := b[direntNameOff:reclen]
		if i := bytes.IndexByte(nameb, 0); i >= 0 {
			nameb = nameb[:i]
		}
		b = b[reclen:]
		if name := string(nameb); name != "" && name != "." && name != ".." {
			out = append(out, dirent{name: name, typ: typ})
		}
	}
	return out
}
