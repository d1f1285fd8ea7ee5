package watch

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// The aggregation is tested on a fake clock, without a kernel or a disk.

var testAgg = aggConfig{coalesce: 50 * time.Millisecond, burstHold: 500 * time.Millisecond, burstEntries: 4, maxPending: 8}

// step is one input to an aggregator at an offset on the fake clock.
type step struct {
	at    time.Duration
	names []string // names changed
	flush bool     // take and publish what is pending
}

func names(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// run feeds steps to a fresh aggregator and returns the batches flushed.
func run(steps []step) (*aggregator, []batch) {
	var a aggregator
	t0 := time.Unix(1_000_000, 0)
	var out []batch
	for _, s := range steps {
		now := t0.Add(s.at)
		for _, n := range s.names {
			a.name(n, now, testAgg)
		}
		if s.flush {
			b := a.take()
			a.published(b, now, testAgg)
			out = append(out, b)
		}
	}
	return &a, out
}

func TestAggregateBatches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []step
		bursts []bool // per flushed batch
		counts []int  // names per flushed batch
		relist []bool
	}{
		{"one name", []step{{names: []string{"a"}}, {at: 50 * time.Millisecond, flush: true}},
			[]bool{false}, []int{1}, []bool{false}},
		{"repeated name is one", []step{{names: []string{"a", "a", "a"}, flush: true}},
			[]bool{false}, []int{1}, []bool{false}},
		{"at the threshold", []step{{names: names("n", 4), flush: true}},
			[]bool{false}, []int{4}, []bool{false}},
		{"over the threshold is a burst", []step{{names: names("n", 5), flush: true}},
			[]bool{true}, []int{5}, []bool{false}},
		{"over MaxPending is a relist", []step{{names: names("n", 9), flush: true}},
			[]bool{true}, []int{0}, []bool{true}},
		{"slow steady names add up within a second", []step{
			{names: names("a", 3), flush: true},
			{at: 300 * time.Millisecond, names: names("b", 2), flush: true}},
			[]bool{false, true}, []int{3, 2}, []bool{false, false}},
		{"the rate period restarts after a second", []step{
			{names: names("a", 3), flush: true},
			{at: 1500 * time.Millisecond, names: names("b", 2), flush: true}},
			[]bool{false, false}, []int{3, 2}, []bool{false, false}},
		// After a burst the rate period does not restart before
		// hotUntil (burstHold plus a second after the burst's flush): names
		// that keep coming slowly still add up to a burst.
		{"a burst holds the rate period past a second", []step{
			{names: names("a", 5), flush: true},
			{at: 600 * time.Millisecond, names: names("b", 3), flush: true},
			{at: 1200 * time.Millisecond, names: names("c", 2), flush: true}},
			[]bool{true, false, true}, []int{5, 3, 2}, []bool{false, false, false}},
		{"the period restarts once the hold is over", []step{
			{names: names("a", 5), flush: true},
			{at: 600 * time.Millisecond, names: names("b", 3), flush: true},
			{at: 1600 * time.Millisecond, names: names("c", 2), flush: true}},
			[]bool{true, false, false}, []int{5, 3, 2}, []bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := run(tc.steps)
			if len(got) != len(tc.bursts) {
				t.Fatalf("%d batches, want %d", len(got), len(tc.bursts))
			}
			for i, b := range got {
				if b.burst != tc.bursts[i] || len(b.names) != tc.counts[i] || b.relist != tc.relist[i] {
					t.Fatalf("batch %d: burst=%v names=%d relist=%v, want %v %d %v",
						i, b.burst, len(b.names), b.relist, tc.bursts[i], tc.counts[i], tc.relist[i])
				}
			}
		})
	}
}

func TestAggregateArm(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		want  time.Duration
	}{
		{"quiet directory coalesces", nil, testAgg.coalesce},
		{"after a plain batch", []step{{names: []string{"a"}, flush: true}}, testAgg.coalesce},
		{"after a burst the next is held", []step{{names: names("n", 5), flush: true}}, testAgg.burstHold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := run(tc.steps)
			d, ok := a.arm(testAgg)
			if !ok || d != tc.want {
				t.Fatalf("arm = %v, %v; want %v, true", d, ok, tc.want)
			}
			if _, again := a.arm(testAgg); again {
				t.Fatal("an armed directory armed again")
			}
			a.take()
			if _, ok := a.arm(testAgg); !ok {
				t.Fatal("a flushed directory did not arm again")
			}
		})
	}
}

func TestAggregateTakeResets(t *testing.T) {
	var a aggregator
	a.name("x", time.Unix(0, 0), testAgg)
	a.touch()
	a.overflowed()
	b := a.take()
	if !b.self || !b.refresh || len(b.names) != 1 {
		t.Fatalf("batch %+v", b)
	}
	if b = a.take(); b.self || b.refresh || b.burst || b.relist || len(b.names) != 0 {
		t.Fatalf("second batch not empty: %+v", b)
	}
}

func TestRefreshed(t *testing.T) {
	k := func(ino, rev uint64) knownEntry { return knownEntry{ino: ino, rev: rev} }
	known := map[string]knownEntry{"same": k(1, 1), "changed": k(2, 2), "gone": k(3, 3)}
	snap := map[string]knownEntry{"same": k(1, 1), "changed": k(2, 9), "new": k(4, 4)}
	b := refreshed(batch{names: map[string]struct{}{}}, known, snap, testAgg)
	if got := slices.Sorted(maps.Keys(b.names)); !slices.Equal(got, []string{"changed", "gone", "new"}) || b.burst {
		t.Fatalf("refreshed names %v burst %v", got, b.burst)
	}
	for i := range 5 {
		snap[fmt.Sprint("more", i)] = k(uint64(10+i), 1)
	}
	if b := refreshed(batch{names: map[string]struct{}{}}, known, snap, testAgg); !b.burst || !b.relist {
		t.Fatalf("a large difference is not one reload: %+v", b)
	}
}
