// Package metrics holds the sidecar's Prometheus figures for the gRPC
// surface (PRD §12.2): per-action requests, successes, errors and duration,
// revision conflicts, path rejections (denylist, symlink, invalid path,
// outside Global), size-limit rejections and git init failures, the
// connections the rpc and dav listeners refused at the TLS handshake, and
// the checkpoint store's figures. The WebDAV handler registers its own figures
// on the same registry.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/davfs"
)

// Metrics are the gRPC-side collectors. The zero value is not usable; use New.
type Metrics struct {
	requests        *prometheus.CounterVec
	errors          *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	conflicts       *prometheus.CounterVec
	rejections      *prometheus.CounterVec
	sizeRejections  *prometheus.CounterVec
	gitInitFailures prometheus.Counter
	features        *prometheus.GaugeVec
	peerRefused     *prometheus.CounterVec
	// Checkpoints are the checkpoint store's figures, on the same registry.
	Checkpoints *Checkpoints
}

// New creates the collectors and registers them on reg (which must not be
// nil).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: counterVec("sidecar_grpc_requests_total",
			"gRPC WorkspaceService calls by action and result (success or error).", "action", "result"),
		errors: counterVec("sidecar_grpc_errors_total",
			"Failed gRPC WorkspaceService calls by action, gRPC code and reason.", "action", "code", "reason"),
		duration: histogramVec("sidecar_grpc_request_duration_seconds", "Duration of gRPC WorkspaceService calls by action.",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "action"),
		conflicts: counterVec("sidecar_grpc_revision_conflicts_total",
			"gRPC calls refused because the expected revision (or a cursor) was stale.", "action", "reason"),
		rejections: counterVec("sidecar_grpc_path_rejections_total",
			"gRPC calls refused by path safety: denylist, symlink, invalid path, outside Global, path too long or deep.", "action", "reason"),
		sizeRejections: counterVec("sidecar_grpc_size_limit_rejections_total",
			"gRPC calls refused by a size limit (file too large, page size too large).", "action", "reason"),
		gitInitFailures: counter("sidecar_git_init_failures_total",
			"CreateProject calls whose git init failed (the project was rolled back)."),
		features: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sidecar_feature_available",
			Help: "1 when an optional feature (checkpoints, watch) is available, 0 while it cannot start (files are not affected; see /readyz?verbose)."}, []string{"feature"}),
		peerRefused: counterVec("sidecar_peer_refused_total",
			"Connections to the rpc or dav listener refused at the TLS handshake, by reason (no_certificate, untrusted, handshake).", "server", "reason"),
		Checkpoints: newCheckpoints(),
	}
	cm := m.Checkpoints
	for _, c := range []prometheus.Collector{m.requests, m.errors, m.duration, m.conflicts, m.rejections, m.sizeRejections, m.gitInitFailures, m.features, m.peerRefused,
		cm.ops, cm.failures, cm.duration, cm.captured} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Init creates the per-action series at zero so that dashboards and
// rate() see every action before its first call.
func (m *Metrics) Init(actions ...string) {
	for _, a := range actions {
		m.requests.WithLabelValues(a, "success")
		m.requests.WithLabelValues(a, "error")
		m.duration.WithLabelValues(a)
	}
}

// Observe records one finished call. code is the gRPC code name ("OK" on
// success) and reason the ErrorInfo reason ("" on success).
func (m *Metrics) Observe(action, code string, reason davfs.Reason, d time.Duration) {
	m.duration.WithLabelValues(action).Observe(d.Seconds())
	if code == "OK" {
		m.requests.WithLabelValues(action, "success").Inc()
		return
	}
	m.requests.WithLabelValues(action, "error").Inc()
	m.errors.WithLabelValues(action, code, string(reason)).Inc()
	switch reason {
	case davfs.ReasonRevisionMismatch, davfs.ReasonCursorStale:
		m.conflicts.WithLabelValues(action, string(reason)).Inc()
	case davfs.ReasonDenylisted, davfs.ReasonSymlink, davfs.ReasonInvalidPath, davfs.ReasonOutsideGlobal,
		davfs.ReasonPathTooLong, davfs.ReasonPathTooDeep, davfs.ReasonProtected, davfs.ReasonMultipleLinks:
		m.rejections.WithLabelValues(action, string(reason)).Inc()
	case davfs.ReasonTooLarge, davfs.ReasonPageSizeTooLarge:
		m.sizeRejections.WithLabelValues(action, string(reason)).Inc()
	}
}

// FeatureAvailable sets the gauge of feature.
func (m *Metrics) FeatureAvailable(feature string, ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	m.features.WithLabelValues(feature).Set(v)
}

// InitPeerRefused creates the refusal series of server at zero.
func (m *Metrics) InitPeerRefused(server string, reasons ...string) {
	for _, r := range reasons {
		m.peerRefused.WithLabelValues(server, r)
	}
}

// PeerRefused counts one connection refused at the handshake.
func (m *Metrics) PeerRefused(server, reason string) {
	m.peerRefused.WithLabelValues(server, reason).Inc()
}

// GitInitFailed counts one failed git init.
func (m *Metrics) GitInitFailed() { m.gitInitFailures.Inc() }

// counter is a Counter with only a name and help.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// counterVec is a CounterVec with only a name, help and labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// histogramVec is a HistogramVec with only a name, help, buckets and labels.
func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}
