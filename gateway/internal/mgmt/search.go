package mgmt

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/requestid"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// SearchRecv returns the next message of a search stream; its errors are
// client-safe statuses (rewrapped like every sidecar error).
type SearchRecv func() (*workspacev1.SearchResult, error)

// searchMargin is what a search stream's deadline adds to the search's
// own time limit (which ends it with a truncated summary, not an error).
const (
	searchMargin       = 5 * time.Second
	searchDefaultLimit = 10 * time.Second
	searchMaxLimit     = 60 * time.Second
)

// Search opens agentID's sidecar Search stream for an authenticated admin
// and returns its first message (or error, with the table's status) and a
// function for the rest. The stream ends with ctx (the client going away
// cancels the sidecar's walk) or at the search's time limit plus a margin.
// A read is not audited; it is counted as the action "search".
func (s *Service) Search(ctx context.Context, req *workspacev1.SearchProjectRequest) (*workspacev1.SearchResult, SearchRecv, context.CancelFunc, error) {
	start := s.now()
	agentID := req.GetAgentId()
	ag, id, agentLabel, err := s.sidecarFor(ctx, agentID, "search")
	if err != nil {
		s.observe("search", agentLabel, err, start)
		return nil, nil, nil, err
	}
	limit := time.Duration(req.GetTimeoutMs()) * time.Millisecond
	if limit <= 0 {
		limit = searchDefaultLimit
	}
	sctx, cancel := context.WithTimeout(ctx, min(limit, searchMaxLimit)+searchMargin)
	sctx = metadata.NewOutgoingContext(sctx, metadata.Pairs(
		rpcmeta.RequestID, requestid.From(ctx),
		rpcmeta.Operator, id.Operator,
	))
	st, err := ag.client.Search(sctx, sidecarSearch(req))
	if err != nil {
		cancel()
		err = rewrap(ctx, err, agentID)
		s.observe("search", agentLabel, err, start)
		return nil, nil, nil, err
	}
	recv := func() (*workspacev1.SearchResult, error) {
		m, err := st.Recv()
		if err != nil {
			return nil, rewrap(ctx, err, agentID)
		}
		return m, nil
	}
	first, err := recv()
	s.observe("search", agentLabel, err, start)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return first, recv, cancel, nil
}

func sidecarSearch(r *workspacev1.SearchProjectRequest) *workspacev1.SearchRequest {
	return &workspacev1.SearchRequest{
		Workspace: r.GetWorkspace(), Path: r.GetPath(), Query: r.GetQuery(), Mode: r.GetMode(),
		Regex: r.GetRegex(), CaseSensitive: r.GetCaseSensitive(), Include: r.GetInclude(), Exclude: r.GetExclude(),
		MaxResults: r.GetMaxResults(), MaxBytes: r.GetMaxBytes(), MaxFileBytes: r.GetMaxFileBytes(), TimeoutMs: r.GetTimeoutMs(),
	}
}
