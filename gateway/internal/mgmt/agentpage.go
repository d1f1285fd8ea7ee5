package mgmt

import (
	"encoding/base64"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// Agent list paging (ListAgents): pages of at most maxAgentPage agents
// sorted by agent_id, filtered by a case-insensitive substring of the ID.
// The cursor is the last agent_id of the previous page (base64url), so a
// page stays correct while agents come and go between calls: nothing is
// skipped that existed throughout, and nothing is listed twice.
const (
	defaultAgentPage = 100
	maxAgentPage     = 1000
	maxAgentQuery    = 253
)

// pageAgents returns one page of all (sorted by agent_id). The agents
// returned are copies: the caller's snapshot is never shared with the
// response.
func pageAgents(all []*workspacev1.Agent, req *workspacev1.ListAgentsRequest) (*workspacev1.ListAgentsResponse, error) {
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, Error(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, "page_size must not be negative")
	case size == 0:
		size = defaultAgentPage
	case size > maxAgentPage:
		size = maxAgentPage
	}
	if len(req.GetQuery()) > maxAgentQuery {
		return nil, Error(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, "query is longer than an agent ID can be")
	}
	after, err := decodeAgentCursor(req.GetCursor())
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(req.GetQuery())
	out := &workspacev1.ListAgentsResponse{}
	start, _ := slices.BinarySearchFunc(all, after, func(a *workspacev1.Agent, id string) int { return strings.Compare(a.GetAgentId(), id) })
	for i, a := range all {
		if q != "" && !strings.Contains(strings.ToLower(a.GetAgentId()), q) {
			continue
		}
		out.Total++
		if after != "" && (i < start || a.GetAgentId() == after) {
			continue
		}
		if len(out.Agents) == size {
			if out.NextCursor == "" {
				out.NextCursor = encodeAgentCursor(out.Agents[size-1].GetAgentId())
			}
			continue
		}
		out.Agents = append(out.Agents, copyAgent(a))
	}
	return out, nil
}

func copyAgent(a *workspacev1.Agent) *workspacev1.Agent {
	return &workspacev1.Agent{
		AgentId:                  a.GetAgentId(),
		Provider:                 a.GetProvider(),
		ProjectManagementEnabled: a.GetProjectManagementEnabled(),
		IsDefault:                a.GetIsDefault(),
		State:                    a.GetState(),
		StateSince:               a.GetStateSince(),
		Source:                   a.GetSource(),
	}
}

func encodeAgentCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("a:" + id))
}

func decodeAgentCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 3 || len(b) > 2+maxAgentQuery || string(b[:2]) != "a:" {
		return "", Error(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_CURSOR, "cursor is not one this gateway returned")
	}
	return string(b[2:]), nil
}
