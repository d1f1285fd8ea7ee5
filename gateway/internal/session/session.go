// Package session issues and checks the portal's login sessions as
// self-contained cookies: the session (operator, role, CSRF token, expiry)
// is sealed with AES-256-GCM under a key from the gateway's configuration,
// so a restarted gateway, or any replica holding the same key, accepts it
// without shared storage.
//
// Guarantees: a cookie is opaque (encrypted) and cannot be forged or altered
// without a key (GCM authenticates it); session ids and CSRF tokens are 32
// random bytes from crypto/rand; expiry is checked on the server against the
// sealed expiry, whatever the browser does with Max-Age; the first key seals,
// every configured key opens, so keys can be rotated (add the new key first,
// drop the old one after one session lifetime); without configured keys a
// random key is made at start (sessions then end with the process).
//
// Sign-out (Delete) puts a digest of the session's random id (SHA-256 of
// the SID, never the cookie or the SID itself) on a revocation list until
// the session would have expired. The list is bounded (DefaultMaxSessions):
// beyond it expired entries go first, then those closest to expiry, and the
// store raises its floor to the latest expiry it dropped: every session
// expiring at or before the floor is refused from then on, so an overflow
// signs out the oldest sessions too rather than reopening signed-out ones
// (fail closed). A revocation's expiry is cut to the store's lifetime from
// now.
//
// The store holds the list of this process only. Replicas share their
// sign-outs through the Kubernetes API (gateway/internal/signouts, which
// feeds this store with Revoke and RaiseFloor); a lone gateway keeps the
// list in process, and it ends with the process.
package session

import (
	"cmp"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"
)

// CookieName is the session cookie set by POST /api/v1/agent-gateway/session.
const CookieName = "awf_session"

// MaxLifetime is the longest auth.session.lifetime.
const MaxLifetime = 30 * 24 * time.Hour

// DefaultLifetime is how long a session is valid after login.
const DefaultLifetime = 12 * time.Hour

// DefaultMaxSessions bounds the revocation list.
const DefaultMaxSessions = 10000

// KeySize is the size of a session key: AES-256.
const KeySize = 32

// sealVersion is the first byte of every sealed cookie.
const sealVersion = 1

// aad binds sealed values to their purpose: a value sealed for anything else
// under the same key does not open as a session.
var aad = []byte("agent-gateway session v1")

// Session is one signed-in portal user.
type Session struct {
	// ID is the cookie value: the sealed session.
	ID string
	// SID is the session's random id inside the seal (revocation list key).
	SID       string
	Operator  string
	Role      string
	CSRFToken string
	Created   time.Time
	Expires   time.Time
}

// payload is what is sealed into the cookie.
type payload struct {
	SID      string `json:"s"`
	Operator string `json:"o"`
	Role     string `json:"r"`
	CSRF     string `json:"c"`
	Created  int64  `json:"i"`
	Expires  int64  `json:"e"`
}

// Store seals and opens sessions and remembers signed-out ones. The zero
// value is not usable; use New.
type Store struct {
	now      func() time.Time
	lifetime time.Duration
	max      int
	aeads    []cipher.AEAD // [0] seals; all open

	mu      sync.Mutex
	revoked map[string]time.Time // Digest(SID) -> expiry
	floor   time.Time            // sessions expiring at or before it are refused
}

// New returns a store. now may be nil (time.Now); lifetime and maxRevoked
// <= 0 take the defaults (DefaultLifetime, DefaultMaxSessions). keys are
// 32-byte AES keys, the first one sealing; keys of another size are ignored
// (config validation reports them); with none, a random key is used for
// this process only.
func New(now func() time.Time, lifetime time.Duration, maxRevoked int, keys ...[]byte) *Store {
	if now == nil {
		now = time.Now
	}
	s := &Store{now: now, lifetime: cmp.Or(max(lifetime, 0), DefaultLifetime), max: cmp.Or(max(maxRevoked, 0), DefaultMaxSessions),
		revoked: map[string]time.Time{}}
	for _, k := range keys {
		if a, err := newAEAD(k); err == nil {
			s.aeads = append(s.aeads, a)
		}
	}
	if len(s.aeads) == 0 {
		k := make([]byte, KeySize)
		rand.Read(k) // never fails (Go 1.24+)
		a, _ := newAEAD(k)
		s.aeads = []cipher.AEAD{a}
	}
	return s
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, aes.KeySizeError(len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// Lifetime is the session lifetime.
func (s *Store) Lifetime() time.Duration { return s.lifetime }

// MaxRevocationLifetime bounds how far in the future a revocation's expiry
// may be (unless this store's own lifetime is longer).
const MaxRevocationLifetime = 30 * 24 * time.Hour

// RevocationBound is how far from now a revocation's expiry or the floor
// may reach: the longer of MaxRevocationLifetime and this store's
// lifetime. Not the lifetime alone: another replica may run a longer one
// (a rollout, or its clock a little ahead), and a sign-out cut to this
// replica's lifetime would be forgotten while its cookie still opens
// there. The cookie's own expiry is what normally ends an entry.
func (s *Store) RevocationBound() time.Duration { return max(s.lifetime, MaxRevocationLifetime) }

// randomID returns n random bytes from crypto/rand, base64url without
// padding (crypto/rand.Read never fails since Go 1.24).
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// validID reports whether s has the shape randomID(n) makes.
func validID(s string, n int) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(n) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// Create starts a session for an authenticated operator; its ID is the
// cookie value.
func (s *Store) Create(operator, role string) (Session, error) {
	now := s.now()
	p := payload{SID: randomID(32), Operator: operator, Role: role, CSRF: randomID(32), Created: now.Unix(), Expires: now.Add(s.lifetime).Unix()}
	plain, _ := json.Marshal(p) // strings and integers: cannot fail
	a := s.aeads[0]
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	out := append([]byte{sealVersion}, nonce...)
	out = a.Seal(out, nonce, plain, aad)
	return p.session(base64.RawURLEncoding.EncodeToString(out)), nil
}

// session is the Session sealed as p in the cookie value id.
func (p payload) session(id string) Session {
	return Session{
		ID: id, SID: p.SID, Operator: p.Operator, Role: p.Role, CSRFToken: p.CSRF,
		Created: time.Unix(p.Created, 0), Expires: time.Unix(p.Expires, 0),
	}
}

// open returns the sealed payload of a cookie value that has not expired.
func (s *Store) open(value string) (payload, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < 1 || raw[0] != sealVersion {
		return payload{}, false
	}
	raw = raw[1:]
	for _, a := range s.aeads {
		n := a.NonceSize()
		if len(raw) < n+a.Overhead() {
			return payload{}, false
		}
		plain, err := a.Open(nil, raw[:n], raw[n:], aad)
		if err != nil {
			continue
		}
		var p payload
		if json.Unmarshal(plain, &p) != nil || p.SID == "" || !s.now().Before(time.Unix(p.Expires, 0)) {
			return payload{}, false
		}
		return p, true
	}
	return payload{}, false
}

// Get returns the live session sealed in a cookie value: it opens under one
// of the keys, has not expired and was not signed out here.
func (s *Store) Get(value string) (Session, bool) {
	p, ok := s.open(value)
	if !ok {
		return Session{}, false
	}
	d := Digest(p.SID)
	s.mu.Lock()
	_, revoked := s.revoked[d]
	floored := !time.Unix(p.Expires, 0).After(s.floor)
	s.mu.Unlock()
	if revoked || floored {
		return Session{}, false
	}
	return p.session(value), true
}

// Digest is what a revocation list holds for a session id: SHA-256 of the
// SID, base64url (43 characters), so the list opens nothing and names no
// session id.
func Digest(sid string) string {
	sum := sha256.Sum256([]byte(sid))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Revocation is one signed-out session: the Digest of its SID and when the
// session would have expired, after which it is forgotten.
type Revocation struct {
	ID      string
	Expires time.Time
}

// RevocationOf returns the revocation that signs out the session sealed in
// a cookie value, without recording it; values that do not open, have
// expired or are signed out already give ok false.
func (s *Store) RevocationOf(value string) (Revocation, bool) {
	if _, ok := s.Get(value); !ok {
		return Revocation{}, false
	}
	p, _ := s.open(value)
	return Revocation{ID: Digest(p.SID), Expires: time.Unix(p.Expires, 0)}, true
}

// Delete ends the session sealed in a cookie value (sign-out) in this
// store and returns its revocation; values that do not open, or have
// expired, are ignored (ok false).
func (s *Store) Delete(value string) (Revocation, bool) {
	p, ok := s.open(value)
	if !ok {
		return Revocation{}, false
	}
	r := Revocation{ID: Digest(p.SID), Expires: time.Unix(p.Expires, 0)}
	s.Revoke(r)
	return r, true
}

// Revoke adds revocations (from this process or the shared list) and
// returns how many were new. Malformed (not a Digest: 43 base64url
// characters) or expired ones are skipped; an expiry beyond
// RevocationBound from now is cut to it. The list
// stays bounded: beyond max, expired entries go first, then those closest
// to expiry, raising the floor (see the package doc).
func (s *Store) Revoke(revs ...Revocation) int {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	added := 0
	latest := now.Add(s.RevocationBound())
	for _, r := range revs {
		if !validID(r.ID, sha256.Size) || !now.Before(r.Expires) {
			continue
		}
		if r.Expires.After(latest) {
			r.Expires = latest
		}
		old, known := s.revoked[r.ID]
		if !known {
			added++
		}
		if !known || r.Expires.After(old) {
			s.revoked[r.ID] = r.Expires
		}
	}
	if len(s.revoked) > s.max {
		s.trimLocked(now)
	}
	return added
}

// RaiseFloor refuses every session expiring at or before t from now on
// (the shared list's floor after it overflowed); a lower t changes
// nothing. A floor beyond RevocationBound from now is cut to it.
func (s *Store) RaiseFloor(t time.Time) {
	if latest := s.now().Add(s.RevocationBound()); t.After(latest) {
		t = latest
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.After(s.floor) {
		s.floor = t
	}
}

// Floor is the latest expiry refused wholesale (zero: none).
func (s *Store) Floor() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.floor
}

// trimLocked drops expired revocations, then those closest to expiry until
// max remain, raising the floor to the latest expiry dropped.
func (s *Store) trimLocked(now time.Time) {
	maps.DeleteFunc(s.revoked, func(_ string, until time.Time) bool { return !now.Before(until) })
	if len(s.revoked) <= s.max {
		return
	}
	all := make([]Revocation, 0, len(s.revoked))
	for id, exp := range s.revoked {
		all = append(all, Revocation{ID: id, Expires: exp})
	}
	kept, floor := Bound(all, s.max)
	clear(s.revoked)
	for _, r := range kept {
		s.revoked[r.ID] = r.Expires
	}
	if floor.After(s.floor) {
		s.floor = floor
	}
}

// Bound keeps at most n revocations, those latest to expire, and returns
// them (sorted by expiry, then ID) with the latest expiry it dropped (zero
// when none was): the floor that keeps the dropped ones refused.
func Bound(revs []Revocation, n int) ([]Revocation, time.Time) {
	slices.SortFunc(revs, func(a, b Revocation) int {
		return cmp.Or(a.Expires.Compare(b.Expires), cmp.Compare(a.ID, b.ID))
	})
	if len(revs) <= n {
		return revs, time.Time{}
	}
	drop := len(revs) - n
	return revs[drop:], revs[drop-1].Expires
}

// Revocations is a snapshot of the live revocations.
func (s *Store) Revocations() []Revocation {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Revocation, 0, len(s.revoked))
	for id, exp := range s.revoked {
		if now.Before(exp) {
			out = append(out, Revocation{ID: id, Expires: exp})
		}
	}
	return out
}

// Max is the bound of the revocation list.
func (s *Store) Max() int { return s.max }

// Len is the number of signed-out sessions remembered (tests and metrics).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.revoked)
}

// CheckCSRF compares a presented CSRF token with the session's in constant time.
func (v Session) CheckCSRF(presented string) bool {
	return presented != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(v.CSRFToken)) == 1
}
