package checkpoint

import (
	"errors"
	"fmt"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// Opening the checkpoint store apart from the core (issue #23): the store
// may sit where the agent can write (it can replace it by a symlink, plant
// a folder without the store marker, link objects/ away), and none of that
// may stop the files from being served. So Open never fails because of the
// store: a store that cannot be used is recorded, every checkpoint call
// (and every delete or restore that would take an automatic checkpoint,
// and every WebDAV write that would keep a version) fails with
// Unavailable/CHECKPOINTS_UNAVAILABLE and a message that says why in safe
// words, and OpenCheckpoints tries again. Nothing on disk is changed by a
// failed attempt except what a successful one would also have created (the
// store folder and its subfolders, 0700, where they are missing).
//
// Limit: once open, the store is held by fds; what the agent does to its
// path afterwards (rename it away, plant a symlink) is not noticed until
// the next start.

// OpenCheckpoints tries now to open the configured store, creating it if
// it is missing, and returns nil once it is open (at once if it already
// is). It returns the CHECKPOINTS_UNAVAILABLE error of the attempt
// otherwise, which checkpoint calls return until an attempt succeeds; and
// CHECKPOINTS_DISABLED when no store is configured. It is the retry of a
// supervisor (the sidecar's, with backoff); it is safe to call at any time.
func (f *Store) OpenCheckpoints() error {
	if err := f.fs.Alive(); err != nil {
		return err
	}
	if f.ck == nil {
		return errCheckpointsDisabled()
	}
	return f.ck.reopen(f)
}

// CheckpointsErr says whether the configured store can be used: nil when it
// is open, or not yet created (the first checkpoint or OpenCheckpoints
// creates it); the CHECKPOINTS_UNAVAILABLE error of the last attempt
// otherwise; CHECKPOINTS_DISABLED without a store.
func (f *Store) CheckpointsErr() error {
	if f.ck == nil {
		return errCheckpointsDisabled()
	}
	f.ck.mu.Lock()
	defer f.ck.mu.Unlock()
	if f.ck.failure != nil {
		return f.ck.failure
	}
	return nil
}

func errCheckpointsDisabled() *davfs.Error {
	return newErr(davfs.CodeFailedPrecondition, davfs.ReasonCheckpointsDisabled, nil, "checkpoints are not configured on this agent (services.checkpoints.dir)")
}

// unusablePrefix starts every CHECKPOINTS_UNAVAILABLE message.
const unusablePrefix = "the checkpoint store is not usable: "

// errUnusableWhy is CHECKPOINTS_UNAVAILABLE because of why (safe words:
// never a host path). cause is kept for logs.
func errUnusableWhy(cause error, why string) *davfs.Error {
	return newErr(davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable, cause,
		"%s%s; checkpoints are off until it is repaired (retried automatically), files are not affected", unusablePrefix, why)
}

// errUnusable turns any failure of an attempt to open the store into
// CHECKPOINTS_UNAVAILABLE, keeping a message that already says why.
func errUnusable(err error) *davfs.Error {
	var de *davfs.Error
	if errors.As(err, &de) && de.Reason == davfs.ReasonCheckpointsUnavailable {
		return de
	}
	return errUnusableWhy(err, errnoWhy(err))
}

// errSubdir is the failure to create or open the store's subfolder name.
func errSubdir(name string, err error) *davfs.Error {
	if e := fdio.Errno(err); e == unix.ELOOP || e == unix.ENOTDIR || e == unix.EEXIST {
		return errUnusableWhy(err, fmt.Sprintf("its %s/ folder is a symbolic link or not a folder", name))
	}
	return errUnusableWhy(err, fmt.Sprintf("its %s/ folder %s", name, errnoWhy(err)))
}

// errnoWhy says in safe words why a system call on the store failed.
func errnoWhy(err error) string {
	switch e := fdio.Errno(err); e {
	case 0:
		return "it cannot be opened"
	case unix.EACCES, unix.EPERM:
		return "permission denied (it cannot be read or created)"
	case unix.ENOSPC, unix.EDQUOT:
		return "no space left on its volume"
	case unix.EROFS:
		return "its volume is read-only"
	case unix.ENOENT:
		return "a folder on its path is missing and cannot be created"
	default:
		return "it cannot be opened (" + e.Error() + ")"
	}
}
