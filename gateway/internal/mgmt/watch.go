package mgmt

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/requestid"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// WatchRecv returns the next event of a watch stream; its errors are
// client-safe statuses (rewrapped like every sidecar error).
type WatchRecv func() (*workspacev1.WatchEvent, error)

// Watch opens agentID's sidecar WatchService stream for an authenticated
// admin (live changes, issue #16). The stream has no deadline: it ends when
// ctx does, or with the sidecar. Opening is counted as the action "watch".
func (s *Service) Watch(ctx context.Context, agentID string, req *workspacev1.WatchRequest) (WatchRecv, error) {
	start := s.now()
	ag, id, agentLabel, err := s.sidecarFor(ctx, agentID, "live changes")
	if err != nil {
		s.observe("watch", agentLabel, err, start)
		return nil, err
	}
	sctx := metadata.NewOutgoingContext(ctx, metadata.Pairs(
		rpcmeta.RequestID, requestid.From(ctx),
		rpcmeta.Operator, id.Operator,
	))
	// Opening a stream does not wait for the sidecar; the first Recv does,
	// bounded by the agent's call timeout so a dead sidecar is a quick 503.
	st, err := workspacev1.NewWatchServiceClient(ag.conn).Watch(sctx, req)
	if err != nil {
		err = rewrap(ctx, err, agentID)
		s.observe("watch", agentLabel, err, start)
		return nil, err
	}
	recv := func() (*workspacev1.WatchEvent, error) {
		ev, err := st.Recv()
		if err != nil {
			return nil, rewrap(ctx, err, agentID)
		}
		return ev, nil
	}
	type first struct {
		ev  *workspacev1.WatchEvent
		err error
	}
	ch := make(chan first, 1)
	go func() { ev, err := recv(); ch <- first{ev, err} }()
	var f first
	select {
	case f = <-ch:
	case <-time.After(ag.timeout):
		f.err = unavailable(agentID)
	}
	s.observe("watch", agentLabel, f.err, start)
	if f.err != nil {
		return nil, f.err
	}
	return func() (*workspacev1.WatchEvent, error) {
		if ev := f.ev; ev != nil { // the first event, read above
			f.ev = nil
			return ev, nil
		}
		return recv()
	}, nil
}
