package dav

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/internal/davwire"
)

// metrics are the PRD §12.2 figures for the WebDAV surface. The names are
// the ones dashboards and tests already read.
type metrics struct {
	requests      *prometheus.CounterVec   // by method and status
	duration      *prometheus.HistogramVec // by method
	preconditions *prometheus.CounterVec   // 412 and 428 by method
	rejections    *prometheus.CounterVec   // path refusals by reason
	sizeRejects   *prometheus.CounterVec   // 413 and Content-Range refusals by kind

	durations map[string]prometheus.Observer // duration's series by method (davwire's and "OTHER")
	counters  sync.Map                       // requestKey → prometheus.Counter: the series of requests, looked up once
}

// requestKey names one series of requests: a label set, method and status.
type requestKey struct {
	method string
	status int
}

// counter is requests' series for method and status (a request formats
// no status and hashes no labels once its series was seen). Bounded: the
// methods are davwire's and "OTHER", the statuses net/http's.
func (m *metrics) counter(method string, status int) prometheus.Counter {
	k := requestKey{method, status}
	if c, ok := m.counters.Load(k); ok {
		return c.(prometheus.Counter)
	}
	c := m.requests.WithLabelValues(method, strconv.Itoa(status))
	m.counters.Store(k, c)
	return c
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
			Help: "WebDAV requests refused with 412 (stale If-Match / If-None-Match / If) or 428 (no precondition) by method.",
		}, []string{"method"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_webdav_path_rejections_total",
			Help: "WebDAV requests refused for their path (invalid path, denylist, symlink, outside global, multiple links) by reason.",
		}, []string{"reason"}),
		sizeRejects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_webdav_size_rejections_total",
			Help: "WebDAV requests refused for their size (too_large) or shape (content_range).",
		}, []string{"kind"}),
	}
	if reg != nil {
		// An error leaves the collector unregistered: the handler still counts.
		m.requests, _ = davwire.Register(reg, m.requests)
		m.duration, _ = davwire.Register(reg, m.duration)
		m.preconditions, _ = davwire.Register(reg, m.preconditions)
		m.rejections, _ = davwire.Register(reg, m.rejections)
		m.sizeRejects, _ = davwire.Register(reg, m.sizeRejects)
	}
	m.durations = map[string]prometheus.Observer{"OTHER": m.duration.WithLabelValues("OTHER")}
	for method := range davwire.Methods {
		m.durations[method] = m.duration.WithLabelValues(method)
	}
	return m
}

func (m *metrics) observe(method string, status int, reason string, d time.Duration) {
	if _, ok := davwire.Methods[method]; !ok {
		method = "OTHER"
	}
	m.counter(method, status).Inc()
	if o, ok := m.durations[method]; ok {
		o.Observe(d.Seconds())
	}
	switch {
	case status == 412 || status == 428:
		m.preconditions.WithLabelValues(method).Inc()
	case reason == "TOO_LARGE":
		m.sizeRejects.WithLabelValues("too_large").Inc()
	}
	switch reason {
	case "INVALID_PATH", "PATH_TOO_LONG", "PATH_TOO_DEEP", "DENYLISTED", "SYMLINK",
		"OUTSIDE_GLOBAL", "PROTECTED", "MULTIPLE_LINKS":
		m.rejections.WithLabelValues(reason).Inc()
	}
}
