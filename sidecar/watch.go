package sidecar

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/davfs/watch"
)

// WatchConfig is services.watch: the bounds of live changes (issue #16,
// docs/live-changes.md). Zero values take the defaults.
type WatchConfig struct {
	// MaxDirectories caps the directories watched by this sidecar (one
	// inotify instance), default 4096. Keep it below the node's
	// fs.inotify.max_user_watches share of the volume's UID.
	MaxDirectories int `yaml:"maxDirectories"`
	// MaxDirectoriesPerStream caps one stream's directories, default 256.
	MaxDirectoriesPerStream int `yaml:"maxDirectoriesPerStream"`
}

func (c WatchConfig) validate(bad badFunc) {
	if c.MaxDirectories < 0 {
		bad("services.watch.maxDirectories", "must not be negative (got %d)", c.MaxDirectories)
	}
	if c.MaxDirectoriesPerStream < 0 {
		bad("services.watch.maxDirectoriesPerStream", "must not be negative (got %d)", c.MaxDirectoriesPerStream)
	}
}

func (c WatchConfig) watcher() watch.Config {
	return watch.Config{MaxDirs: c.MaxDirectories, MaxDirsPerSubscriber: c.MaxDirectoriesPerStream}
}

// watchCollector exports the running Watcher's figures at scrape time
// (none while it cannot start).
type watchCollector struct {
	w                                                       func() *watch.Watcher
	subscribers, dirs, events, filtered, drops, relists, rs *prometheus.Desc
}

func newWatchCollector(w func() *watch.Watcher) *watchCollector {
	return &watchCollector{w: w,
		subscribers: prometheus.NewDesc("sidecar_watch_subscribers", "Open live-change streams.", nil, nil),
		dirs:        prometheus.NewDesc("sidecar_watch_directories", "Directories watched (inotify watches), lingering ones included.", nil, nil),
		events:      prometheus.NewDesc("sidecar_watch_events_total", "Live-change events queued to streams.", nil, nil),
		filtered:    prometheus.NewDesc("sidecar_watch_filtered_total", "inotify events dropped by the confinement filter (denylisted, temp, secret names).", nil, nil),
		drops:       prometheus.NewDesc("sidecar_watch_dropped_total", "Live-change events lost to a full stream queue (each loss is followed by a resync).", nil, nil),
		relists:     prometheus.NewDesc("sidecar_watch_relists_total", "Watched directories listed again whole (a kernel queue overflow, or more changed names than the watcher applies one by one).", nil, nil),
		rs:          prometheus.NewDesc("sidecar_watch_resyncs_total", "Resync events sent, by reason (overflow, limit, gap, gone).", []string{"reason"}, nil),
	}
}

func (c *watchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.subscribers, c.dirs, c.events, c.filtered, c.drops, c.relists, c.rs} {
		ch <- d
	}
}

func (c *watchCollector) Collect(ch chan<- prometheus.Metric) {
	w := c.w()
	if w == nil {
		return
	}
	st := w.Stats()
	ch <- prometheus.MustNewConstMetric(c.subscribers, prometheus.GaugeValue, float64(st.Subscribers))
	ch <- prometheus.MustNewConstMetric(c.dirs, prometheus.GaugeValue, float64(st.WatchedDirs))
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(st.Events))
	ch <- prometheus.MustNewConstMetric(c.filtered, prometheus.CounterValue, float64(st.Filtered))
	ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(st.Drops))
	ch <- prometheus.MustNewConstMetric(c.relists, prometheus.CounterValue, float64(st.Relists))
	for r, n := range st.Resyncs {
		ch <- prometheus.MustNewConstMetric(c.rs, prometheus.CounterValue, float64(n), r.String())
	}
}

// registerWatchMetrics registers the figures of whichever watcher runs.
func (s *Sidecar) registerWatchMetrics() error {
	if err := s.registry.Register(newWatchCollector(s.watcher.Load)); err != nil {
		return errors.Join(errors.New("watch metrics"), err)
	}
	return nil
}

// startWatcher opens the live-changes Watcher (the watch feature's Start):
// a watcher that cannot start is WATCH_UNAVAILABLE (features.go).
func (s *Sidecar) startWatcher() error {
	if s.watcher.Load() != nil {
		return nil
	}
	cfg := s.cfg.Services.Watch.watcher()
	cfg.Logger = s.log.Named("davfs")
	cfg.Observer = s.usage
	w, err := watch.New(s.fs, cfg)
	if err != nil {
		return errWatchUnavailable(err)
	}
	s.watcher.Store(w)
	return nil
}

// closeWatcher ends every watch stream (Run, once the retries stopped).
func (s *Sidecar) closeWatcher() {
	if w := s.watcher.Load(); w != nil {
		w.Close()
	}
}
