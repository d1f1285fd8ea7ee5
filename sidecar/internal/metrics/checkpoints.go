package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
)

// Checkpoints are the checkpoint store's figures: operations by result,
// their duration, failures by reason, bytes captured, and (read at scrape)
// the checkpoints and object bytes stored.
type Checkpoints struct {
	ops      *prometheus.CounterVec
	failures *prometheus.CounterVec
	duration *prometheus.HistogramVec
	captured prometheus.Counter
}

// newCheckpoints creates the collectors (New registers them).
func newCheckpoints() *Checkpoints {
	m := &Checkpoints{
		ops: counterVec("sidecar_checkpoint_operations_total",
			"Checkpoint operations (create, compare, restore, delete) by result (success or error); automatic checkpoints included.", "op", "result"),
		failures: counterVec("sidecar_checkpoint_failures_total",
			"Failed checkpoint operations by op and reason.", "op", "reason"),
		duration: histogramVec("sidecar_checkpoint_duration_seconds", "Duration of checkpoint operations by op.",
			[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}, "op"),
		captured: counter("sidecar_checkpoint_captured_bytes_total",
			"Bytes of the files in the checkpoints created (before deduplication)."),
	}
	for _, op := range []string{"create", "compare", "restore", "delete"} {
		m.ops.WithLabelValues(op, "success")
		m.ops.WithLabelValues(op, "error")
		m.duration.WithLabelValues(op)
	}
	return m
}

// Observe is the checkpoint.Observer.
func (m *Checkpoints) Observe(op string, d time.Duration, bytes int64, err error) {
	if err != nil {
		m.ops.WithLabelValues(op, "error").Inc()
		m.failures.WithLabelValues(op, string(davfs.ReasonOf(err))).Inc()
	} else {
		m.ops.WithLabelValues(op, "success").Inc()
		if op == "create" {
			m.captured.Add(float64(bytes))
		}
	}
	m.duration.WithLabelValues(op).Observe(d.Seconds())
}

// RegisterStore adds the gauges read from the store at scrape time.
func (m *Checkpoints) RegisterStore(reg prometheus.Registerer, stats func() (checkpoint.CheckpointStats, error)) error {
	count := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sidecar_checkpoints",
		Help: "Checkpoints stored (all workspaces).",
	}, func() float64 { s, _ := stats(); return float64(s.Checkpoints) })
	bytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sidecar_checkpoint_store_bytes",
		Help: "Bytes of the deduplicated objects in the checkpoint store.",
	}, func() float64 { s, _ := stats(); return float64(s.Bytes) })
	for _, c := range []prometheus.Collector{count, bytes} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
