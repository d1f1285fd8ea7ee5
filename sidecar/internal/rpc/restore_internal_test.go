package rpc

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// restoreFS answers RestoreCheckpoint with res and err.
type restoreFS struct {
	CheckpointFS // nil: the other methods are not used
	res          checkpoint.RestoreResult
	err          error
}

func (f *restoreFS) RestoreCheckpoint(ctx context.Context, ws davfs.Workspace, id, path string, opts checkpoint.RestoreOptions) (checkpoint.RestoreResult, error) {
	return f.res, f.err
}

// A restore that fails after taking its undo checkpoint names it in the
// trailer a failed delete uses, so that the gateway audits it; a restore
// that failed before taking one sends no trailer.
func TestRestoreCheckpointFailedUndoTrailer(t *testing.T) {
	fs := &restoreFS{}
	var buf proctest.Log
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(Interceptor(hclog.New(&hclog.LoggerOptions{JSONFormat: true, Output: &buf}), nil)))
	workspacev1.RegisterCheckpointServiceServer(srv, NewCheckpointService(fs))
	conn := serve(t, srv)
	c := workspacev1.NewCheckpointServiceClient(conn)
	restore := func() (string, metadata.MD, error) {
		var tr metadata.MD
		r, err := c.RestoreCheckpoint(context.Background(), &workspacev1.RestoreCheckpointRequest{Workspace: project, CheckpointId: "aaaaaaaaaaaaaaaaaaaaaaaa",
			Path: "d", PlanToken: "p"}, grpc.Trailer(&tr))
		return r.GetUndoCheckpointId(), tr, err
	}
	const undo = "0123456789abcdef01234567"

	fs.res = checkpoint.RestoreResult{AutoCheckpoint: undo}
	id, tr, err := restore()
	if err != nil || id != undo || len(tr.Get(rpcmeta.AutoCheckpoint)) != 0 {
		t.Fatalf("ok: %q %v, trailer %v", id, err, tr)
	}
	fs.err = &davfs.Error{Code: davfs.CodeAborted, Reason: davfs.ReasonRevisionMismatch, Message: "changed meanwhile"}
	_, tr, err = restore()
	if status.Code(err) != codes.Aborted || strings.Join(tr.Get(rpcmeta.AutoCheckpoint), ",") != undo {
		t.Fatalf("failed after the undo checkpoint: %v, trailer %v", err, tr)
	}
	fs.res = checkpoint.RestoreResult{}
	_, tr, err = restore()
	if status.Code(err) != codes.Aborted || len(tr.Get(rpcmeta.AutoCheckpoint)) != 0 {
		t.Fatalf("failed before any undo checkpoint: %v, trailer %v", err, tr)
	}
}
