package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agentworkspace/files/davfs"
)

func TestObserveClassifies(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Init("GetFile")
	m.Observe("UpdateFile", "OK", "", time.Millisecond)
	m.Observe("UpdateFile", "Aborted", davfs.ReasonRevisionMismatch, time.Millisecond)
	m.Observe("ListEntries", "Aborted", davfs.ReasonCursorStale, time.Millisecond)
	for _, r := range []davfs.Reason{davfs.ReasonDenylisted, davfs.ReasonSymlink, davfs.ReasonInvalidPath, davfs.ReasonOutsideGlobal,
		davfs.ReasonPathTooLong, davfs.ReasonPathTooDeep} {
		m.Observe("GetFile", "X", r, time.Millisecond)
	}
	m.Observe("UpdateFile", "ResourceExhausted", davfs.ReasonTooLarge, time.Millisecond)
	m.Observe("ListEntries", "ResourceExhausted", davfs.ReasonPageSizeTooLarge, time.Millisecond)
	m.GitInitFailed()

	for _, tc := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.requests.WithLabelValues("UpdateFile", "success"), 1},
		{m.requests.WithLabelValues("UpdateFile", "error"), 2},
		{m.requests.WithLabelValues("GetFile", "success"), 0},
		{m.requests.WithLabelValues("GetFile", "error"), 6},
		{m.conflicts.WithLabelValues("UpdateFile", "REVISION_MISMATCH"), 1},
		{m.conflicts.WithLabelValues("ListEntries", "CURSOR_STALE"), 1},
		{m.rejections.WithLabelValues("GetFile", "SYMLINK"), 1},
		{m.rejections.WithLabelValues("GetFile", "PATH_TOO_DEEP"), 1},
		{m.sizeRejections.WithLabelValues("UpdateFile", "TOO_LARGE"), 1},
		{m.sizeRejections.WithLabelValues("ListEntries", "PAGE_SIZE_TOO_LARGE"), 1},
		{m.gitInitFailures, 1},
	} {
		if got := value(t, tc.c); got != tc.want {
			t.Errorf("%v = %v, want %v", tc.c, got, tc.want)
		}
	}
	if n := count(m.rejections); n != 6 {
		t.Errorf("%d rejection series, want 6", n)
	}
	if _, err := New(reg); err == nil {
		t.Error("registering twice on one registry succeeded")
	}
}

func value(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var d dto.Metric
	if err := (<-ch).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

func count(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	return len(ch)
}
