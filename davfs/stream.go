package davfs

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// Streamed listings (ReadDirChunks) work in chunks of streamChunk names.
// At most streamAhead chunks wait, produced, for their turn to be consumed,
// so memory is bounded by a few chunks and one getdents buffer whatever
// the directory's size.
const (
	streamChunk  = 256
	streamAhead  = 4
	streamDirBuf = 16 << 10 // getdents buffer: ~400 short names per call
)

var entryChunkPool = sync.Pool{New: func() any { s := make([]Entry, 0, streamChunk); return &s }}

// ReadDirChunks lists a directory like ReadDir, for callers that stream the
// listing out (WebDAV PROPFIND): the same visible entries, but in directory
// order (not sorted) and in chunks handed out while the directory is still
// being read, so the first bytes can leave before the last name is known,
// the stat work of later chunks overlaps the output of earlier ones, and
// memory stays bounded whatever the directory's size.
//
// produce runs once per non-empty chunk, on up to GOMAXPROCS goroutines at
// once (the caller's among them), with the chunk's entries (the slice is
// reused once produce returns: keep what you need from it, not the slice;
// the entries' names and paths share one string per chunk, so keeping one
// keeps the chunk's).
// consume gets produce's results in chunk order, one call at a time, on
// whichever of those goroutines finished the chunk whose turn it is; the
// goroutines hand nothing to each other, so a listing costs no scheduler
// wake-ups per chunk. An error from consume stops the listing and is
// returned, and so is a listing error (vanished names, symlinks and
// special files are left out, as in ReadDir): some chunks may have been
// consumed by then, so a caller that has already sent some must treat its
// output as broken. Either way, no produce or consume call is running any
// more when ReadDirChunks returns.
func ReadDirChunks[T any](ctx context.Context, f *FS, ws Workspace, dir string, produce func([]Entry) T, consume func(T) error) error {
	w, err := f.resolve(ws, dir)
	if err != nil {
		return err
	}
	if w.isGlobal() && w.isRoot() {
		_, kids, err := f.globalRoot()
		if err != nil || len(kids) == 0 {
			return err
		}
		return consume(produce(kids))
	}
	fd, _, err := f.openDir(w)
	if err != nil {
		return err
	}
	s := &dirStream[T]{f: f, ctx: ctx, fd: fd, w: w, dir: strings.Join(w.segs, "/"),
		produce: produce, consume: consume, done: map[int]chunkResult[T]{}}
	s.turn.L = &s.mu
	bp := fdio.DirentBufs.Get().(*[]byte)
	s.buf = (*bp)[:streamDirBuf]
	var wg sync.WaitGroup
	finished := false
	defer func() {
		if !finished { // the caller's own produce or consume panicked
			s.mu.Lock()
			s.fail(errStreamAborted)
			s.mu.Unlock()
		}
		// Every worker uses fd: wait for all of them before closing it, so
		// none can ever stat through a recycled descriptor number.
		wg.Wait()
		fdio.DirentBufs.Put(bp)
		unix.Close(fd)
	}()
	s.work(func() {
		// More than one chunk: start the other workers.
		for range runtime.GOMAXPROCS(0) - 1 {
			wg.Go(func() {
				// A panic in produce or consume on a worker is re-raised
				// on the caller's goroutine (where the HTTP server
				// recovers it), not left to kill the process. So is a
				// runtime.Goexit there (recover sees nil), which would
				// otherwise leave its chunk missing and the others
				// waiting for it.
				returned := false
				defer func() {
					p := recover()
					if p == nil && !returned {
						p = errWorkerGoexit
					}
					if p != nil {
						s.mu.Lock()
						if s.panicked == nil {
							s.panicked = &workerPanic{p}
						}
						s.fail(errStreamAborted)
						s.mu.Unlock()
					}
				}()
				s.work(nil)
				returned = true
			})
		}
	})
	// The others finish the chunks they hold (and consume them in turn).
	wg.Wait()
	finished = true
	if s.panicked != nil {
		panic(s.panicked.v)
	}
	return s.err
}

// errStreamAborted stops the workers after a panic (which is re-raised, so
// it is never returned).
var errStreamAborted = errors.New("davfs: listing stopped")

// errWorkerGoexit is re-raised on the caller when produce or consume ended a
// worker's goroutine with runtime.Goexit.
var errWorkerGoexit = errors.New("davfs: produce or consume called runtime.Goexit on a ReadDirChunks worker")

// workerPanic carries a worker's panic value to the caller.
type workerPanic struct{ v any }

type chunkResult[T any] struct {
	v   T
	ok  bool // v was produced (the chunk had a visible entry)
	err error
}

type dirStream[T any] struct {
	f       *FS
	ctx     context.Context
	fd      int
	w       wsPath
	dir     string
	produce func([]Entry) T
	consume func(T) error

	mu sync.Mutex
	// Reading (under mu): names read from fd not yet taken into a chunk.
	buf   []byte
	names []fdio.Dirent // parsed from the last getdents; names[ni:] not taken yet
	ni    int
	eof   bool
	taken int // chunks handed to workers
	// Output (under mu).
	done     map[int]chunkResult[T] // produced, waiting for their turn
	next     int                    // the chunk whose turn it is
	writing  bool                   // a worker is consuming
	turn     sync.Cond              // broadcast when next moves or the stream fails
	err      error                  // first failure; stops everyone
	panicked *workerPanic           // a worker's panic, re-raised by the caller
}

// work takes chunks, stats and produces them, and consumes whatever is
// next in order, until the directory is done or the stream failed. more,
// if set, is called once, when the first chunk taken is full.
func (s *dirStream[T]) work(more func()) {
	var items []listed
	for {
		s.mu.Lock()
		for s.err == nil && len(s.done) >= streamAhead {
			s.turn.Wait()
		}
		if s.err != nil {
			s.mu.Unlock()
			return
		}
		k := s.taken
		var err error
		items, err = s.take(items[:0])
		if err != nil {
			s.fail(err)
			s.mu.Unlock()
			return
		}
		if len(items) == 0 {
			s.mu.Unlock()
			return
		}
		s.taken++
		spawn := more != nil && len(items) == streamChunk // maybe more to come
		s.mu.Unlock()
		if spawn {
			more()
			more = nil
		}

		var r chunkResult[T]
		ep := entryChunkPool.Get().(*[]Entry)
		es, err := s.f.statItems(s.ctx, s.fd, s.w, s.dir, items, (*ep)[:0])
		if err != nil {
			r.err = err
		} else if len(es) > 0 {
			s.f.handOut(nil, es...)
			r.v, r.ok = s.produce(es), true
		}
		if es != nil {
			clear(es)
			*ep = es[:0]
		}
		entryChunkPool.Put(ep)

		s.mu.Lock()
		s.done[k] = r
		if !s.writing {
			s.drain()
		}
		s.mu.Unlock()
	}
}

// drain consumes the chunks that are done, in order, while it is their
// turn. Called with mu held; consume runs without it.
func (s *dirStream[T]) drain() {
	s.writing = true
	for s.err == nil {
		r, ok := s.done[s.next]
		if !ok {
			break
		}
		delete(s.done, s.next)
		s.next++
		s.turn.Broadcast()
		if r.err != nil {
			s.fail(r.err)
			break
		}
		if !r.ok {
			continue // every name of the chunk was left out
		}
		s.mu.Unlock()
		err := s.consume(r.v)
		s.mu.Lock()
		if err != nil {
			s.fail(err)
		}
	}
	// Not deferred: if consume panics (mu is not held then), writing stays
	// set, so no other worker consumes until the stream is failed.
	s.writing = false
}

func (s *dirStream[T]) fail(err error) {
	if s.err == nil {
		s.err = err
	}
	s.turn.Broadcast()
}

// take fills items with the next chunk of visible names, reading the
// directory as needed. Called with mu held. An empty chunk means the
// directory is done.
func (s *dirStream[T]) take(items []listed) ([]listed, error) {
	for len(items) < streamChunk {
		if s.ni == len(s.names) {
			if s.eof {
				break
			}
			if err := s.ctx.Err(); err != nil {
				return nil, ctxErr(s.ctx)
			}
			n, err := unix.Getdents(s.fd, s.buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return nil, fsErr(err, s.w.rel)
			}
			if n <= 0 {
				s.eof = true
				break
			}
			// The names are copied out (one string for the buffer), so
			// they stay valid after buf is read into again.
			s.names, s.ni = fdio.ParseDirentsShared(s.buf[:n], s.names[:0]), 0
			continue // the buffer may have held only "." and ".."
		}
		d := s.names[s.ni]
		s.ni++
		if it, ok := s.f.keepDirent(s.fd, d); ok {
			items = append(items, it)
		}
	}
	return items, nil
}
