package rpc

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// deleteFS answers both deletes with res and err, and records the options.
type deleteFS struct {
	fakeFS
	res  string // the automatic checkpoint
	opts checkpoint.DeleteOptions
}

func (f *deleteFS) DeleteEntry(ctx context.Context, ws davfs.Workspace, p, rev string, opts checkpoint.DeleteOptions) (string, error) {
	f.opts = opts
	return f.res, f.record("DeleteEntry "+p, ws)
}

func (f *deleteFS) DeleteProject(ctx context.Context, name, confirm string, opts checkpoint.DeleteOptions) (string, error) {
	f.opts = opts
	return f.res, f.record("DeleteProject "+name, davfs.Workspace{})
}

// A delete carries skip_checkpoint to davfs and returns the automatic
// checkpoint's ID: in the response, or in a trailer when the delete failed
// after taking it. A CHECKPOINT_LIMIT names the override.
func TestDeleteCheckpointOptions(t *testing.T) {
	fs := &deleteFS{}
	c, logs := startService(t, fs)
	ctx := context.Background()
	del := func(skip bool) (string, metadata.MD, error) {
		var tr metadata.MD
		r, err := c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: project, Path: "d", ExpectedRevision: "r", Recursive: true, SkipCheckpoint: skip}, grpc.Trailer(&tr))
		return r.GetAutoCheckpointId(), tr, err
	}
	delProject := func(skip bool) (string, metadata.MD, error) {
		var tr metadata.MD
		r, err := c.DeleteProject(ctx, &workspacev1.DeleteProjectRequest{Name: "demo", ConfirmName: "demo", SkipCheckpoint: skip}, grpc.Trailer(&tr))
		return r.GetAutoCheckpointId(), tr, err
	}
	for name, call := range map[string]func(bool) (string, metadata.MD, error){"entry": del, "project": delProject} {
		t.Run(name, func(t *testing.T) {
			fs.res, fs.err = "0123456789abcdef01234567", nil
			id, _, err := call(true)
			if err != nil || id != "0123456789abcdef01234567" || !fs.opts.SkipCheckpoint {
				t.Fatalf("ok: %q %v, opts %+v", id, err, fs.opts)
			}
			fs.err = &davfs.Error{Code: davfs.CodeAborted, Reason: davfs.ReasonRevisionMismatch, Message: "changed"}
			_, tr, err := call(false)
			if status.Code(err) != codes.Aborted || fs.opts.SkipCheckpoint || strings.Join(tr.Get(rpcmeta.AutoCheckpoint), ",") != "0123456789abcdef01234567" {
				t.Fatalf("failed after the checkpoint: %v, trailer %v", err, tr)
			}
			if strings.Contains(status.Convert(err).Message(), "skip_checkpoint") {
				t.Errorf("hint on a non-limit error: %v", err)
			}
			fs.res = ""
			fs.err = &davfs.Error{Code: davfs.CodeResourceExhausted, Reason: davfs.ReasonCheckpointLimit, Message: "the checkpoint does not fit"}
			_, tr, err = call(false)
			if status.Code(err) != codes.ResourceExhausted || reasonOf(err) != "CHECKPOINT_LIMIT" || len(tr.Get(rpcmeta.AutoCheckpoint)) != 0 ||
				!strings.Contains(status.Convert(err).Message(), "retry with skip_checkpoint=true") {
				t.Fatalf("limit: %v, trailer %v", err, tr)
			}
		})
	}
	// The sidecar's own request log says which delete went without its
	// checkpoint.
	fs.res, fs.err = "", nil
	for id, skip := range map[string]bool{"req-skip": true, "req-keep": false} {
		rctx := metadata.AppendToOutgoingContext(ctx, rpcmeta.RequestID, id)
		if _, err := c.DeleteEntry(rctx, &workspacev1.DeleteEntryRequest{Workspace: project, Path: "d", ExpectedRevision: "r", Recursive: true, SkipCheckpoint: skip}); err != nil {
			t.Fatal(err)
		}
		l := findLine(t, logs.String(), id)
		if v, ok := l["skip_checkpoint"]; skip && v != true || !skip && ok {
			t.Errorf("%s logged skip_checkpoint %v (present %v)", id, v, ok)
		}
	}
}
