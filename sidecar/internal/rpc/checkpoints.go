package rpc

import (
	"cmp"
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// CheckpointFS is the part of *checkpoint.Store the CheckpointService uses.
type CheckpointFS interface {
	CreateCheckpoint(ctx context.Context, ws davfs.Workspace, opts checkpoint.CheckpointOptions) (checkpoint.Checkpoint, error)
	ListCheckpointsHolding(ctx context.Context, ws davfs.Workspace, path string) ([]checkpoint.Checkpoint, bool, error)
	CompareCheckpoint(ctx context.Context, ws davfs.Workspace, id, against, path string, withDiffs bool) (checkpoint.Comparison, error)
	RestoreCheckpoint(ctx context.Context, ws davfs.Workspace, id, path string, opts checkpoint.RestoreOptions) (checkpoint.RestoreResult, error)
	DeleteCheckpoint(ctx context.Context, ws davfs.Workspace, id string) error
	ListDeletedProjects(ctx context.Context) ([]checkpoint.DeletedProject, error)
	RestoreDeletedProject(ctx context.Context, name, id, as, operator string) (checkpoint.RestoreResult, error)
}

var _ CheckpointFS = (*checkpoint.Store)(nil)

// maxChanges bounds the changes of one response (the rest is counted), and
// maxChangePathBytes the bytes of their paths: 5,000 paths of up to the
// path length limit would not fit in a gRPC message. With davfs's diff
// budget (1 MiB) a response stays well under the sidecar's message limit
// (at least 4 MiB, also the gateway's default receive limit).
const (
	maxChanges         = 5000
	maxChangePathBytes = 512 << 10
)

// CheckpointService is the sidecar's CheckpointService over davfs. Errors
// are davfs errors, mapped by the interceptor.
type CheckpointService struct {
	workspacev1.UnimplementedCheckpointServiceServer
	fs CheckpointFS
}

// NewCheckpointService returns the service over fs.
func NewCheckpointService(fs CheckpointFS) *CheckpointService { return &CheckpointService{fs: fs} }

func (s *CheckpointService) CreateCheckpoint(ctx context.Context, req *workspacev1.CreateCheckpointRequest) (*workspacev1.Checkpoint, error) {
	ws, err := workspace(req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	return then(toCheckpoint)(s.fs.CreateCheckpoint(ctx, ws, checkpoint.CheckpointOptions{Label: req.GetLabel(), Path: req.GetPath(), Operator: operatorOf(ctx)}))
}

func (s *CheckpointService) ListCheckpoints(ctx context.Context, req *workspacev1.ListCheckpointsRequest) (*workspacev1.ListCheckpointsResponse, error) {
	ws, err := workspace(req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	cs, truncated, err := s.fs.ListCheckpointsHolding(ctx, ws, req.GetPath())
	if err != nil {
		return nil, err
	}
	return &workspacev1.ListCheckpointsResponse{Checkpoints: convert(cs, toCheckpoint), Truncated: truncated}, nil
}

func (s *CheckpointService) CompareCheckpoint(ctx context.Context, req *workspacev1.CompareCheckpointRequest) (*workspacev1.CompareCheckpointResponse, error) {
	ws, err := requiring(req.GetWorkspace(), "checkpoint_id", req.GetCheckpointId())
	if err != nil {
		return nil, err
	}
	c, err := s.fs.CompareCheckpoint(ctx, ws, req.GetCheckpointId(), req.GetAgainstCheckpointId(), req.GetPath(), req.GetIncludeDiffs())
	if err != nil {
		return nil, err
	}
	out := &workspacev1.CompareCheckpointResponse{Base: toCheckpoint(c.Base), Path: c.Path, PlanToken: c.PlanToken, TotalChanges: int32(len(c.Changes))}
	if c.Target != nil {
		out.Target = toCheckpoint(*c.Target)
	}
	out.Changes, out.Truncated = toChanges(c.Changes)
	return out, nil
}

func (s *CheckpointService) RestoreCheckpoint(ctx context.Context, req *workspacev1.RestoreCheckpointRequest) (*workspacev1.RestoreCheckpointResponse, error) {
	ws, err := requiring(req.GetWorkspace(), "checkpoint_id", req.GetCheckpointId())
	if err != nil {
		return nil, err
	}
	// A restore changes exactly what the operator was shown: the plan of a
	// comparison of the same path, checked again under the lock.
	if req.GetPlanToken() == "" {
		return nil, invalid(davfs.ReasonInvalidArgument, "plan_token is required: compare the checkpoint with the current state at this path first and pass its plan_token")
	}
	r, err := s.fs.RestoreCheckpoint(ctx, ws, req.GetCheckpointId(), req.GetPath(), checkpoint.RestoreOptions{PlanToken: req.GetPlanToken(), Operator: operatorOf(ctx)})
	return restored(ctx, r, err)
}

// restored is the response of a restore, or its error: one that failed
// after taking its undo checkpoint (kept) names it in the trailer, as a
// failed delete does, so that the gateway audits it.
func restored(ctx context.Context, r checkpoint.RestoreResult, err error) (*workspacev1.RestoreCheckpointResponse, error) {
	if err != nil {
		if r.AutoCheckpoint != "" {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(rpcmeta.AutoCheckpoint, r.AutoCheckpoint))
		}
		return nil, err
	}
	out := &workspacev1.RestoreCheckpointResponse{Checkpoint: toCheckpoint(r.Checkpoint), Path: r.Path, UndoCheckpointId: r.AutoCheckpoint, TotalChanges: int32(len(r.Changes))}
	out.Changes, out.Truncated = toChanges(r.Changes)
	return out, nil
}

func (s *CheckpointService) DeleteCheckpoint(ctx context.Context, req *workspacev1.DeleteCheckpointRequest) (*workspacev1.DeleteCheckpointResponse, error) {
	ws, err := requiring(req.GetWorkspace(), "checkpoint_id", req.GetCheckpointId())
	if err != nil {
		return nil, err
	}
	if err := s.fs.DeleteCheckpoint(ctx, ws, req.GetCheckpointId()); err != nil {
		return nil, err
	}
	return &workspacev1.DeleteCheckpointResponse{}, nil
}

func toCheckpoint(c checkpoint.Checkpoint) *workspacev1.Checkpoint {
	// davfs's manual reason, or one the table does not name, is MANUAL.
	reason := cmp.Or(checkpointReasons[c.Reason], workspacev1.CheckpointReason_CHECKPOINT_REASON_MANUAL)
	return &workspacev1.Checkpoint{
		Id: c.ID, Workspace: toWorkspaceRef(c.Workspace), RootPath: c.Root, Label: c.Label, Operator: c.Operator,
		CreatedAt: timestamppb.New(c.Created), Reason: reason, FileCount: int32(c.Files), DirectoryCount: int32(c.Dirs),
		Size: c.Size, SkippedCount: int32(c.Skipped),
	}
}

func toChanges(cs []checkpoint.CheckpointChange) ([]*workspacev1.CheckpointChange, bool) {
	n := min(len(cs), maxChanges)
	pathBytes := 0
	for i, c := range cs[:n] {
		if pathBytes += len(c.Path); pathBytes > maxChangePathBytes {
			n = i
			break
		}
	}
	return convert(cs[:n], func(c checkpoint.CheckpointChange) *workspacev1.CheckpointChange {
		// Anything but a directory is a file.
		return &workspacev1.CheckpointChange{Path: c.Path, Kind: changeKinds[c.Kind], OldSize: c.OldSize, NewSize: c.NewSize,
			OldMode: c.OldMode & 0o7777, NewMode: c.NewMode & 0o7777, Diff: c.Diff, DiffState: diffStates[c.DiffState],
			Type: cmp.Or(entryTypes[c.Type], workspacev1.EntryType_ENTRY_TYPE_FILE)}
	}), len(cs) > n
}

// The contract's names of davfs's automatic checkpoint reasons, change
// kinds and diff states (the zero value, UNSPECIFIED, for any other;
// toCheckpoint makes it MANUAL).
var (
	checkpointReasons = map[string]workspacev1.CheckpointReason{
		checkpoint.CheckpointBeforeRestore:       workspacev1.CheckpointReason_CHECKPOINT_REASON_BEFORE_RESTORE,
		checkpoint.CheckpointBeforeProjectDelete: workspacev1.CheckpointReason_CHECKPOINT_REASON_BEFORE_PROJECT_DELETE,
		checkpoint.CheckpointBeforeDelete:        workspacev1.CheckpointReason_CHECKPOINT_REASON_BEFORE_DELETE,
		checkpoint.CheckpointBeforeWebDAVWrite:   workspacev1.CheckpointReason_CHECKPOINT_REASON_BEFORE_WEBDAV_WRITE,
	}
	changeKinds = map[checkpoint.CheckpointChangeKind]workspacev1.ChangeKind{
		checkpoint.CheckpointAdded:    workspacev1.ChangeKind_CHANGE_KIND_ADDED,
		checkpoint.CheckpointRemoved:  workspacev1.ChangeKind_CHANGE_KIND_REMOVED,
		checkpoint.CheckpointModified: workspacev1.ChangeKind_CHANGE_KIND_MODIFIED,
	}
	diffStates = map[checkpoint.DiffState]workspacev1.DiffState{
		checkpoint.DiffIncluded:    workspacev1.DiffState_DIFF_STATE_INCLUDED,
		checkpoint.DiffNotText:     workspacev1.DiffState_DIFF_STATE_NOT_TEXT,
		checkpoint.DiffTooLarge:    workspacev1.DiffState_DIFF_STATE_TOO_LARGE,
		checkpoint.DiffOverBudget:  workspacev1.DiffState_DIFF_STATE_OVER_BUDGET,
		checkpoint.DiffUnavailable: workspacev1.DiffState_DIFF_STATE_UNAVAILABLE,
	}
)

// operatorOf is the operator the interceptor read from the metadata.
func operatorOf(ctx context.Context) string {
	ci, _ := ctx.Value(callInfoKey{}).(CallInfo)
	return ci.Operator
}
