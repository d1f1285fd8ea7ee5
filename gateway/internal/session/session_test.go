package session

import (
	"testing"
	"time"
)

func TestStore(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	s := New(clock, time.Hour, 3)
	a, err := s.Create("alice", "admin")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.ID) != 43 || len(a.CSRFToken) != 43 || a.ID == a.CSRFToken {
		t.Errorf("ids: %q %q (want 32 random bytes, base64url)", a.ID, a.CSRFToken)
	}
	if got, ok := s.Get(a.ID); !ok || got.Operator != "alice" {
		t.Fatalf("Get = %+v %v", got, ok)
	}
	if !a.CheckCSRF(a.CSRFToken) || a.CheckCSRF("") || a.CheckCSRF("x") {
		t.Error("CheckCSRF")
	}
	// Bounded: the oldest goes when full.
	now = now.Add(time.Second)
	b, _ := s.Create("b", "admin")
	now = now.Add(time.Second)
	c, _ := s.Create("c", "admin")
	now = now.Add(time.Second)
	d, _ := s.Create("d", "admin")
	if s.Len() != 3 {
		t.Errorf("Len = %d", s.Len())
	}
	if _, ok := s.Get(a.ID); ok {
		t.Error("oldest session not evicted")
	}
	for _, x := range []Session{b, c, d} {
		if _, ok := s.Get(x.ID); !ok {
			t.Errorf("session %s evicted", x.Operator)
		}
	}
	// Expiry.
	now = now.Add(time.Hour)
	if _, ok := s.Get(d.ID); ok {
		t.Error("expired session still valid")
	}
	s.Delete(c.ID)
	if _, ok := s.Get(c.ID); ok {
		t.Error("deleted session still valid")
	}
}
