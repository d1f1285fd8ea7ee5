package session

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func TestSealedSession(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	s := New(clock, time.Hour, 3, key(1))
	a, err := s.Create("alice", "admin")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.SID) != 43 || len(a.CSRFToken) != 43 || a.SID == a.CSRFToken {
		t.Errorf("ids: %q %q (want 32 random bytes, base64url)", a.SID, a.CSRFToken)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(a.ID)
	for _, secret := range []string{"alice", "admin", a.CSRFToken, a.SID} {
		if strings.Contains(a.ID, secret) || bytes.Contains(raw, []byte(secret)) {
			t.Errorf("cookie value shows %q in the clear", secret)
		}
	}
	got, ok := s.Get(a.ID)
	if !ok || got.Operator != "alice" || got.Role != "admin" || got.CSRFToken != a.CSRFToken || got.ID != a.ID {
		t.Fatalf("Get = %+v %v", got, ok)
	}
	if !got.CheckCSRF(a.CSRFToken) || got.CheckCSRF("") || got.CheckCSRF("x") {
		t.Error("CheckCSRF")
	}

	t.Run("another process with the same key accepts it (restart, replicas)", func(t *testing.T) {
		if _, ok := New(clock, time.Hour, 3, key(1)).Get(a.ID); !ok {
			t.Error("refused by a second store with the same key")
		}
	})
	t.Run("another key refuses it", func(t *testing.T) {
		if _, ok := New(clock, time.Hour, 3, key(2)).Get(a.ID); ok {
			t.Error("accepted under another key")
		}
		if _, ok := New(clock, time.Hour, 3).Get(a.ID); ok {
			t.Error("accepted under a random key")
		}
	})
	t.Run("rotation: the new key seals, the old one still opens", func(t *testing.T) {
		r := New(clock, time.Hour, 3, key(2), key(1))
		if _, ok := r.Get(a.ID); !ok {
			t.Error("old-key session refused after rotation")
		}
		b, _ := r.Create("bob", "admin")
		if _, ok := New(clock, time.Hour, 3, key(2)).Get(b.ID); !ok {
			t.Error("new session not sealed with the first key")
		}
		if _, ok := New(clock, time.Hour, 3, key(1)).Get(b.ID); ok {
			t.Error("new session opens under the old key only")
		}
	})
	t.Run("tampered or garbage values are refused", func(t *testing.T) {
		b := []byte(a.ID)
		for i := 0; i < len(b); i += 7 {
			c := append([]byte(nil), b...)
			if c[i] == 'A' {
				c[i] = 'B'
			} else {
				c[i] = 'A'
			}
			if _, ok := s.Get(string(c)); ok {
				t.Fatalf("tampered value accepted (byte %d)", i)
			}
		}
		for _, v := range []string{"", "x", "AQ", a.ID[:20], "not base64!"} {
			if _, ok := s.Get(v); ok {
				t.Errorf("Get(%q) accepted", v)
			}
		}
	})
	t.Run("sign-out revokes it here", func(t *testing.T) {
		c, _ := s.Create("carol", "admin")
		s.Delete(c.ID)
		if _, ok := s.Get(c.ID); ok {
			t.Error("signed-out session still accepted")
		}
		if _, ok := s.Get(a.ID); !ok {
			t.Error("another session was signed out too")
		}
		s.Delete("garbage") // ignored
	})
	t.Run("expiry is the server's", func(t *testing.T) {
		now = now.Add(time.Hour)
		if _, ok := s.Get(a.ID); ok {
			t.Error("expired session accepted")
		}
		now = now.Add(-time.Hour)
	})
}

func TestRevocationListBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	s := New(clock, time.Hour, 3, key(1))
	var ids []string
	for i := 0; i < 5; i++ {
		c, _ := s.Create("x", "admin")
		ids = append(ids, c.ID)
		s.Delete(c.ID)
		now = now.Add(time.Second)
	}
	if s.Len() != 3 {
		t.Fatalf("Len = %d, want 3", s.Len())
	}
	// The ones dropped stay refused: the floor is the latest dropped expiry.
	for i, id := range ids {
		if _, ok := s.Get(id); ok {
			t.Errorf("signed-out session %d is accepted after the list overflowed", i)
		}
	}
	if want := time.Unix(1_000_000+1, 0).Add(time.Hour); !s.Floor().Equal(want) {
		t.Errorf("floor %v, want %v", s.Floor(), want)
	}
	// A live session newer than the floor still works.
	live, _ := s.Create("z", "admin")
	if _, ok := s.Get(live.ID); !ok {
		t.Error("a live session newer than the floor is refused")
	}
	// Expired revocations go first.
	now = now.Add(2 * time.Hour)
	c, _ := s.Create("y", "admin")
	s.Delete(c.ID)
	if s.Len() != 1 {
		t.Errorf("Len after expiry = %d, want 1", s.Len())
	}
}

func TestRevocationsShared(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	s := New(clock, time.Hour, 3, key(1))
	c, _ := s.Create("x", "admin")
	pending, ok := s.RevocationOf(c.ID)
	if !ok || pending.ID != Digest(c.SID) || !pending.Expires.Equal(c.Expires) {
		t.Fatalf("RevocationOf = %+v %v, want the digest of the session's SID and its expiry", pending, ok)
	}
	if _, ok := s.Get(c.ID); !ok {
		t.Fatal("RevocationOf signed the session out")
	}
	rev, ok := s.Delete(c.ID)
	if !ok || rev != pending {
		t.Fatalf("Delete = %+v %v, want %+v", rev, ok, pending)
	}
	if strings.Contains(rev.ID, c.SID) || len(rev.ID) != 43 {
		t.Errorf("the revocation shows the SID: %q", rev.ID)
	}
	if _, ok := s.Delete("garbage"); ok {
		t.Error("Delete of garbage returned a revocation")
	}
	if _, ok := s.RevocationOf(c.ID); ok {
		t.Error("RevocationOf a signed-out session")
	}

	// Another replica learns it by digest alone.
	other := New(clock, time.Hour, 3, key(1))
	if _, ok := other.Get(c.ID); !ok {
		t.Fatal("the other store refuses a live session")
	}
	if n := other.Revoke(s.Revocations()...); n != 1 {
		t.Errorf("Revoke added %d, want 1", n)
	}
	if _, ok := other.Get(c.ID); ok {
		t.Error("the other store accepts a session revoked by digest")
	}
	if n := other.Revoke(rev); n != 0 {
		t.Errorf("a repeated revocation counted as new (%d)", n)
	}

	id := func(b byte) string { return base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	if n := other.Revoke(
		Revocation{ID: "short", Expires: now.Add(time.Minute)},
		Revocation{ID: strings.Repeat("!", 43), Expires: now.Add(time.Minute)},
		Revocation{ID: id(9), Expires: now},
	); n != 0 || other.Len() != 1 {
		t.Errorf("malformed or expired revocations kept: added %d, len %d", n, other.Len())
	}

	// An expiry beyond RevocationBound (here MaxRevocationLifetime: the
	// lifetime is shorter) is cut to it.
	now = now.Add(2 * time.Hour)
	other.Revoke(Revocation{ID: id(20), Expires: time.Unix(1<<62, 0)})
	if got := other.Revocations(); len(got) != 1 || !got[0].Expires.Equal(now.Add(MaxRevocationLifetime)) {
		t.Errorf("a far-future expiry: %+v, want now + MaxRevocationLifetime", got)
	}
	other.RaiseFloor(time.Unix(1<<62, 0))
	if !other.Floor().Equal(now.Add(MaxRevocationLifetime)) {
		t.Errorf("a far-future floor: %v, want now + MaxRevocationLifetime", other.Floor())
	}

	// A merge beyond max keeps the max entries furthest from expiry.
	var many []Revocation
	for i := 0; i < 10; i++ {
		many = append(many, Revocation{ID: id(byte(i)), Expires: now.Add(time.Duration(i+1) * time.Minute)})
	}
	b := New(clock, time.Hour, 3, key(1))
	b.Revoke(many...)
	got := map[string]bool{}
	for _, r := range b.Revocations() {
		got[r.ID] = true
	}
	if len(got) != 3 || !got[id(9)] || !got[id(8)] || !got[id(7)] {
		t.Errorf("after a merge beyond max: %v, want the 3 latest expiries", got)
	}
	if !b.Floor().Equal(now.Add(7 * time.Minute)) {
		t.Errorf("floor after the merge %v, want the 7th expiry", b.Floor())
	}
}
