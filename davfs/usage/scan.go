// Package usage answers how much a workspace holds (bytes and files of a
// project or of Global) and how large and how full its volume is (statfs
// on the volume's root fd). It sits beside the confined core: every name
// it counts is reached by the core's confined walk (davfs.FS.OpenTarget,
// OpenAt, LstatAt: never a symlink, never another mount) and filtered as a
// listing is (davfs.FS.Visible), so a denylisted name, a temp file or
// anything outside Global's allowlist is never counted. davfs does not
// know this package.
//
// Totals are kept in a Cache per workspace, made stale by the change feed
// (Cache.Changed, Cache.Overflow) rather than walked again per request.
package usage

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// Totals is what one workspace holds: the apparent size of its regular
// files (a file with several hard links counted once), and its files and
// directories (the root not counted). Names a listing does not show
// (denylisted, temp files, symlinks, mount points, beyond the path
// bounds) are not counted.
type Totals struct {
	Bytes int64
	Files int64
	Dirs  int64
}

// Scan walks ws whole through the confined walk and adds up what it
// holds. A missing project is davfs's NotFound.
func Scan(ctx context.Context, f *davfs.FS, ws davfs.Workspace) (Totals, error) {
	t, err := f.Resolve(ws, "")
	if err != nil {
		return Totals{}, err
	}
	if err := f.WorkspaceErr(t); err != nil {
		return Totals{}, err
	}
	s := &scanner{ctx: ctx, f: f, t: t, maxDepth: f.Config().MaxPathDepth}
	if t.IsGlobal() {
		fd, err := f.OpenTarget(t, fdio.DirPath)
		if err != nil {
			return Totals{}, err
		}
		defer unix.Close(fd)
		for _, name := range []string{davfs.GlobalSkills, davfs.GlobalAgents} {
			if err := s.entry(fd, name, 1); err != nil {
				return Totals{}, err
			}
		}
		return s.tot, nil
	}
	fd, err := f.OpenTarget(t, fdio.DirRead)
	if err != nil {
		return Totals{}, err
	}
	defer unix.Close(fd)
	if err := s.dir(fd, "", 0); err != nil {
		return Totals{}, err
	}
	return s.tot, nil
}

type scanner struct {
	ctx      context.Context
	f        *davfs.FS
	t        davfs.Target
	maxDepth int
	tot      Totals
	links    map[[2]uint64]bool // (dev, inode) of multi-link files counted
}

func (s *scanner) dir(fd int, rel string, depth int) error {
	if err := s.ctx.Err(); err != nil {
		return davfs.ContextError(s.ctx)
	}
	ents, err := fdio.ReadDirents(fd)
	if err != nil {
		return davfs.PathError(err, rel)
	}
	for _, d := range ents {
		if err := s.entry(fd, d.Name, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// entry counts name in pfd (depth segments below the workspace root).
func (s *scanner) entry(pfd int, name string, depth int) error {
	if !s.f.Visible(name) || depth > s.maxDepth {
		return nil
	}
	var st unix.Stat_t
	if err := s.f.LstatAt(s.t, pfd, name, &st); err != nil {
		if e := fdio.Errno(err); e == unix.ENOENT || e == unix.EXDEV || e == unix.ELOOP {
			return nil // gone meanwhile, or a mount point: not counted
		}
		return davfs.PathError(err, name)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if depth == 1 && s.t.IsGlobal() && name != davfs.GlobalAgents {
			return nil
		}
		if st.Nlink > 1 {
			k := [2]uint64{uint64(st.Dev), st.Ino}
			if s.links[k] {
				return nil
			}
			if s.links == nil {
				s.links = map[[2]uint64]bool{}
			}
			s.links[k] = true
		}
		s.tot.Files++
		s.tot.Bytes += st.Size
	case unix.S_IFDIR:
		if depth == 1 && s.t.IsGlobal() && name != davfs.GlobalSkills {
			return nil
		}
		fd, err := s.f.OpenAt(s.t, pfd, name, fdio.DirRead)
		if err != nil {
			if e := fdio.Errno(err); e == unix.ENOENT || e == unix.EXDEV || e == unix.ELOOP || e == unix.ENOTDIR {
				return nil // replaced or a mount point meanwhile
			}
			return davfs.PathError(err, name)
		}
		defer unix.Close(fd)
		s.tot.Dirs++
		return s.dir(fd, name, depth)
	}
	return nil
}

// Volume is the size and free space of a file system (statfs), in bytes.
// Free is what an unprivileged writer may use (f_bavail).
type Volume struct {
	Size, Free int64
}

// VolumeOf statfs's the file system of scope's namespace root (its fd,
// never a path).
func VolumeOf(f *davfs.FS, scope davfs.Scope) (Volume, error) {
	return volumeOfFD(f.RootFD(scope))
}

func volumeOfFD(fd int) (Volume, error) {
	var st unix.Statfs_t
	for {
		err := unix.Fstatfs(fd, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Volume{}, err
		}
		break
	}
	bs := int64(st.Bsize)
	if st.Frsize > 0 {
		bs = int64(st.Frsize)
	}
	return Volume{Size: int64(st.Blocks) * bs, Free: int64(st.Bavail) * bs}, nil
}
