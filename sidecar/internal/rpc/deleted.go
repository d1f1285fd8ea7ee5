package rpc

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
)

// ListDeletedProjects lists the deleted projects the store can bring back.
func (s *CheckpointService) ListDeletedProjects(ctx context.Context, _ *workspacev1.ListDeletedProjectsRequest) (*workspacev1.ListDeletedProjectsResponse, error) {
	ps, err := s.fs.ListDeletedProjects(ctx)
	if err != nil {
		return nil, err
	}
	return &workspacev1.ListDeletedProjectsResponse{Projects: convert(ps, toDeletedProject)}, nil
}

func toDeletedProject(p checkpoint.DeletedProject) *workspacev1.DeletedProject {
	c := p.Checkpoint
	return &workspacev1.DeletedProject{ProjectName: p.Name, DeletedAt: timestamppb.New(c.Created), DeletedBy: c.Operator,
		Size: c.Size, FileCount: int32(c.Files), CheckpointId: c.ID}
}

// RestoreDeletedProject brings a deleted project back in one step: it only
// creates (the project restored must not exist), so it needs no plan token.
func (s *CheckpointService) RestoreDeletedProject(ctx context.Context, req *workspacev1.RestoreDeletedProjectRequest) (*workspacev1.RestoreCheckpointResponse, error) {
	if req.GetProjectName() == "" {
		return nil, invalid(davfs.ReasonInvalidArgument, "project_name is required: the deleted project's name (ListDeletedProjects)")
	}
	r, err := s.fs.RestoreDeletedProject(ctx, req.GetProjectName(), req.GetCheckpointId(), req.GetRestoreAs(), operatorOf(ctx))
	return restored(ctx, r, err)
}
