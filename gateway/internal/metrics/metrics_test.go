package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
)

func TestObserveClassifies(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Observe("update_file", "a", codes.OK, "", time.Millisecond)
	m.Observe("update_file", "a", codes.Aborted, "REVISION_MISMATCH", time.Millisecond)
	m.Observe("get_file", "a", codes.PermissionDenied, "SYMLINK", time.Millisecond)
	m.Observe("get_file", "a", codes.ResourceExhausted, "TOO_LARGE", time.Millisecond)
	m.Observe("list_projects", "b", codes.Unavailable, "SIDECAR_UNAVAILABLE", time.Millisecond)
	m.Observe("create_project", "a", codes.Internal, "GIT_INIT_FAILED", time.Millisecond)
	for name, c := range map[string]struct {
		got  float64
		want float64
	}{
		"requests":    {value(m.Requests.WithLabelValues("update_file", "a")), 2},
		"successes":   {value(m.Successes.WithLabelValues("update_file", "a")), 1},
		"errors":      {value(m.Errors.WithLabelValues("update_file", "a", "Aborted", "REVISION_MISMATCH")), 1},
		"conflicts":   {value(m.RevisionConflicts.WithLabelValues("update_file", "a")), 1},
		"path":        {value(m.PathRejections.WithLabelValues("SYMLINK", "a")), 1},
		"size":        {value(m.SizeLimit.WithLabelValues("get_file", "a", "TOO_LARGE")), 1},
		"unavailable": {value(m.SidecarUnavailable.WithLabelValues("b")), 1},
		"git":         {value(m.GitInitFailures.WithLabelValues("a")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	if _, err := New(reg); err == nil {
		t.Error("registering twice on one registry must fail")
	}
}

// value reads one counter.
func value(c prometheus.Counter) float64 {
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		return -1
	}
	return d.GetCounter().GetValue()
}
