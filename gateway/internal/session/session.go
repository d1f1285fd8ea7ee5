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
// Sign-out (Delete) puts the session's random id (SID, never the cookie) on
// a revocation list until the session would have expired. The list is
// bounded (DefaultMaxSessions; beyond it expired entries go first, then
// those closest to expiry, whose copies then work again until they expire).
//
// Replicas share sign-outs (Peers, auth.session.peers): the replica that
// signs a session out records it, sends it to every peer and answers once
// all acknowledged or SignOutWait (1 s) passed; unacknowledged deliveries
// retry in the background for about 8 s. A starting replica listens, pulls
// every peer's list and reports ready (/readyz) once each peer answered or
// SyncTimeout (5 s) passed; every replica pulls again each ResyncInterval
// (1 min), which catches up on deliveries that failed. Peer names are
// resolved at each use, so a headless Service lists every replica; each
// resolved address must reach one replica (not a ClusterIP or load
// balancer). Resolving and delivering run under the peers' own context,
// not the sign-out request's, so a client that goes away does not stop
// them. A replica recognises itself by a random instance id in signed
// answers, and leaves out for good only a local address on its own port
// that answered so; any other address is tried again (with a fresh
// connection) next time.
//
// The peer endpoint (PeerPath) is served on the metrics listener, not the
// public port: that listener is cluster-internal (no Ingress or public
// Service routes to it, and the gateway's NetworkPolicy admits only the
// gateway's pods and the monitoring namespace), so a request from outside
// the cluster cannot reach it at all, and the public port's surface stays
// what the portal, REST and WebDAV need. The endpoint is authenticated on
// its own too: every request carries an HMAC-SHA256 (key derived with HKDF
// from each session key, label "agent-gateway session peers v1"; signed
// with every key, accepted under any, so a key rotation rolling through
// the replicas does not cut them off) over method, path, timestamp, a
// nonce, the sender's instance id and the body's SHA-256, which the
// request also carries in a header: the signature is checked before any
// of the body is read. A timestamp more than PeerWindow (30 s) off, a
// nonce seen before, or a nonce or instance id not of 22 base64url
// characters is refused; only then is the body read (its Content-Length
// at most MaxPeerBody, within PeerTimeout, GET none) and compared with the
// signed digest. At most 4 requests are served at once (beyond: 503).
// Anything refused gets 403, adds nothing and is counted; the log line
// names the reason (never a header value) at most every 10 s per reason.
// Answers are signed the same way, bound to the request's nonce, so a
// replica merges lists only from key holders. A revocation's expiry is
// cut to MaxRevocationLifetime (30 days, or the store's lifetime if
// longer) from now.
//
// Limits: peer traffic is authenticated, not encrypted (SIDs of signed-out
// sessions open nothing). Until a sign-out reaches a replica (normally
// before the sign-out response; otherwise at that replica's first resync
// once it reaches the signing one) a copy of the cookie still works there. When every replica restarts at once, or the only one does,
// no replica holds the list any more: copies of signed-out cookies taken
// before their sign-out are accepted again until they expire. A replica
// that reaches no peer within SyncTimeout starts with an empty list (it
// logs so) and fills it at the next resync. The browser that signs out
// drops its cookie, so only a copy taken beforehand outlives sign-out;
// shorter lifetimes narrow that window, and rotating the session key (the
// old one removed) ends every session at once.
package session

import (
	"cmp"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
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

// MaxRevocationLifetime bounds how far in the future a revocation's expiry
// may be (unless this store's own lifetime is longer).
const MaxRevocationLifetime = 30 * 24 * time.Hour

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
	revoked map[string]time.Time // SID -> expiry
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
	s.mu.Lock()
	_, revoked := s.revoked[p.SID]
	s.mu.Unlock()
	if revoked {
		return Session{}, false
	}
	return p.session(value), true
}

// Revocation is one signed-out session: its random id (never the cookie)
// and when the session would have expired, after which it is forgotten.
type Revocation struct {
	SID     string
	Expires time.Time
}

// Delete ends the session sealed in a cookie value (sign-out) here and
// returns its revocation for other replicas; values that do not open, or
// have expired, are ignored (ok false).
func (s *Store) Delete(value string) (Revocation, bool) {
	p, ok := s.open(value)
	if !ok {
		return Revocation{}, false
	}
	r := Revocation{SID: p.SID, Expires: time.Unix(p.Expires, 0)}
	s.Revoke(r)
	return r, true
}

// Revoke adds revocations (from this process or a peer) and returns how
// many were new. Malformed (not a SID as Create makes: 43 base64url
// characters) or expired ones are skipped; an expiry beyond
// MaxRevocationLifetime (or this store's lifetime, if longer) from now is
// cut to it. The list stays
// bounded: beyond max, expired entries go first, then those closest to
// expiry.
func (s *Store) Revoke(revs ...Revocation) int {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	added := 0
	// A peer may run a longer lifetime than this replica (a rollout), so
	// the bound is the longer of the two; it keeps a key holder's far
	// future expiry from pinning an entry for good.
	latest := now.Add(max(s.lifetime, MaxRevocationLifetime))
	for _, r := range revs {
		if !validID(r.SID, 32) || !now.Before(r.Expires) {
			continue
		}
		if r.Expires.After(latest) {
			r.Expires = latest
		}
		old, known := s.revoked[r.SID]
		if !known {
			added++
		}
		if !known || r.Expires.After(old) {
			s.revoked[r.SID] = r.Expires
		}
	}
	if len(s.revoked) > s.max {
		s.trimLocked(now)
	}
	return added
}

// trimLocked drops expired revocations, then those closest to expiry until
// max remain (one sort, so merging a peer's whole list stays O(n log n)).
func (s *Store) trimLocked(now time.Time) {
	dropExpired(s.revoked, now)
	if len(s.revoked) <= s.max {
		return
	}
	all := make([]Revocation, 0, len(s.revoked))
	for id, exp := range s.revoked {
		all = append(all, Revocation{SID: id, Expires: exp})
	}
	slices.SortFunc(all, func(a, b Revocation) int { return a.Expires.Compare(b.Expires) })
	for _, r := range all[:len(all)-s.max] {
		delete(s.revoked, r.SID)
	}
}

// dropExpired deletes the entries of m (key -> expiry) that expired at now:
// the revocation list and the peers' nonce cache.
func dropExpired(m map[string]time.Time, now time.Time) {
	maps.DeleteFunc(m, func(_ string, until time.Time) bool { return !now.Before(until) })
}

// Revocations is a snapshot of the live revocations (what a starting peer
// pulls), at most max entries.
func (s *Store) Revocations() []Revocation {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Revocation, 0, len(s.revoked))
	for id, exp := range s.revoked {
		if now.Before(exp) {
			out = append(out, Revocation{SID: id, Expires: exp})
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
