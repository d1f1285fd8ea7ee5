package mgmt

import (
	"context"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// GetUsage answers the agent's usage (projects, Global, the volumes) from
// its sidecar (issue #25; the sidecar's cache, davfs/usage).
func (s *Service) GetUsage(ctx context.Context, req *workspacev1.GetAgentUsageRequest) (*workspacev1.GetUsageResponse, error) {
	return routed(ctx, s, call{action: "get_usage", agentID: req.GetAgentId()}, func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.GetUsageResponse, error) {
		return cl.GetUsage(ctx, &workspacev1.GetUsageRequest{ProjectNames: req.GetProjectNames(), Global: req.GetGlobal()})
	})
}
