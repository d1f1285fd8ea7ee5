package mgmt

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// Checkpoints is the in-process CheckpointManagementService: each call is
// routed by agent_id to that agent's sidecar CheckpointService through the
// same path as every other call (routed: admin check, deadline,
// metadata, error rewrapping, metrics), and create, restore and delete are
// audited (never content: the workspace, the path and the checkpoint ID).
type Checkpoints struct {
	workspacev1.UnimplementedCheckpointManagementServiceServer
	s *Service
}

// Checkpoints returns the checkpoint service sharing s's sidecar connections.
func (s *Service) Checkpoints() *Checkpoints { return &Checkpoints{s: s} }

// routedCheckpoint is routed with the agent's CheckpointService client.
// Every checkpoint call has the long deadline (sidecar.checkpointTimeout).
func routedCheckpoint[T any](ctx context.Context, c *Checkpoints, cl call, fn func(context.Context, workspacev1.CheckpointServiceClient) (T, error)) (T, error) {
	cl.long = true
	return routed(ctx, c.s, cl, func(ctx context.Context, _ workspacev1.WorkspaceServiceClient) (T, error) {
		// routed calls fn only for a known agent with a sidecar; one
		// replaced since (discovery) answers through its old, closed
		// connection: Unavailable.
		ag := c.s.lookup(cl.agentID)
		if ag == nil || ag.conn == nil {
			return *new(T), status.Error(codes.Unavailable, "the agent's sidecar went away")
		}
		return fn(ctx, workspacev1.NewCheckpointServiceClient(ag.conn))
	})
}

// CreateCheckpoint checkpoints a workspace or one path of it.
func (c *Checkpoints) CreateCheckpoint(ctx context.Context, req *workspacev1.CreateAgentCheckpointRequest) (*workspacev1.Checkpoint, error) {
	scope, project := scopeOf(req.GetWorkspace())
	var id string
	cl := call{action: "create_checkpoint", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, source: req.GetPath(), checkpoint: &id}
	return routedCheckpoint(ctx, c, cl, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (*workspacev1.Checkpoint, error) {
		out, err := sc.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: req.GetWorkspace(), Label: req.GetLabel(), Path: req.GetPath()})
		id = out.GetId()
		return out, err
	})
}

// ListCheckpoints lists a workspace's checkpoints, newest first.
func (c *Checkpoints) ListCheckpoints(ctx context.Context, req *workspacev1.ListAgentCheckpointsRequest) (*workspacev1.ListCheckpointsResponse, error) {
	return routedCheckpoint(ctx, c, call{action: "list_checkpoints", agentID: req.GetAgentId()}, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (*workspacev1.ListCheckpointsResponse, error) {
		return sc.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: req.GetWorkspace(), Path: req.GetPath()})
	})
}

// CompareCheckpoint compares a checkpoint with the current state or another one.
func (c *Checkpoints) CompareCheckpoint(ctx context.Context, req *workspacev1.CompareAgentCheckpointRequest) (*workspacev1.CompareCheckpointResponse, error) {
	return routedCheckpoint(ctx, c, call{action: "compare_checkpoint", agentID: req.GetAgentId()}, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (*workspacev1.CompareCheckpointResponse, error) {
		return sc.CompareCheckpoint(ctx, &workspacev1.CompareCheckpointRequest{Workspace: req.GetWorkspace(), CheckpointId: req.GetCheckpointId(),
			AgainstCheckpointId: req.GetAgainstCheckpointId(), Path: req.GetPath(), IncludeDiffs: req.GetIncludeDiffs()})
	})
}

// RestoreCheckpoint restores a workspace, a directory or a file.
func (c *Checkpoints) RestoreCheckpoint(ctx context.Context, req *workspacev1.RestoreAgentCheckpointRequest) (*workspacev1.RestoreCheckpointResponse, error) {
	scope, project := scopeOf(req.GetWorkspace())
	id := truncate(req.GetCheckpointId(), 64)
	auto := &autoCheckpoint{reason: "before_restore"}
	cl := call{action: "restore_checkpoint", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, source: req.GetPath(), checkpoint: &id, auto: auto}
	return routedCheckpoint(ctx, c, cl, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (*workspacev1.RestoreCheckpointResponse, error) {
		var tr metadata.MD
		out, err := sc.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: req.GetWorkspace(), CheckpointId: req.GetCheckpointId(),
			Path: req.GetPath(), PlanToken: req.GetPlanToken()}, grpc.Trailer(&tr))
		// The undo checkpoint is of the restored scope; a restore that
		// failed after taking it names it in the trailer only (its path
		// is then the request's).
		auto.id, auto.path = autoID(out.GetUndoCheckpointId(), tr), out.GetPath()
		if out == nil {
			auto.path = req.GetPath()
		}
		return out, err
	})
}

// DeleteCheckpoint deletes one checkpoint.
func (c *Checkpoints) DeleteCheckpoint(ctx context.Context, req *workspacev1.DeleteAgentCheckpointRequest) (*workspacev1.DeleteCheckpointResponse, error) {
	scope, project := scopeOf(req.GetWorkspace())
	id := truncate(req.GetCheckpointId(), 64)
	cl := call{action: "delete_checkpoint", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, checkpoint: &id}
	return routedCheckpoint(ctx, c, cl, func(ctx context.Context, sc workspacev1.CheckpointServiceClient) (*workspacev1.DeleteCheckpointResponse, error) {
		return sc.DeleteCheckpoint(ctx, &workspacev1.DeleteCheckpointRequest{Workspace: req.GetWorkspace(), CheckpointId: req.GetCheckpointId()})
	})
}
