package sidecar

import (
	"testing"
	"time"
)

// A peer reconnecting in a loop gets one log line per reason every
// refusalLogInterval; the next line says how many were left out.
func TestRefusalLogLimitsLines(t *testing.T) {
	r := &refusalLog{last: map[string]time.Time{}, suppressed: map[string]int{}}
	t0 := time.Unix(1000, 0)
	if ok, n := r.allow("untrusted", t0); !ok || n != 0 {
		t.Fatalf("first: %v %d", ok, n)
	}
	for i := range 5 {
		if ok, _ := r.allow("untrusted", t0.Add(time.Duration(i)*time.Second)); ok {
			t.Fatalf("line %d within the interval was logged", i)
		}
	}
	if ok, _ := r.allow("handshake", t0.Add(time.Second)); !ok {
		t.Fatal("another reason was held back")
	}
	if ok, n := r.allow("untrusted", t0.Add(refusalLogInterval)); !ok || n != 5 {
		t.Fatalf("after the interval: %v, suppressed %d, want 5", ok, n)
	}
}
