package mgmt

import (
	"net/url"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/config"
)

// Discovered is one agent found through the Kubernetes API (package
// discovery): its sidecar's gRPC address and WebDAV base URL from a ready
// address of its EndpointSlices, or Ready false when it has none.
type Discovered struct {
	ID       string
	Provider string
	Ready    bool
	// GRPC is host:port; DAV the https:// base URL (nil: no WebDAV port).
	GRPC string
	DAV  *url.URL
	// Sidecar holds the call deadlines (agentRuntime.discovery).
	Sidecar *config.Sidecar
}

// lookup returns agent id's current entry (nil: unknown).
func (s *Service) lookup(id string) *agent {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.agents[id]
}

// Known reports whether id is a listed agent, static or discovered.
func (s *Service) Known(id string) bool { return s.lookup(id) != nil }

// DavEndpoint is agent id's sidecar WebDAV base URL: ok is false for an
// unknown agent, the URL nil for one without WebDAV now (no sidecar, no
// ready address).
func (s *Service) DavEndpoint(id string) (*url.URL, bool) {
	ag := s.lookup(id)
	if ag == nil {
		return nil, false
	}
	return ag.dav, true
}

// Unreachable reports whether id is a discovered agent with no ready
// address now.
func (s *Service) Unreachable(id string) bool {
	ag := s.lookup(id)
	return ag != nil && ag.unreachable
}

// AgentIDs lists every agent's id, sorted.
func (s *Service) AgentIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, len(s.list))
	for i, a := range s.list {
		out[i] = a.GetAgentId()
	}
	return out
}

// SetDiscovered adds or updates a discovered agent. A static agent of the
// same id wins (logged once). A changed address gets a new connection
// (the old one is closed); a ready agent that becomes unready keeps no
// address and is listed UNREACHABLE since now.
func (s *Service) SetDiscovered(d Discovered) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.agents[d.ID]
	if old != nil && !old.discovered {
		if !s.clashes[d.ID] {
			s.clashes[d.ID] = true
			s.log.Warn("a discovered agent has the id of a static one; the static agent (agentRuntime.agents) is kept", "agent", d.ID)
		}
		return nil
	}
	var ag *agent
	switch {
	case !d.Ready:
		ag = &agent{id: d.ID, provider: d.Provider, discovered: true, unreachable: true}
	case old != nil && old.conn != nil && old.target == d.GRPC:
		cp := *old
		ag = &cp
	default:
		var err error
		if ag, err = s.dial(d.ID, d.Provider, d.GRPC, d.Sidecar); err != nil {
			return err
		}
		ag.discovered = true
	}
	ag.dav = nil
	if d.Ready {
		ag.dav = d.DAV
	}
	state := workspacev1.AgentState_AGENT_STATE_READY
	if !d.Ready {
		state = workspacev1.AgentState_AGENT_STATE_UNREACHABLE
	}
	s.agents[d.ID] = ag
	if old != nil && old.conn != nil && old.conn != ag.conn {
		_ = old.conn.Close()
	}
	s.upsertListed(&workspacev1.Agent{
		AgentId: d.ID, Provider: d.Provider, ProjectManagementEnabled: true, IsDefault: d.ID == s.defaultAgent,
		State: state, Source: workspacev1.AgentSource_AGENT_SOURCE_DISCOVERED,
	})
	return nil
}

// upsertListed puts a into the sorted list; its state_since is now when
// the state changed, else the old one.
func (s *Service) upsertListed(a *workspacev1.Agent) {
	i, found := s.position(a.GetAgentId())
	if found {
		prev := s.list[i]
		a.StateSince = prev.GetStateSince()
		if prev.GetState() != a.GetState() || a.StateSince == nil {
			a.StateSince = timestamppb.New(s.now())
		}
		s.list[i] = a
		return
	}
	a.StateSince = timestamppb.New(s.now())
	s.list = slices.Insert(s.list, i, a)
}

func (s *Service) position(id string) (int, bool) {
	return slices.BinarySearchFunc(s.list, id, func(a *workspacev1.Agent, id string) int { return strings.Compare(a.GetAgentId(), id) })
}

// RemoveDiscovered drops a discovered agent (its Service or last
// EndpointSlice is gone) and closes its connection. A static agent of
// that id stays.
func (s *Service) RemoveDiscovered(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clashes, id)
	old := s.agents[id]
	if old == nil || !old.discovered {
		return
	}
	delete(s.agents, id)
	if old.conn != nil {
		_ = old.conn.Close()
	}
	if i, found := s.position(id); found {
		s.list = slices.Delete(s.list, i, i+1)
	}
}
