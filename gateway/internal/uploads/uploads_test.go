package uploads

import (
	"io"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
}

func TestSlots(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(2, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	r1, ok1 := s.Acquire("a", "webdav")
	_, ok2 := s.Acquire("a", "rest")
	if !ok1 || !ok2 {
		t.Fatal("two slots of two refused")
	}
	if _, ok := s.Acquire("a", "rest"); ok {
		t.Fatal("a third slot of two")
	}
	if _, ok := s.Acquire("b", "webdav"); !ok {
		t.Fatal("another agent's slot refused: the cap is per agent")
	}
	if got := value(t, s.refused.WithLabelValues("a", "rest")); got != 1 {
		t.Errorf("refused{a,rest} = %v", got)
	}
	r1()
	r1() // idempotent: frees one slot, not two
	if _, ok := s.Acquire("a", "webdav"); !ok {
		t.Fatal("a freed slot is not free")
	}
	if _, ok := s.Acquire("a", "webdav"); ok {
		t.Fatal("a release counted twice")
	}
	if got := value(t, s.inFlight.WithLabelValues("a")); got != 2 {
		t.Errorf("in flight{a} = %v, want 2", got)
	}
}

func TestNoCapAndBodyEnd(t *testing.T) {
	s, err := New(0, nil, nil)
	if err != nil || s != nil {
		t.Fatalf("New(0) = %v, %v; want no cap", s, err)
	}
	if _, ok := s.Acquire("a", "rest"); !ok {
		t.Fatal("no cap refused")
	}
	c, _ := New(1, nil, nil)
	rel, _ := c.Acquire("a", "rest")
	b := Body(io.NopCloser(strings.NewReader("xy")), rel)
	if _, ok := c.Acquire("a", "rest"); ok {
		t.Fatal("slot free before the body ended")
	}
	if _, err := io.ReadAll(b); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Acquire("a", "rest"); !ok {
		t.Fatal("slot not freed at the body's end")
	}
}

// An agent the gateway does not know is never counted: a made-up name
// (answered 404 further on) adds no slot and no metric series.
func TestUnknownAgentNotCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(1, func(id string) bool { return id == "codex-a" }, reg)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, ok := s.Acquire("made-up", "rest"); !ok {
			t.Fatal("an unknown agent was refused a slot")
		}
	}
	if _, ok := s.Acquire("codex-a", "rest"); !ok {
		t.Fatal("codex-a refused its first slot")
	}
	if _, ok := s.Acquire("codex-a", "rest"); ok {
		t.Fatal("codex-a got a second slot over its cap of 1")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "made-up" {
					t.Errorf("%s has a series for the unknown agent", mf.GetName())
				}
			}
		}
	}
}
