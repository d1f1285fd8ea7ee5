// Package rpc implements the sidecar's gRPC WorkspaceService over davfs:
// WorkspaceRef checks, the davfs error -> gRPC status mapping (with
// google.rpc.ErrorInfo), and the interceptors that carry the request ID,
// operator and deadline into every log line.
package rpc

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// FS is the part of *davfs.FS the service uses (a seam for tests).
type FS interface {
	ListProjects(ctx context.Context, pageSize int, cursor string) (davfs.ProjectPage, error)
	CreateProject(ctx context.Context, name string) (davfs.Project, error)
	ListEntries(ctx context.Context, ws davfs.Workspace, dir string, pageSize int, cursor string) (davfs.Page, error)
	ReadFile(ctx context.Context, ws davfs.Workspace, path string) (davfs.File, error)
	CreateEntry(ctx context.Context, ws davfs.Workspace, parent, name string, typ davfs.EntryType, use ...davfs.Use) (davfs.Entry, error)
	UpdateFile(ctx context.Context, ws davfs.Workspace, path string, content []byte, expectedRevision string) (davfs.Entry, error)
	MoveEntry(ctx context.Context, ws davfs.Workspace, src, dst, expectedRevision string, use ...davfs.Use) (davfs.Entry, error)
}

var _ FS = (*davfs.FS)(nil)

// Deleter deletes with the automatic checkpoint before (the checkpoint
// store's composition over the core's deletes; a seam for tests). It
// returns the automatic checkpoint's ID, also with an error.
type Deleter interface {
	DeleteProject(ctx context.Context, name, confirmName string, opts checkpoint.DeleteOptions) (string, error)
	DeleteEntry(ctx context.Context, ws davfs.Workspace, path, expectedRevision string, opts checkpoint.DeleteOptions) (string, error)
}

var _ Deleter = (*checkpoint.Store)(nil)

// Service is the WorkspaceService. Errors it returns are davfs errors; the
// interceptor from Interceptor turns them into statuses.
type Service struct {
	workspacev1.UnimplementedWorkspaceServiceServer
	fs    FS
	del   Deleter
	usage Usage // GetUsage (usage.go); nil: not served
	// search is the volume Search walks (WithSearch); nil: Unimplemented.
	search      *davfs.FS
	searchSlots chan struct{} // one per running search (MaxSearches)
}

// NewService returns the service over fs, deleting through del.
func NewService(fs FS, del Deleter) *Service { return &Service{fs: fs, del: del} }

func (s *Service) ListProjects(ctx context.Context, req *workspacev1.ListProjectsRequest) (*workspacev1.ListProjectsResponse, error) {
	n, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	page, err := s.fs.ListProjects(ctx, n, req.GetCursor())
	if err != nil {
		return nil, err
	}
	return &workspacev1.ListProjectsResponse{NextCursor: page.NextCursor, Projects: convert(page.Projects, toProject)}, nil
}

func (s *Service) CreateProject(ctx context.Context, req *workspacev1.CreateProjectRequest) (*workspacev1.Project, error) {
	return then(toProject)(s.fs.CreateProject(ctx, req.GetName()))
}

func (s *Service) DeleteProject(ctx context.Context, req *workspacev1.DeleteProjectRequest) (*workspacev1.DeleteProjectResponse, error) {
	auto, err := s.del.DeleteProject(ctx, req.GetName(), req.GetConfirmName(),
		checkpoint.DeleteOptions{SkipCheckpoint: req.GetSkipCheckpoint(), Operator: operatorOf(ctx)})
	if err != nil {
		return nil, failedDelete(ctx, auto, err)
	}
	return &workspacev1.DeleteProjectResponse{AutoCheckpointId: auto}, nil
}

func (s *Service) ListEntries(ctx context.Context, req *workspacev1.ListEntriesRequest) (*workspacev1.ListEntriesResponse, error) {
	ws, err := workspace(req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	n, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	page, err := s.fs.ListEntries(ctx, ws, req.GetPath(), n, req.GetCursor())
	if err != nil {
		return nil, err
	}
	return &workspacev1.ListEntriesResponse{NextCursor: page.NextCursor, DirectoryRevision: page.DirectoryRevision,
		Entries: convert(page.Entries, toEntry)}, nil
}

func (s *Service) GetFile(ctx context.Context, req *workspacev1.GetFileRequest) (*workspacev1.GetFileResponse, error) {
	ws, err := workspace(req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	f, err := s.fs.ReadFile(ctx, ws, req.GetPath())
	if err != nil {
		return nil, err
	}
	out := &workspacev1.GetFileResponse{Entry: toEntry(f.Entry)}
	if f.Entry.Editable {
		out.Content = string(f.Content)
	}
	return out, nil
}

func (s *Service) CreateEntry(ctx context.Context, req *workspacev1.CreateEntryRequest) (*workspacev1.Entry, error) {
	ws, err := workspace(req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	typ, err := entryType(req.GetType())
	if err != nil {
		return nil, err
	}
	return then(toEntry)(s.fs.CreateEntry(ctx, ws, req.GetParentPath(), req.GetName(), typ))
}

func (s *Service) UpdateFile(ctx context.Context, req *workspacev1.UpdateFileRequest) (*workspacev1.Entry, error) {
	ws, err := requiring(req.GetWorkspace(), "expected_revision", req.GetExpectedRevision())
	if err != nil {
		return nil, err
	}
	return then(toEntry)(s.fs.UpdateFile(ctx, ws, req.GetPath(), []byte(req.GetContent()), req.GetExpectedRevision()))
}

func (s *Service) MoveEntry(ctx context.Context, req *workspacev1.MoveEntryRequest) (*workspacev1.Entry, error) {
	ws, err := requiring(req.GetWorkspace(), "expected_revision", req.GetExpectedRevision())
	if err != nil {
		return nil, err
	}
	return then(toEntry)(s.fs.MoveEntry(ctx, ws, req.GetSourcePath(), req.GetDestinationPath(), req.GetExpectedRevision()))
}

func (s *Service) DeleteEntry(ctx context.Context, req *workspacev1.DeleteEntryRequest) (*workspacev1.DeleteEntryResponse, error) {
	ws, err := requiring(req.GetWorkspace(), "expected_revision", req.GetExpectedRevision())
	if err != nil {
		return nil, err
	}
	auto, err := s.del.DeleteEntry(ctx, ws, req.GetPath(), req.GetExpectedRevision(), checkpoint.DeleteOptions{
		Delete: davfs.DeleteOptions{Recursive: req.GetRecursive()}, SkipCheckpoint: req.GetSkipCheckpoint(), Operator: operatorOf(ctx),
		Files: true}) // REST and gRPC: a file delete is undoable too (WebDAV leaves it off)
	if err != nil {
		return nil, failedDelete(ctx, auto, err)
	}
	return &workspacev1.DeleteEntryResponse{AutoCheckpointId: auto}, nil
}

// failedDelete is a failed delete's error: the automatic checkpoint it took
// first (kept) is named in a trailer, and a CHECKPOINT_LIMIT (that
// checkpoint did not fit) says the request's skip_checkpoint overrides it.
// The hint belongs to this API: a WebDAV DELETE has no such override.
func failedDelete(ctx context.Context, auto string, err error) error {
	if auto != "" {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(rpcmeta.AutoCheckpoint, auto))
	}
	var de *davfs.Error
	if !errors.As(err, &de) || de.Reason != davfs.ReasonCheckpointLimit {
		return err
	}
	return &davfs.Error{Code: de.Code, Reason: de.Reason, Err: de,
		Message: de.Message + "; or retry with skip_checkpoint=true to delete without a checkpoint (the delete then cannot be undone)"}
}
