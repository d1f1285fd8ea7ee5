package rpc

import (
	"context"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/usage"
)

// Usage is what GetUsage reads (*usage.Cache; a seam for tests).
type Usage interface {
	Get(ctx context.Context, ws davfs.Workspace) (usage.Totals, error)
	Volume(scope davfs.Scope) (usage.Volume, error)
}

var _ Usage = (*usage.Cache)(nil)

// maxUsageWorkspaces bounds the projects of one GetUsage.
const maxUsageWorkspaces = 100

// WithUsage makes s answer GetUsage from u; it returns s.
func (s *Service) WithUsage(u Usage) *Service {
	s.usage = u
	return s
}

// GetUsage answers the totals of the projects asked (and Global), from the
// cache, and the volumes' size and free space. A workspace that cannot be
// counted carries its reason, never zeros passed off as figures.
func (s *Service) GetUsage(ctx context.Context, req *workspacev1.GetUsageRequest) (*workspacev1.GetUsageResponse, error) {
	if s.usage == nil {
		return nil, invalid(davfs.ReasonInvalidArgument, "usage is not served by this sidecar")
	}
	names := req.GetProjectNames()
	if len(names) > maxUsageWorkspaces {
		return nil, invalid(davfs.ReasonInvalidArgument, "at most 100 project_names")
	}
	var wss []davfs.Workspace
	for _, n := range names {
		wss = append(wss, davfs.Workspace{Scope: davfs.ScopeProject, Project: n})
	}
	if req.GetGlobal() {
		wss = append(wss, davfs.Workspace{Scope: davfs.ScopeGlobal})
	}
	out := &workspacev1.GetUsageResponse{
		ProjectsVolume: s.volume(davfs.ScopeProject),
		GlobalVolume:   s.volume(davfs.ScopeGlobal),
	}
	for _, ws := range wss {
		u := &workspacev1.WorkspaceUsage{Workspace: toWorkspaceRef(ws)}
		tot, err := s.usage.Get(ctx, ws)
		if err != nil {
			if e := ctx.Err(); e != nil {
				return nil, davfs.ContextError(ctx)
			}
			u.ErrorReason = string(davfs.ReasonOf(err))
		} else {
			u.Bytes, u.Files, u.Directories = &tot.Bytes, &tot.Files, &tot.Dirs
		}
		out.Workspaces = append(out.Workspaces, u)
	}
	return out, nil
}

func (s *Service) volume(scope davfs.Scope) *workspacev1.VolumeUsage {
	v, err := s.usage.Volume(scope)
	if err != nil {
		return &workspacev1.VolumeUsage{}
	}
	return &workspacev1.VolumeUsage{Known: true, SizeBytes: &v.Size, FreeBytes: &v.Free}
}
