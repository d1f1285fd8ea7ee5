package search

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// run is one search: the confined walk (this file), the readers of file
// contents (read.go) and the name ranking (fuzzy.go).
type run struct {
	parent context.Context // the caller's: canceled when the client goes away
	limit  context.Context // parent with the time limit
	ctx    context.Context // limit, canceled at a bound
	cancel context.CancelFunc
	stopFn context.CancelFunc

	fs *davfs.FS
	t  davfs.Target
	o  Options
	m  *matcher
	g  globs

	emitMu  sync.Mutex
	emit    Emit
	emitErr error

	boundMu   sync.Mutex
	boundName string

	files, results, binary, partial atomic.Int64
	bytes                           atomic.Int64

	jobs     chan job // content: files opened by the walk, for the readers
	names    []Result // name mode: the best candidates so far
	namesCut bool     // name mode: candidates were dropped
}

// job is one file for a reader to open in dir, a directory fd the walk
// opened and shares with the readers (the last one out closes it).
type job struct {
	dir  *sharedDir
	name string
	rel  string
}

// sharedDir is a directory fd held by the walk and by each job in it.
type sharedDir struct {
	fd   int
	refs atomic.Int64
}

func (d *sharedDir) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

func newRun(ctx context.Context, fs *davfs.FS, t davfs.Target, o Options, m *matcher, g globs, emit Emit) *run {
	limit, cancel := context.WithTimeout(ctx, o.Timeout)
	stopCtx, stop := context.WithCancel(limit)
	return &run{parent: ctx, limit: limit, ctx: stopCtx, cancel: cancel, stopFn: stop,
		fs: fs, t: t, o: o, m: m, g: g, emit: emit}
}

// stop ends the search at the bound name (the first one reached counts).
func (r *run) stop(name string) {
	r.boundMu.Lock()
	if r.boundName == "" {
		r.boundName = name
	}
	r.boundMu.Unlock()
	r.stopFn()
}

func (r *run) bound() string {
	r.boundMu.Lock()
	defer r.boundMu.Unlock()
	return r.boundName
}

// search walks the target with the readers running beside the walk.
func (r *run) search() error {
	if r.o.Mode == ModeName {
		return r.walk()
	}
	workers := max(1, runtime.GOMAXPROCS(0))
	r.jobs = make(chan job, 4*workers)
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			r.reader()
		}()
	}
	err := r.walk()
	close(r.jobs)
	wg.Wait()
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.emitErr != nil { // the walk then saw the stop it caused
		return r.emitErr
	}
	return err
}

// summary turns the walk's end into the Summary and the caller's error: a
// bound, or the time limit, is a truncated Summary; the caller's own
// context ending (the client went away) is davfs's context error.
func (r *run) summary(err error) (Summary, error) {
	s := Summary{FilesSearched: int(r.files.Load()), BytesRead: r.bytes.Load(),
		BinarySkipped: int(r.binary.Load()), FileTruncated: int(r.partial.Load())}
	switch {
	case r.parent.Err() != nil:
		return s, davfs.ContextError(r.parent)
	case r.bound() != "":
		s.Truncated, err = r.bound(), nil
	case r.limit.Err() != nil:
		s.Truncated, err = BoundTimeout, nil
	}
	if err == nil && r.o.Mode == ModeName {
		err = r.emitNames(&s)
	}
	s.Results = int(r.results.Load())
	return s, err
}

// walk walks r.t: the workspace root (for Global, skills/ and AGENTS.md
// only) or the one directory or file it names.
func (r *run) walk() error {
	t := r.t
	switch {
	case t.IsRoot() && t.IsGlobal():
		fd, err := r.fs.OpenTarget(t, fdio.DirPath)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for _, name := range []string{davfs.GlobalSkills, davfs.GlobalAgents} {
			if err := r.entry(fd, name, name, 1); err != nil {
				return err
			}
		}
		return nil
	case t.IsRoot():
		fd, err := r.fs.OpenTarget(t, fdio.DirRead)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return r.dir(fd, "", 0)
	default:
		// The target itself: what every operation says of a symlink,
		// a special file or a missing name.
		if _, err := r.fs.StatTarget(t); err != nil {
			return err
		}
		pfd, err := r.fs.OpenParent(t, fdio.DirPath)
		if err != nil {
			return err
		}
		defer unix.Close(pfd)
		return r.entry(pfd, t.Name(), t.Path(), t.Depth())
	}
}

// dir walks the directory open (O_RDONLY) as fd, rel in the workspace.
func (r *run) dir(fd int, rel string, depth int) error {
	ents, err := fdio.ReadDirents(fd)
	if err != nil {
		return davfs.PathError(err, rel)
	}
	var shared *sharedDir // the readers' reference to fd, once a file is queued
	defer func() {
		if shared != nil {
			shared.release()
		}
	}()
	for _, d := range ents {
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		child := childRel(rel, d.Name)
		if r.o.Mode == ModeContent && d.Type == unix.DT_REG {
			// The d_type fast path: the reader opens the name (never
			// following a link) and checks the fd by fstat; no lstat first.
			if !r.fileVisible(d.Name, child, depth+1) {
				continue
			}
			if shared == nil {
				dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
				if err != nil {
					return davfs.PathError(err, rel)
				}
				shared = &sharedDir{fd: dup}
				shared.refs.Store(1)
			}
			if err := r.queue(job{dir: shared, name: d.Name, rel: child}); err != nil {
				return err
			}
			continue
		}
		if d.Type == unix.DT_LNK || d.Type == unix.DT_FIFO || d.Type == unix.DT_SOCK || d.Type == unix.DT_CHR || d.Type == unix.DT_BLK {
			continue
		}
		if err := r.entry(fd, d.Name, child, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// fileVisible reports whether the file name (rel, depth segments) may be
// searched: shown by a listing, within the path bounds, kept by the globs.
func (r *run) fileVisible(name, rel string, depth int) bool {
	cfg := r.fs.Config()
	return r.fs.Visible(name) && depth <= cfg.MaxPathDepth && len(rel) <= cfg.MaxPathLength &&
		!(r.t.IsGlobal() && rel == davfs.GlobalSkills) && r.g.keep(rel)
}

// queue hands j to the readers, holding a reference to its directory.
func (r *run) queue(j job) error {
	j.dir.refs.Add(1)
	select {
	case r.jobs <- j:
		return nil
	case <-r.ctx.Done():
		j.dir.release()
		return r.ctx.Err()
	}
}

// entry handles the name in pfd: a directory is descended into, a regular
// single-link file is a candidate; anything else (a symlink, a FIFO, a
// device, another mount, a hidden name) is passed over.
func (r *run) entry(pfd int, name, rel string, depth int) error {
	cfg := r.fs.Config()
	if !r.fs.Visible(name) || depth > cfg.MaxPathDepth || len(rel) > cfg.MaxPathLength {
		return nil
	}
	var st unix.Stat_t
	if err := r.fs.LstatAt(r.t, pfd, name, &st); err != nil {
		return nil // gone meanwhile, another mount (EXDEV), unreadable
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if (r.t.IsGlobal() && rel == davfs.GlobalAgents) || r.g.prune(rel) {
			return nil
		}
		fd, err := r.fs.OpenAt(r.t, pfd, name, fdio.DirRead)
		if err != nil {
			return nil
		}
		defer unix.Close(fd)
		var cur unix.Stat_t
		if unix.Fstat(fd, &cur) != nil || cur.Ino != st.Ino || cur.Dev != st.Dev {
			return nil // replaced between the lstat and the open
		}
		return r.dir(fd, rel, depth)
	case unix.S_IFREG:
		if st.Nlink != 1 || (r.t.IsGlobal() && rel == davfs.GlobalSkills) || !r.g.keep(rel) {
			return nil
		}
		if r.o.Mode == ModeName {
			r.name(rel)
			return nil
		}
		dup, err := unix.FcntlInt(uintptr(pfd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return davfs.PathError(err, rel)
		}
		d := &sharedDir{fd: dup}
		d.refs.Store(1)
		defer d.release()
		return r.queue(job{dir: d, name: name, rel: rel})
	}
	return nil
}

func childRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
