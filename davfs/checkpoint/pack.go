package checkpoint

import (
	"errors"
	"io"
	"os"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// Packs: the new files of up to smallObject bytes of one checkpoint go,
// one after the other, into one file, packs/<id>.pack, and each manifest
// entry names its pack and offset. One file per checkpoint instead of one
// per object: creating a file is the dominant cost of a first checkpoint
// (10,000 creations against tar's one), while a pack is written
// sequentially. Larger files stay loose objects (objects/<h[:2]>/<h>).
// A pack is kept while any manifest names it and removed whole when none
// does (no repacking: a pack's dead entries cost space until then).

// packMax: files up to this size are packed; larger ones (whose creation
// cost is small beside their bytes) are loose objects, so a pack's dead
// entries stay small.
const packMax = 16 << 10

// putBytes stores b as the loose object h unless it exists.
func (s *ckStore) putBytes(h string, b []byte) (int64, error) {
	dfd, err := s.objDir(h, false)
	if err == nil {
		var st unix.Stat_t
		ok := fdio.Fstatat(dfd, h, &st) == nil && fdio.IsType(&st, unix.S_IFREG)
		unix.Close(dfd)
		if ok {
			return 0, nil
		}
	}
	t, err := s.tempWith(b)
	if err != nil {
		return 0, err
	}
	unix.Close(t.FD)
	return s.putTemp(t.Name, h, int64(len(b)))
}

// tempWith writes b into a new temp file in tmp/ (not fsynced). On an
// error the temp file is gone.
func (s *ckStore) tempWith(b []byte) (fdio.TempFile, error) {
	t, err := fdio.CreateTemp(s.tmpfd)
	if err != nil {
		return t, err
	}
	if err := writeAll(t.FD, b); err != nil {
		t.Discard(s.tmpfd)
		return fdio.TempFile{}, err
	}
	return t, nil
}

// writeAll writes all of b to fd.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

type packWriter struct {
	s   *ckStore
	id  string
	t   fdio.TempFile
	off int64
	ok  bool // t was created
}

// add appends b and returns its offset.
func (p *packWriter) add(b []byte) (int64, error) {
	if !p.ok {
		t, err := fdio.CreateTemp(p.s.tmpfd)
		if err != nil {
			return 0, err
		}
		p.t, p.ok = t, true
	}
	off := p.off
	if err := writeAll(p.t.FD, b); err != nil {
		return 0, err
	}
	p.off += int64(len(b))
	return off, nil
}

// commit fsyncs the pack and moves it to packs/<id>.pack, before the
// manifest naming it is written.
func (p *packWriter) commit() error {
	if !p.ok {
		return nil
	}
	if err := unix.Fsync(p.t.FD); err != nil {
		return err
	}
	unix.Close(p.t.FD)
	p.t.FD = -1
	p.ok = false // from here on, nothing is left for discard
	if err := unix.Renameat2(p.s.tmpfd, p.t.Name, p.s.packfd, p.id+".pack", unix.RENAME_NOREPLACE); err != nil {
		unix.Unlinkat(p.s.tmpfd, p.t.Name, 0)
		return err
	}
	// The rename must be durable before a manifest names the pack: after a
	// crash, a durable manifest naming a pack still in tmp/ would lose the
	// pack to the startup sweep.
	if err := packDirSync(p.s.packfd); err != nil {
		unix.Unlinkat(p.s.packfd, p.id+".pack", 0)
		return err
	}
	p.s.total.Add(p.off)
	return nil
}

// packDirSync fsyncs packs/ (packfd is O_PATH: it is opened again
// O_RDONLY to be fsynced). A variable for the tests.
var packDirSync = func(packfd int) error {
	fd, err := unix.Openat(packfd, ".", fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fdio.FsyncDir(fd)
}

// discard removes an uncommitted pack.
func (p *packWriter) discard() {
	if p.ok {
		p.t.Discard(p.s.tmpfd)
		p.ok = false
	}
}

// openObject opens the stored bytes of the file entry e: in its pack, or
// the loose object. Never through a symlink, and only from a single-link
// regular file large enough (a loose object: of exactly e's size).
func (s *ckStore) openObject(e *ckEntry) (io.ReadCloser, error) {
	if e.Pack == "" {
		if !validHash(e.Hash) {
			return nil, errors.New("invalid object name")
		}
		dfd, err := s.objDir(e.Hash, false)
		if err != nil {
			return nil, err
		}
		defer unix.Close(dfd)
		fd, _, err := openSingle(dfd, e.Hash, func(n int64) bool { return n == e.Size }, "object is not a single-link regular file of its size")
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), "checkpoint-object"), nil
	}
	if !checkpointIDRE.MatchString(e.Pack) || e.Off < 0 || e.Size < 0 {
		return nil, errors.New("invalid pack reference")
	}
	fd, _, err := openSingle(s.packfd, e.Pack+".pack", func(n int64) bool { return n >= e.Off+e.Size }, "pack is not a single-link regular file holding the entry")
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "checkpoint-pack")
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, e.Off, e.Size), f}, nil
}
