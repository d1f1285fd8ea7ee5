// Package metrics holds the gateway's Prometheus metrics (PRD §12.2) on a
// registry handed in by the caller; nothing is registered globally.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// Metrics are the gateway's own counters. Label values are bounded: action
// names are fixed, agent ids come from config (unknown ids are "unknown"),
// codes and reasons are enum names.
type Metrics struct {
	Requests           *prometheus.CounterVec
	Successes          *prometheus.CounterVec
	Errors             *prometheus.CounterVec
	Duration           *prometheus.HistogramVec
	RevisionConflicts  *prometheus.CounterVec
	PathRejections     *prometheus.CounterVec
	SidecarUnavailable *prometheus.CounterVec
	GitInitFailures    *prometheus.CounterVec
	SizeLimit          *prometheus.CounterVec
	AuthFailures       *prometheus.CounterVec
}

// New creates and registers the metrics on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Requests:  counterVec("agent_gateway_requests_total", "Management API requests by action and agent.", "action", "agent_id"),
		Successes: counterVec("agent_gateway_requests_succeeded_total", "Management API requests that succeeded.", "action", "agent_id"),
		Errors: counterVec("agent_gateway_requests_failed_total",
			"Management API requests that failed, by gRPC code and reason.", "action", "agent_id", "code", "reason"),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agent_gateway_request_duration_seconds", Help: "Management API request duration.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"action", "agent_id"}),
		RevisionConflicts: counterVec("agent_gateway_revision_conflicts_total",
			"Requests refused because the expected revision no longer matched.", "action", "agent_id"),
		PathRejections: counterVec("agent_gateway_path_rejections_total",
			"Requests refused by path rules (denylist, symlink, global allowlist, invalid, too long or deep).", "reason", "agent_id"),
		SidecarUnavailable: counterVec("agent_gateway_sidecar_unavailable_total",
			"Calls that failed because the agent's sidecar was unreachable or too slow.", "agent_id"),
		GitInitFailures: counterVec("agent_gateway_git_init_failures_total", "CreateProject calls whose git initialisation failed.", "agent_id"),
		SizeLimit: counterVec("agent_gateway_size_limit_rejections_total",
			"Requests refused by a size limit (file too large, page size).", "action", "agent_id", "reason"),
		AuthFailures: counterVec("agent_gateway_auth_failures_total", "Requests refused by authentication (401) or authorisation (403).", "status"),
	}
	for _, c := range []prometheus.Collector{m.Requests, m.Successes, m.Errors, m.Duration, m.RevisionConflicts,
		m.PathRejections, m.SidecarUnavailable, m.GitInitFailures, m.SizeLimit, m.AuthFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// counterVec is a CounterVec with only a name, help and labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// pathReasons are the ErrorReason names counted as path rejections.
var pathReasons = map[string]bool{
	"DENYLISTED": true, "SYMLINK": true, "OUTSIDE_GLOBAL": true, "INVALID_PATH": true,
	"PATH_TOO_LONG": true, "PATH_TOO_DEEP": true, "PROTECTED": true, "MULTIPLE_LINKS": true,
}

// Observe records one finished management call.
func (m *Metrics) Observe(action, agentID string, code codes.Code, reason string, d time.Duration) {
	m.Requests.WithLabelValues(action, agentID).Inc()
	m.Duration.WithLabelValues(action, agentID).Observe(d.Seconds())
	if code == codes.OK {
		m.Successes.WithLabelValues(action, agentID).Inc()
		return
	}
	m.Errors.WithLabelValues(action, agentID, code.String(), reason).Inc()
	switch {
	case reason == "REVISION_MISMATCH":
		m.RevisionConflicts.WithLabelValues(action, agentID).Inc()
	case pathReasons[reason]:
		m.PathRejections.WithLabelValues(reason, agentID).Inc()
	case reason == "SIDECAR_UNAVAILABLE":
		m.SidecarUnavailable.WithLabelValues(agentID).Inc()
	case reason == "GIT_INIT_FAILED":
		m.GitInitFailures.WithLabelValues(agentID).Inc()
	case reason == "TOO_LARGE" || reason == "PAGE_SIZE_TOO_LARGE" || reason == "NO_SPACE":
		m.SizeLimit.WithLabelValues(action, agentID, reason).Inc()
	}
}
