package mgmt

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// ListDeletedProjects lists an agent's deleted projects that their
// automatic checkpoints can bring back (no project name needed).
func (c *Checkpoints) ListDeletedProjects(ctx context.Context, req *workspacev1.ListAgentDeletedProjectsRequest) (*workspacev1.ListDeletedProjectsResponse, error) {
	return routedCheckpoint(ctx, c, call{action: "list_deleted_projects", agentID: req.GetAgentId()}, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (*workspacev1.ListDeletedProjectsResponse, error) {
		return sc.ListDeletedProjects(ctx, &workspacev1.ListDeletedProjectsRequest{})
	})
}

// RestoreDeletedProject brings a deleted project back, under its name or
// restore_as; audited like a restore, with the project restored.
func (c *Checkpoints) RestoreDeletedProject(ctx context.Context, req *workspacev1.RestoreAgentDeletedProjectRequest) (*workspacev1.RestoreCheckpointResponse, error) {
	id := truncate(req.GetCheckpointId(), 64)
	auto := &autoCheckpoint{reason: "before_restore"}
	cl := call{action: "restore_deleted_project", agentID: req.GetAgentId(), mutation: true, scope: "PROJECT",
		project: truncate(req.GetProjectName(), 255), dest: truncate(req.GetRestoreAs(), 255), checkpoint: &id, auto: auto}
	return routedCheckpoint(ctx, c, cl, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (*workspacev1.RestoreCheckpointResponse, error) {
		var tr metadata.MD
		out, err := sc.RestoreDeletedProject(ctx, &workspacev1.RestoreDeletedProjectRequest{ProjectName: req.GetProjectName(),
			CheckpointId: req.GetCheckpointId(), RestoreAs: req.GetRestoreAs()}, grpc.Trailer(&tr))
		if out != nil && id == "" {
			id = out.GetCheckpoint().GetId()
		}
		auto.id = autoID(out.GetUndoCheckpointId(), tr)
		return out, err
	})
}
