// Package davfs is the only code that touches the agent volumes: the Projects
// root and the Global allowlist of CODEX_HOME (skills/ and AGENTS.md).
//
// Guarantees: every path is validated as a relative, "/"-separated UTF-8 path
// (no empty segment, ".", "..", NUL; bounded length and depth; no denylisted
// segment) and then resolved from a directory fd held open for the root,
// never following a symlink (openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV, or a per-segment O_NOFOLLOW walk
// where openat2 is missing). Mutations act through *at calls on the resolved
// parent fd, re-checked right before they happen, under one mutation lock per
// FS. File writes are atomic (temp file, fsync, rename, fsync dir). No
// operation crosses a mount point, a same-file-system bind mount included
// (RESOLVE_NO_XDEV, or the statx mount ID; see mount.go).
//
// Names read from the disk are validated like names from a request: a
// listing never shows a symlink, a FIFO/socket/device, a denylisted or
// invalid (non-UTF-8, over 255 bytes) name, or davfs's temp files. Regular
// files are opened only after fstatat says they are regular, with
// O_NOFOLLOW|O_NONBLOCK, and checked again with fstat; a file with more
// than one hard link (it may be another name of a CODEX_HOME secret) is
// never read, copied, written or replaced, while its name may be deleted
// or renamed: one policy for every surface, links.go. Recursive deletes
// walk by fds, unlink symlinks instead of following them, and refuse,
// before deleting anything, a tree with work newer than the revision they
// carry (DeleteEntryWith, seen.go).
//
// Choices: a page size above Config.MaxPageSize is refused
// (ResourceExhausted/PAGE_SIZE_TOO_LARGE), not clamped. Temp files are named
// ".davfs-tmp-*"; Open sweeps them breadth first through CODEX_HOME's top
// level, skills/ and the projects root, bounded by sweepBudget directories,
// and a listing removes any it meets that is older than staleTempAge.
// Revisions: see revision.go (content hash + stat for files up to the
// editable limit, stat alone above it and for directories).
//
// Limits: davfs does not lock against other processes (the agent itself may
// write at any time; revisions detect that at commit). It does not protect
// against a privileged process that rewrites the volume under it, nor
// against the agent moving a directory while an operation holds its fd (the
// parent is re-resolved and compared under the lock before a commit). Each
// operation resolves its path afresh (no fd cache), so a Stat costs three
// system calls (openat2, fstatat, close) where a raw lstat costs one.
package davfs

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// FS serves one agent's volumes. It is safe for concurrent use. One FS must
// be the only davfs writer of its volumes (Open sweeps temp files left by a
// previous process). Close must not race with operations in flight.
type FS struct {
	cfg  Config
	log  hclog.Logger
	now  func() time.Time
	deny map[string]struct{}

	projects root // projects root
	codex    root // CODEX_HOME

	// useOpenat2 is decided once at Open: false when the kernel (or a
	// seccomp filter) lacks openat2 or Config.DisableOpenat2 is set.
	useOpenat2 bool

	// mu is the mutation lock: create/delete project and every entry
	// mutation run under it; reads never take it.
	mu sync.Mutex

	cache    *hashCache
	seen     *dirSeen // when directory revisions were handed out (seen.go)
	dirSyncs dirSyncs // group directory fsync (syncDir)
	closed   atomic.Bool

	// hooks inject failures in tests; zero in production.
	hooks hooks
}

// root is a directory fd (O_PATH) held open for a namespace root.
type root struct {
	fd  int
	dev uint64
	// localFS: the root's file system is a local one, where a file unlinked
	// while referenced is freed, invisibly, when the last reference goes.
	// Only then do commit and deleteIn keep a replaced or deleted file
	// referenced past the mutation lock: network and FUSE file systems may
	// rename a busy file to a visible placeholder instead (NFS's .nfsXXXX).
	localFS bool
	mnt     uint64 // mount ID, 0 if the kernel does not report one
}

// Open validates cfg, opens the roots, ensures $CODEX_HOME/skills exists and
// sweeps davfs's own stale temp files. It changes nothing else on disk.
//
// The roots themselves must be directories, not symlinks. The temp sweep is
// bounded (see sweepAtOpen); listings remove stale temp files they meet.
func Open(cfg Config) (*FS, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &FS{cfg: cfg, log: cmp.Or(cfg.Logger, hclog.NewNullLogger()), now: cfg.Now, deny: map[string]struct{}{".git": {}}}
	if f.now == nil {
		f.now = time.Now
	}
	for _, n := range cfg.DeniedNames {
		f.deny[n] = struct{}{}
	}
	f.cache = newHashCache(defaultCacheEntries)
	f.seen = newDirSeen(defaultSeenEntries)
	if f.projects, err = openRoot(cfg.ProjectsRoot, "projectsRootDir"); err != nil {
		return nil, err
	}
	if f.codex, err = openRoot(cfg.CodexHome, "codexHomeDir"); err != nil {
		unix.Close(f.projects.fd)
		return nil, err
	}
	f.useOpenat2 = !cfg.DisableOpenat2 && probeOpenat2(f.projects.fd)
	if err := f.ensureSkills(); err != nil {
		f.Close()
		return nil, err
	}
	f.sweepAtOpen()
	return f, nil
}

func openRoot(path, key string) (root, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return root{fd: -1}, fmt.Errorf("davfs: %s: open %s: %w (it must be an existing directory, not a symlink)", key, path, err)
	}
	var st unix.Stat_t
	mnt, err := statxInto(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, &st)
	if err != nil {
		unix.Close(fd)
		return root{fd: -1}, fmt.Errorf("davfs: %s: stat %s: %w", key, path, err)
	}
	return root{fd: fd, dev: st.Dev, mnt: mnt, localFS: isLocalFS(fd)}, nil
}

// localFSTypes are the statfs magics of local disk and memory file systems.
var localFSTypes = map[int64]bool{
	unix.EXT4_SUPER_MAGIC: true, unix.XFS_SUPER_MAGIC: true, unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC: true, unix.F2FS_SUPER_MAGIC: true, unix.OVERLAYFS_SUPER_MAGIC: true,
	0x2fc12fc1: true, // zfs
}

// isLocalFS reports whether fd is on a local file system (localFSTypes).
func isLocalFS(fd int) bool {
	var sf unix.Statfs_t
	if err := unix.Fstatfs(fd, &sf); err != nil {
		return false
	}
	return localFSTypes[int64(sf.Type)]
}

// ensureSkills makes $CODEX_HOME/skills a real directory (0755) if it is
// missing and refuses to start if it is anything else (a symlink, a file).
func (f *FS) ensureSkills() error {
	err := unix.Mkdirat(f.codex.fd, GlobalSkills, 0o755)
	switch {
	case err == nil:
		fd, err := unix.Openat(f.codex.fd, GlobalSkills, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("davfs: codexHomeDir/skills: %w", err)
		}
		defer unix.Close(fd)
		if err := unix.Fchmod(fd, 0o755); err != nil {
			return fmt.Errorf("davfs: codexHomeDir/skills: chmod: %w", err)
		}
		return nil
	case errors.Is(err, unix.EEXIST):
		var st unix.Stat_t
		if err := unix.Fstatat(f.codex.fd, GlobalSkills, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("davfs: codexHomeDir/skills: %w", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return errors.New("davfs: codexHomeDir/skills exists but is not a real directory (a symlink or a file); refusing to start")
		}
		return nil
	default:
		return fmt.Errorf("davfs: codexHomeDir/skills: mkdir: %w", err)
	}
}

// Close releases the root fds.
func (f *FS) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, r := range []root{f.projects, f.codex} {
		if r.fd >= 0 {
			errs = append(errs, unix.Close(r.fd))
		}
	}
	return errors.Join(errs...)
}

func (f *FS) alive() error {
	if f.closed.Load() {
		return errClosed()
	}
	return nil
}
