package checkpoint

import (
	"bytes"
	"fmt"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// Accounting of the store's bytes. Two rules:
//
//   - A stored file counts what it occupies on the store's volume, not its
//     length: a large file streams into its object with its runs of zero
//     blocks left as holes (a sparse object), and every object and pack
//     counts its allocated blocks, at most its size. A 1 GiB sparse file
//     (0 bytes on disk) costs neither 1 GiB of disk nor of maxTotalBytes.
//   - The byte cap also respects the volume: a capture never leaves less
//     than volumeReserve free on the store's volume (the free space the
//     sidecar's user may use, statfs f_bavail), and pruning takes the
//     store down to what keeps that reserve when the volume filled up
//     meanwhile (the agent's files may share it).

// volumeReserveMin and volumeReservePercent: the free space a capture
// leaves on the store's volume is at least max(5 % of the volume,
// 256 MiB), capped at half the volume (so a small test or tmpfs volume
// can still hold checkpoints).
const (
	volumeReservePercent = 5
	volumeReserveMin     = 256 << 20
)

// volumeSpace is the space of the store's volume: bytes available to the
// sidecar's user and the volume's size.
type volumeSpace struct {
	avail, size int64
}

// statfsSpace is the space of the volume of the open file fd.
func statfsSpace(fd int) (volumeSpace, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return volumeSpace{}, err
	}
	unit := st.Frsize
	if unit <= 0 {
		unit = st.Bsize
	}
	return volumeSpace{avail: int64(st.Bavail) * unit, size: int64(st.Blocks) * unit}, nil
}

// reserve is the free space a capture must leave.
func (v volumeSpace) reserve() int64 {
	return min(max(v.size*volumeReservePercent/100, volumeReserveMin), v.size/2)
}

// spare is what may still be written before the reserve is reached
// (negative: the volume is already past it).
func (v volumeSpace) spare() int64 { return v.avail - v.reserve() }

// occupied is what a stored file takes on its volume: its allocated
// blocks, at most its size (a dense file counts its size, as before).
func occupied(st *unix.Stat_t) int64 {
	return min(st.Size, st.Blocks*512)
}

// ckBudget is what one capture may add to the store.
type ckBudget struct {
	bytes   int64
	volume  bool  // bytes is the volume's spare space, not maxTotalBytes
	reserve int64 // the volume's reserve (volume only)
}

// captureBudget is the smaller of maxTotalBytes and the volume's spare
// space (just maxTotalBytes when the volume cannot be asked).
func (s *ckStore) captureBudget() ckBudget {
	b := ckBudget{bytes: s.cfg.MaxTotalBytes}
	if v, err := s.space(); err == nil && v.spare() < b.bytes {
		b = ckBudget{bytes: max(v.spare(), 0), volume: true, reserve: v.reserve()}
	}
	return b
}

// err is the error of a capture over b.
func (b ckBudget) err() *davfs.Error {
	if b.volume {
		return errVolumeFull(b.reserve)
	}
	return errCheckpointLimit("the checkpoint alone is larger than services.checkpoints.maxTotalBytes")
}

// byteLimit is what the store may hold after a capture: maxTotalBytes, or
// less when the volume's free space is under its reserve (volume true).
func (s *ckStore) byteLimit() (limit, reserve int64, volume bool) {
	limit = s.cfg.MaxTotalBytes
	v, err := s.space()
	if err != nil {
		return limit, 0, false
	}
	if room := s.total.Load() + v.spare(); room < limit {
		return max(room, 0), v.reserve(), true
	}
	return limit, 0, false
}

func errVolumeFull(reserve int64) *davfs.Error {
	return newErr(davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit, nil,
		"the checkpoint does not fit: the checkpoint store's volume is nearly full (a checkpoint never leaves less than %s free there); free space on that volume or delete checkpoints",
		mib(reserve))
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// objectOccupied is what the loose object h of size bytes occupies: only
// objects that may be sparse (those streamed, above smallObject) are
// statted.
func (s *ckStore) objectOccupied(h string, size int64) int64 {
	if size <= smallObject || !validHash(h) {
		return size
	}
	dfd, err := s.objDir(h, false)
	if err != nil {
		return size
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if fdio.Fstatat(dfd, h, &st) != nil {
		return size
	}
	return occupied(&st)
}

// sparseBlock: the granularity of holes in a streamed object.
const sparseBlock = 4096

// writeSparse writes b at off in fd, leaving its all-zero blocks as holes
// (the caller sets the final size with ftruncate): each run of blocks
// with data is one pwrite, so a dense file costs what a plain write does.
// It returns the bytes written.
func writeSparse(fd int, b []byte, off int64) (int64, error) {
	var written int64
	for start := 0; start < len(b); {
		if end := min(start+sparseBlock, len(b)); allZero(b[start:end]) {
			start = end
			continue
		}
		end := start
		for end < len(b) && !allZero(b[end:min(end+sparseBlock, len(b))]) {
			end = min(end+sparseBlock, len(b))
		}
		if err := pwriteAll(fd, b[start:end], off+int64(start)); err != nil {
			return written, err
		}
		written += int64(end - start)
		start = end
	}
	return written, nil
}

// pwriteAll writes all of b at off in fd.
func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		m, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, off = b[m:], off+int64(m)
	}
	return nil
}

// allZero reports whether b is all zero bytes: the first is, and every
// byte equals the one before it (one memequal, no zero buffer).
func allZero(b []byte) bool {
	return len(b) == 0 || (b[0] == 0 && bytes.Equal(b[1:], b[:len(b)-1]))
}
