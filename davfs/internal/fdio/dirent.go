package fdio

import (
	"bytes"
	"encoding/binary"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Dirent is one name from getdents64 with its d_type (DT_UNKNOWN when the
// file system does not say).
type Dirent struct {
	Name string
	Type uint8
}

// DirentBufs are 64 KiB getdents64 buffers (*[]byte), for ReadDirents and
// for callers that parse with ParseDirents.
var DirentBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// ReadDirents reads every name of the directory open as fd (O_RDONLY, at
// offset 0), without "." and "..". Names are raw bytes from the disk: the
// caller validates them like request names.
func ReadDirents(fd int) ([]Dirent, error) {
	bp := DirentBufs.Get().(*[]byte)
	defer DirentBufs.Put(bp)
	buf := *bp
	var out []Dirent
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
		out = ParseDirents(buf[:n], out)
	}
}

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name[].
const direntNameOff = int(unsafe.Offsetof(unix.Dirent{}.Name))

// ParseDirents appends the records of the getdents64 buffer b to out.
// Each name is its own string.
func ParseDirents(b []byte, out []Dirent) []Dirent {
	return parseDirents(b, out, "")
}

// ParseDirentsShared is ParseDirents with every name a substring of one
// copy of b: one allocation per buffer instead of one per name, for a
// caller that keeps the names only briefly (each holds the whole copy).
func ParseDirentsShared(b []byte, out []Dirent) []Dirent {
	return parseDirents(b, out, string(b))
}

// parseDirents is ParseDirents, with the names taken from shared (a copy
// of b) when it is not empty.
func parseDirents(b []byte, out []Dirent, shared string) []Dirent {
	at := 0 // b's offset in shared
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
		var name string
		if shared != "" {
			name = shared[at+direntNameOff : at+direntNameOff+len(nameb)]
		} else {
			name = string(nameb)
		}
		b, at = b[reclen:], at+reclen
		if name != "" && name != "." && name != ".." {
			out = append(out, Dirent{Name: name, Type: typ})
		}
	}
	return out
}
