package davhandler

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the PRD §12.2 figures for the WebDAV surface.
type metrics struct {
	requests      *prometheus.CounterVec   // by method and status
	duration      *prometheus.HistogramVec // by method
	preconditions *prometheus.CounterVec   // 412s by method
	rejections    *prometheus.CounterVec   // path/denylist/symlink refusals by reason
	sizeRejects   *prometheus.CounterVec   // 413 and Content-Range refusals by kind
	cache         sync.Map                 // seriesKey -> *series
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_webdav_requests_total",
			Help: "WebDAV requests by method and HTTP status.",
		}, []string{"method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sidecar_webdav_request_duration_seconds",
			Help:    "WebDAV request duration by method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method"}),
		preconditions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_webdav_precondition_failures_total",
			Help: "WebDAV requests refused with 412 (stale If-Match / If-None-Match / If) by method.",
		}, []string{"method"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_webdav_path_rejections_total",
			Help: "WebDAV requests refused for their path (denylist, symlink, outside global, invalid path) by reason.",
		}, []string{"reason"}),
		sizeRejects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_webdav_size_rejections_total",
			Help: "WebDAV uploads refused for their size (too_large) or shape (content_range).",
		}, []string{"kind"}),
	}
	if reg != nil {
		m.requests = register(reg, m.requests)
		m.duration = register(reg, m.duration)
		m.preconditions = register(reg, m.preconditions)
		m.rejections = register(reg, m.rejections)
		m.sizeRejects = register(reg, m.sizeRejects)
	}
	return m
}

// register registers c, reusing an identical collector already there (two
// handlers on one registry share their series).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// series caches the children of the request metrics by method and status,
// so the hot path does no label hashing.
type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

type seriesKey struct {
	method string
	status int
}

func (m *metrics) seriesFor(method string, status int) *series {
	k := seriesKey{method, status}
	if s, ok := m.cache.Load(k); ok {
		return s.(*series)
	}
	s := &series{
		requests: m.requests.WithLabelValues(method, strconv.Itoa(status)),
		duration: m.duration.WithLabelValues(method),
	}
	m.cache.Store(k, s)
	return s
}

func (m *metrics) observe(method string, status int, d time.Duration) {
	method = methodLabel(method)
	s := m.seriesFor(method, status)
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
	if status == 412 {
		m.preconditions.WithLabelValues(method).Inc()
	}
}

// methodLabel bounds label cardinality to the methods we serve.
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PROPFIND", "PROPPATCH",
		"MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "POST":
		return m
	}
	return "OTHER"
}
