package davfs

import (
	"sync"

	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// Group directory fsync. A write commits by renaming its fsynced temp file
// over the target, then fsyncs the directory so the rename is durable
// before success is returned. Concurrent writes into one directory need not
// each pay for that fsync: one fsync of the directory makes durable every
// rename that finished before the fsync started. syncDir hands out tickets
// in call order (each caller has already renamed); a caller finding no
// fsync running starts one that covers every ticket handed out so far, and
// callers arriving meanwhile wait for the next one, which covers them all.
// On a file system without a journal (where each fsync is synchronous I/O)
// sixteen concurrent writers into one directory then pay for about two
// directory fsyncs instead of sixteen.

// dirSyncs holds the group state of the directories being synced now.
type dirSyncs struct {
	mu sync.Mutex
	m  map[fdIdentity]*dirSync
}

type dirSync struct {
	cond     sync.Cond // L is dirSyncs.mu
	users    int       // callers holding this state (deleted at zero)
	running  bool
	issued   uint64 // last ticket handed out
	done     uint64 // every ticket up to done is durable, unless failed
	failures uint64 // failed fsyncs so far
}

// syncDir makes the renames and unlinks already done in the directory open
// as fd (identity id) durable, sharing the fsync with concurrent callers
// for the same directory. If a shared fsync failed, the caller fsyncs fd
// itself and returns that result, so an error is never hidden.
func (f *FS) syncDir(fd int, id fdIdentity) error {
	s := &f.dirSyncs
	s.mu.Lock()
	if s.m == nil {
		s.m = map[fdIdentity]*dirSync{}
	}
	d := s.m[id]
	if d == nil {
		d = &dirSync{}
		d.cond.L = &s.mu
		s.m[id] = d
	}
	d.users++
	d.issued++
	ticket, failures := d.issued, d.failures
	ran := false
	var err error
	for d.done < ticket {
		if d.running {
			d.cond.Wait()
			continue
		}
		d.running, ran = true, true
		upTo := d.issued
		s.mu.Unlock()
		err = f.fsyncDirFD(fd)
		s.mu.Lock()
		d.running = false
		d.done = upTo
		if err != nil {
			d.failures++
		}
		d.cond.Broadcast()
	}
	failed := d.failures != failures
	if d.users--; d.users == 0 {
		delete(s.m, id)
	}
	s.mu.Unlock()
	switch {
	case ran:
		// This caller's own fsync covered its ticket: its result is the
		// answer (a retry after a failure could wrongly succeed).
		return err
	case failed:
		return f.fsyncDirFD(fd)
	}
	return nil
}

func (f *FS) fsyncDirFD(fd int) error {
	if f.hooks.fsyncDir != nil {
		return f.hooks.fsyncDir(fd)
	}
	return fdio.FsyncDir(fd)
}
