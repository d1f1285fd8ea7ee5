package watch

import (
	"errors"
	"time"

	"github.com/fsnotify/fsnotify"
)

// kernel is the thin fsnotify (inotify) adapter: watches are put on the
// /proc/self/fd path of a held, confined fd (davfs.Dir.ProcPath) and its
// events are handed to a sink as that path (the directory itself) or that
// path plus a name.
type kernel struct {
	nw *fsnotify.Watcher
}

// sink is what the kernel's loop feeds.
type sink interface {
	// event: name (a proc path, or a proc path and a name) changed;
	// gone: it was removed or renamed away.
	event(name string, gone bool)
	// overflow: the kernel's queue overflowed and events were lost.
	overflow()
	// housekeep runs every Revalidate.
	housekeep()
}

func newKernel() (*kernel, error) {
	nw, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return nil, err
	}
	return &kernel{nw: nw}, nil
}

func (k *kernel) add(proc string) error { return k.nw.Add(proc) }

func (k *kernel) remove(proc string) { k.nw.Remove(proc) }

func (k *kernel) close() error { return k.nw.Close() }

// run feeds s until done closes or the kernel watcher is closed, and
// calls s.housekeep every period.
func (k *kernel) run(done <-chan struct{}, period time.Duration, s sink, warn func(string)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case ev, ok := <-k.nw.Events:
			if !ok {
				return
			}
			s.event(ev.Name, ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename))
		case err, ok := <-k.nw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				warn("live changes: kernel event queue overflowed; subscribers resync")
				s.overflow()
			}
		case <-tick.C:
			s.housekeep()
		}
	}
}
