package mgmt

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// Checkpoints is the in-process CheckpointManagementService: each call is
// routed by agent_id to that agent's sidecar CheckpointService through the
// same path as every other call (Service.do: admin check, deadline,
// metadata, error rewrapping, metrics), and create, restore and delete are
// audited (never content: the workspace, the path and the checkpoint ID).
type Checkpoints struct {
	workspacev1.UnimplementedCheckpointManagementServiceServer
	s *Service
}

// Checkpoints returns the checkpoint service sharing s's sidecar connections.
func (s *Service) Checkpoints() *Checkpoints { return &Checkpoints{s: s} }

// doCheckpoint is Service.do with the agent's CheckpointService client.
func (c *Checkpoints) doCheckpoint(ctx context.Context, cl call, fn func(ctx context.Context, cl workspacev1.CheckpointServiceClient) error) error {
	return c.s.do(ctx, cl, func(ctx context.Context, _ workspacev1.WorkspaceServiceClient) error {
		// do calls fn only for a configured agent with a sidecar.
		return fn(ctx, workspacev1.NewCheckpointServiceClient(c.s.agents[cl.agentID].conn))
	})
}

// CreateCheckpoint checkpoints a workspace or one path of it.
func (c *Checkpoints) CreateCheckpoint(ctx context.Context, req *workspacev1.CreateAgentCheckpointRequest) (*workspacev1.Checkpoint, error) {
	scope, project := scopeOf(req.GetWorkspace())
	var out *workspacev1.Checkpoint
	var id string
	cl := call{action: "create_checkpoint", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, source: req.GetPath(), checkpoint: &id}
	err := c.doCheckpoint(ctx, cl, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (err error) {
		out, err = sc.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: req.GetWorkspace(), Label: req.GetLabel(), Path: req.GetPath()})
		id = out.GetId()
		return err
	})
	return out, err
}

// ListCheckpoints lists a workspace's checkpoints, newest first.
func (c *Checkpoints) ListCheckpoints(ctx context.Context, req *workspacev1.ListAgentCheckpointsRequest) (*workspacev1.ListCheckpointsResponse, error) {
	var out *workspacev1.ListCheckpointsResponse
	err := c.doCheckpoint(ctx, call{action: "list_checkpoints", agentID: req.GetAgentId()}, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (err error) {
		out, err = sc.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: req.GetWorkspace(), Path: req.GetPath()})
		return err
	})
	return out, err
}

// CompareCheckpoint compares a checkpoint with the current state or another one.
func (c *Checkpoints) CompareCheckpoint(ctx context.Context, req *workspacev1.CompareAgentCheckpointRequest) (*workspacev1.CompareCheckpointResponse, error) {
	var out *workspacev1.CompareCheckpointResponse
	err := c.doCheckpoint(ctx, call{action: "compare_checkpoint", agentID: req.GetAgentId()}, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (err error) {
		out, err = sc.CompareCheckpoint(ctx, &workspacev1.CompareCheckpointRequest{Workspace: req.GetWorkspace(), CheckpointId: req.GetCheckpointId(),
			AgainstCheckpointId: req.GetAgainstCheckpointId(), Path: req.GetPath(), IncludeDiffs: req.GetIncludeDiffs()})
		return err
	})
	return out, err
}

// RestoreCheckpoint restores a workspace, a directory or a file.
func (c *Checkpoints) RestoreCheckpoint(ctx context.Context, req *workspacev1.RestoreAgentCheckpointRequest) (*workspacev1.RestoreCheckpointResponse, error) {
	scope, project := scopeOf(req.GetWorkspace())
	var out *workspacev1.RestoreCheckpointResponse
	id := truncate(req.GetCheckpointId(), 64)
	auto := &autoCheckpoint{reason: "before_restore"}
	cl := call{action: "restore_checkpoint", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, source: req.GetPath(), checkpoint: &id, auto: auto}
	err := c.doCheckpoint(ctx, cl, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (err error) {
		var tr metadata.MD
		out, err = sc.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: req.GetWorkspace(), CheckpointId: req.GetCheckpointId(),
			Path: req.GetPath(), PlanToken: req.GetPlanToken()}, grpc.Trailer(&tr))
		// The undo checkpoint is of the restored scope; a restore that
		// failed after taking it names it in the trailer only (its path
		// is then the request's).
		auto.id, auto.path = autoID(out.GetUndoCheckpointId(), tr), out.GetPath()
		if out == nil {
			auto.path = req.GetPath()
		}
		return err
	})
	return out, err
}

// DeleteCheckpoint deletes one checkpoint.
func (c *Checkpoints) DeleteCheckpoint(ctx context.Context, req *workspacev1.DeleteAgentCheckpointRequest) (*workspacev1.DeleteCheckpointResponse, error) {
	scope, project := scopeOf(req.GetWorkspace())
	var out *workspacev1.DeleteCheckpointResponse
	id := truncate(req.GetCheckpointId(), 64)
	cl := call{action: "delete_checkpoint", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, checkpoint: &id}
	err := c.doCheckpoint(ctx, cl, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (err error) {
		out, err = sc.DeleteCheckpoint(ctx, &workspacev1.DeleteCheckpointRequest{Workspace: req.GetWorkspace(), CheckpointId: req.GetCheckpointId()})
		return err
	})
	return out, err
}
