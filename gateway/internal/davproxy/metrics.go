package davproxy

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
			Help: "WebDAV requests refused (400, 403, 405, 412, 423, 428, 502), by the errtable reason in lower case: read_only (405), precondition_required (428), revision_mismatch (412), locked (423), forbidden (a Destination elsewhere), invalid_path...",
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
		if *c, err = register(reg, *c); err != nil {
			return nil, err
		}
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the identical collector already
// registered (a second handler on the same registry shares the series).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

func (m *metrics) observe(method string, status int, d time.Duration, in, out int64) {
	// The methods the view knows keep their label.
	if !readMethods[method] && !mutationMethods[method] && method != http.MethodPost {
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
