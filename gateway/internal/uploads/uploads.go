// Package uploads bounds the request bodies in flight per agent across the
// gateway's surfaces (WebDAV PUTs and other WebDAV requests with a body,
// REST requests with a body): limits.uploadsPerAgent (issue #23: a few
// hundred trickling uploads held a thousand file descriptors and threads).
//
// A slot is taken before anything of the request reaches a sidecar and is
// given back when its body has been read to the end (or failed), or when
// the request ends, whichever comes first: a body fully sent stops counting
// while the sidecar commits it. What it does not do: bound the time a body
// takes (the HTTP server's body deadlines do) or the total over all agents.
package uploads

import (
	"io"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/internal/davwire"
)

// RetryAfter is the Retry-After (seconds) of a 429 TOO_MANY_UPLOADS.
const RetryAfter = "2"

// Reason is the errtable reason of the refusal.
const Reason = "TOO_MANY_UPLOADS"

// Slots is the per-agent counter. A nil *Slots has no cap.
type Slots struct {
	max      int
	known    func(agent string) bool
	inFlight *prometheus.GaugeVec
	refused  *prometheus.CounterVec

	mu sync.Mutex
	n  map[string]int // by agent ID
}

// New returns slots of max per agent (max <= 0: no cap, nil), with their
// metrics registered in reg (nil: unregistered). Only an agent known
// reports true for is counted (nil: every agent): a request naming an
// agent that does not exist is answered 404 further on, and must not add
// a metric series per made-up name.
func New(max int, known func(agent string) bool, reg prometheus.Registerer) (*Slots, error) {
	if max <= 0 {
		return nil, nil
	}
	s := &Slots{max: max, known: known, n: map[string]int{},
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agent_gateway_uploads_in_flight",
			Help: "Request bodies in flight by agent (each holds one of limits.uploadsPerAgent slots until it is read to its end).",
		}, []string{"agent_id"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_uploads_refused_total",
			Help: "Requests with a body refused 429 TOO_MANY_UPLOADS because their agent had limits.uploadsPerAgent bodies in flight, by agent and surface (webdav, rest).",
		}, []string{"agent_id", "surface"}),
	}
	if reg != nil {
		var err error
		if s.inFlight, err = davwire.Register(reg, s.inFlight); err != nil {
			return nil, err
		}
		if s.refused, err = davwire.Register(reg, s.refused); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// HasBody reports whether r carries a body (a declared length, or chunked).
func HasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// Acquire takes a slot of agent and returns its release (safe to call more
// than once), or ok=false, counted as refused on surface, when the agent is
// at the cap.
func (s *Slots) Acquire(agent, surface string) (release func(), ok bool) {
	if s == nil || (s.known != nil && !s.known(agent)) {
		return func() {}, true
	}
	s.mu.Lock()
	if s.n[agent] >= s.max {
		s.mu.Unlock()
		s.refused.WithLabelValues(agent, surface).Inc()
		return nil, false
	}
	s.n[agent]++
	s.mu.Unlock()
	g := s.inFlight.WithLabelValues(agent)
	g.Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.n[agent]--; s.n[agent] <= 0 {
				delete(s.n, agent)
			}
			s.mu.Unlock()
			g.Dec()
		})
	}, true
}

// Refuse answers the 429's headers: Retry-After, and Connection: close (the
// body stays unread; the server closes rather than drain a large one).
func Refuse(h http.Header) {
	h.Set("Retry-After", RetryAfter)
	h.Set("Connection", "close")
}

// Body is rc that calls release when it reaches EOF or fails.
func Body(rc io.ReadCloser, release func()) io.ReadCloser { return &body{rc, release} }

type body struct {
	io.ReadCloser
	release func()
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.release()
	}
	return n, err
}
