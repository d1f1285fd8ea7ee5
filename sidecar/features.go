package sidecar

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/watch"
	"github.com/agentworkspace/files/sidecar/internal/feature"
	"github.com/agentworkspace/files/sidecar/internal/metrics"
)

// The optional features (issue #23): the checkpoint store and the file
// watcher may fail to start because of what the agent did (a symlinked or
// foreign store, its UID's inotify instances used up). Neither stops the
// sidecar: the files are always served, the feature is reported (a log line
// per change, sidecar_feature_available, /readyz?verbose, its calls' error
// reason CHECKPOINTS_UNAVAILABLE / WATCH_UNAVAILABLE) and retried with
// backoff (feature package) until it starts.

// Feature names, as in logs, /readyz?verbose and the metric's label.
const (
	FeatureCheckpoints = "checkpoints"
	FeatureWatch       = "watch"
)

// newFeatures builds the supervisors of the checkpoint store (when
// configured) and of the watcher, and makes the first attempt of each, so
// the state is stated from the start.
func (s *Sidecar) newFeatures(m *metrics.Metrics) {
	opts := func(name, key string, start func() error) feature.Options {
		return feature.Options{Name: name, Start: start, Logger: s.log.Named("feature").With("config", key),
			MinBackoff: s.deps.RetryMinBackoff, MaxBackoff: s.deps.RetryMaxBackoff, Now: s.deps.Now, After: s.deps.After,
			OnChange: func(ok bool) { m.FeatureAvailable(name, ok) }}
	}
	if s.ck.CheckpointsEnabled() {
		s.checkpoints = feature.New(opts(FeatureCheckpoints, "services.checkpoints.dir", s.ck.OpenCheckpoints))
	}
	s.watch = feature.New(opts(FeatureWatch, "services.watch", s.startWatcher))
	for _, f := range s.features() {
		f.Attempt()
	}
}

// features lists the supervised features, checkpoints first.
func (s *Sidecar) features() []*feature.Feature {
	if s.checkpoints == nil {
		return []*feature.Feature{s.watch}
	}
	return []*feature.Feature{s.checkpoints, s.watch}
}

// currentWatcher is the running watcher, or why there is none.
func (s *Sidecar) currentWatcher() (*watch.Watcher, error) {
	if w := s.watcher.Load(); w != nil {
		return w, nil
	}
	return nil, s.watch.Err()
}

// errWatchUnavailable is WATCH_UNAVAILABLE for a watcher that could not
// start because of err, in safe words.
func errWatchUnavailable(err error) error {
	why := "cannot start"
	var errno unix.Errno
	if errors.As(err, &errno) {
		switch errno {
		case unix.EMFILE:
			why = "cannot start: the inotify instances of the sidecar's user are used up (fs.inotify.max_user_instances; the agent shares the user)"
		case unix.ENFILE:
			why = "cannot start: the system's limit of open files is reached"
		case unix.ENOMEM:
			why = "cannot start: out of kernel memory"
		default:
			why = "cannot start (" + errno.Error() + ")"
		}
	}
	return &davfs.Error{Code: davfs.CodeUnavailable, Reason: davfs.ReasonWatchUnavailable, Err: err,
		Message: fmt.Sprintf("live changes are not available: the file watcher %s; retried automatically, files are not affected", why)}
}

// kickObserver passes every call to the metrics and asks for an early
// retry of a feature a call found unavailable.
type kickObserver struct {
	m *metrics.Metrics
	s *Sidecar
}

func (k kickObserver) Observe(action, code string, reason davfs.Reason, d time.Duration) {
	k.m.Observe(action, code, reason, d)
	switch reason {
	case davfs.ReasonCheckpointsUnavailable:
		if k.s.checkpoints != nil {
			k.s.checkpoints.Kick()
		}
	case davfs.ReasonWatchUnavailable:
		k.s.watch.Kick()
	}
}

// readyz answers /readyz: 200 "ok" once serving (files work, whatever the
// features' state), 503 before and while stopping. With ?verbose, one line
// per check in the style of Kubernetes' /readyz?verbose:
//
//	[+]files ok
//	[-]checkpoints unavailable: the checkpoint store is not usable: ...
//	[+]watch ok
//	readyz check passed
//
// A feature that is unavailable does not fail the check (the pod keeps
// serving files); its reason is the message its calls answer, never a host
// path.
func (s *Sidecar) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	ready := s.ready.Load()
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if _, verbose := r.URL.Query()["verbose"]; !verbose {
		if ready {
			io.WriteString(w, "ok\n")
		} else {
			io.WriteString(w, "not ready\n")
		}
		return
	}
	if ready {
		io.WriteString(w, "[+]files ok\n")
	} else {
		io.WriteString(w, "[-]files not ready\n")
	}
	if s.checkpoints == nil {
		io.WriteString(w, "[+]checkpoints disabled (services.checkpoints.enabled: false)\n")
	}
	for _, f := range s.features() {
		if err := f.Err(); err != nil {
			fmt.Fprintf(w, "[-]%s unavailable: %s\n", f.Name(), err)
		} else {
			fmt.Fprintf(w, "[+]%s ok\n", f.Name())
		}
	}
	if ready {
		io.WriteString(w, "readyz check passed\n")
	} else {
		io.WriteString(w, "readyz check failed\n")
	}
}
