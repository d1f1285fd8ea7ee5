package davproxy

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/internal/davwire"
)

type metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	bytes       *prometheus.CounterVec
	rejections  *prometheus.CounterVec
	unavailable *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_webdav_requests_total",
			Help: "WebDAV view requests by method and HTTP status code.",
		}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agent_gateway_webdav_request_duration_seconds",
			Help:    "WebDAV view request duration, to the end of the response body.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_webdav_bytes_total",
			Help: "WebDAV view body bytes, received from clients (in) and sent to them (out).",
		}, []string{"direction"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_webdav_rejections_total",
			Help: "WebDAV requests refused (400, 403, 405, 412, 423, 428, 429, 502), by the errtable reason in lower case: read_only (405), precondition_required (428), revision_mismatch (412), locked (423), forbidden (a Destination elsewhere), invalid_path...",
		}, []string{"reason"}),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_webdav_sidecar_unavailable_total",
			Help: "WebDAV requests answered 503 or 504 because the agent's sidecar could not be reached or did not answer in time.",
		}, []string{"agent_id"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	for _, c := range []**prometheus.CounterVec{&m.requests, &m.bytes, &m.rejections, &m.unavailable} {
		if *c, err = davwire.Register(reg, *c); err != nil {
			return nil, err
		}
	}
	if m.duration, err = davwire.Register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) observe(method string, status int, d time.Duration, in, out int64) {
	if _, ok := davwire.Methods[method]; !ok {
		method = "OTHER"
	}
	m.requests.WithLabelValues(method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method).Observe(d.Seconds())
	if in > 0 {
		m.bytes.WithLabelValues("in").Add(float64(in))
	}
	if out > 0 {
		m.bytes.WithLabelValues("out").Add(float64(out))
	}
}
