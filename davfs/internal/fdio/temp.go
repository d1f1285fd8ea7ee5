package fdio

import (
	"math/rand/v2"
	"strconv"

	"golang.org/x/sys/unix"
)

// TempPrefix starts the name of every temp file davfs and its checkpoint
// store write. Names with it are hidden from listings, refused in requests
// and swept when stale.
const TempPrefix = ".davfs-tmp-"

// TempFile is a temp file waiting to be renamed into place.
type TempFile struct {
	FD   int // O_RDWR
	Name string
}

// CreateTemp makes a new, empty temp file (0600) in dirfd.
func CreateTemp(dirfd int) (TempFile, error) {
	for range 16 {
		name := TempPrefix + strconv.FormatUint(rand.Uint64(), 36)
		fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|Common, 0o600)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return TempFile{}, err
		}
		return TempFile{FD: fd, Name: name}, nil
	}
	return TempFile{}, unix.EEXIST
}

// Discard closes and removes an uncommitted temp file.
func (t TempFile) Discard(dirfd int) {
	if t.FD >= 0 {
		unix.Close(t.FD)
	}
	unix.Unlinkat(dirfd, t.Name, 0)
}
