// Package session is the gateway's in-memory store of portal login sessions.
//
// Guarantees: session ids and CSRF tokens are 32 random bytes from
// crypto/rand; sessions expire after a fixed lifetime; the store is bounded
// (when full, expired sessions are dropped first, then the oldest). Limits:
// sessions live only in this process, so a restart signs everyone out and
// several gateway replicas do not share sessions.
package session

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// CookieName is the session cookie set by POST /api/v1/agent-gateway/session.
const CookieName = "awf_session"

// DefaultLifetime is how long a session is valid after login.
const DefaultLifetime = 12 * time.Hour

// DefaultMaxSessions bounds the store.
const DefaultMaxSessions = 10000

// Session is one signed-in portal user.
type Session struct {
	ID        string
	Operator  string
	Role      string
	CSRFToken string
	Created   time.Time
	Expires   time.Time
}

// Store holds sessions in memory. The zero value is not usable; use New.
type Store struct {
	mu       sync.Mutex
	now      func() time.Time
	lifetime time.Duration
	max      int
	sessions map[string]*Session
}

// New returns a store. now may be nil (time.Now); lifetime and max <= 0 take
// the defaults.
func New(now func() time.Time, lifetime time.Duration, max int) *Store {
	if now == nil {
		now = time.Now
	}
	if lifetime <= 0 {
		lifetime = DefaultLifetime
	}
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &Store{now: now, lifetime: lifetime, max: max, sessions: map[string]*Session{}}
}

// Lifetime is the session lifetime.
func (s *Store) Lifetime() time.Duration { return s.lifetime }

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Create starts a session for an authenticated operator.
func (s *Store) Create(operator, role string) (Session, error) {
	id, err := randomToken()
	if err != nil {
		return Session{}, err
	}
	csrf, err := randomToken()
	if err != nil {
		return Session{}, err
	}
	now := s.now()
	sess := &Session{ID: id, Operator: operator, Role: role, CSRFToken: csrf, Created: now, Expires: now.Add(s.lifetime)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= s.max {
		s.evictLocked(now)
	}
	s.sessions[id] = sess
	return *sess, nil
}

// evictLocked drops expired sessions, then the oldest until below max.
func (s *Store) evictLocked(now time.Time) {
	for id, v := range s.sessions {
		if !now.Before(v.Expires) {
			delete(s.sessions, id)
		}
	}
	for len(s.sessions) >= s.max {
		var oldest *Session
		for _, v := range s.sessions {
			if oldest == nil || v.Created.Before(oldest.Created) {
				oldest = v
			}
		}
		delete(s.sessions, oldest.ID)
	}
}

// Get returns the live session with this id.
func (s *Store) Get(id string) (Session, bool) {
	if id == "" {
		return Session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.sessions[id]
	if !ok {
		return Session{}, false
	}
	if !s.now().Before(v.Expires) {
		delete(s.sessions, id)
		return Session{}, false
	}
	return *v, true
}

// Delete ends a session; unknown ids are ignored.
func (s *Store) Delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
}

// Len is the number of stored sessions (for tests and metrics).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// CheckCSRF compares a presented CSRF token with the session's in constant time.
func (v Session) CheckCSRF(presented string) bool {
	return presented != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(v.CSRFToken)) == 1
}
