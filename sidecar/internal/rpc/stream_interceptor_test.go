package rpc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// panicWatch panics on a "boom" directory, else sends one READY carrying
// the request ID the handler's context holds and ends with an error.
type panicWatch struct {
	workspacev1.UnimplementedWatchServiceServer
}

func (panicWatch) Watch(req *workspacev1.WatchRequest, st workspacev1.WatchService_WatchServer) error {
	if req.GetDirectories()[0] == "boom" {
		panic("handler bug")
	}
	ci, _ := st.Context().Value(callInfoKey{}).(CallInfo)
	if err := st.Send(&workspacev1.WatchEvent{Kind: workspacev1.WatchEventKind_WATCH_EVENT_KIND_READY, Id: ci.RequestID}); err != nil {
		return err
	}
	return &davfs.Error{Code: davfs.CodeNotFound, Reason: davfs.ReasonNotFound, Message: "not found"}
}

type obsRec struct{ got chan string }

func (o obsRec) Observe(action, code string, reason davfs.Reason, d time.Duration) {
	o.got <- action + " " + code + " " + string(reason)
}

func TestWatchStreamInterceptor(t *testing.T) {
	var buf proctest.Log
	log := hclog.New(&hclog.LoggerOptions{JSONFormat: true, Output: &buf, Level: hclog.Debug})
	obs := obsRec{got: make(chan string, 8)}
	srv := grpc.NewServer(grpc.ChainStreamInterceptor(StreamInterceptor(log, obs)))
	workspacev1.RegisterWatchServiceServer(srv, panicWatch{})
	conn := serve(t, srv)
	c := workspacev1.NewWatchServiceClient(conn)
	call := func(id, dir string) (*workspacev1.WatchEvent, metadata.MD, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, rpcmeta.RequestID, id, rpcmeta.Operator, "alice")
		st, err := c.Watch(ctx, &workspacev1.WatchRequest{Workspace: project, Directories: []string{dir}})
		if err != nil {
			return nil, nil, err
		}
		var first *workspacev1.WatchEvent
		for {
			ev, err := st.Recv()
			if err != nil {
				hdr, _ := st.Header()
				return first, hdr, err
			}
			if first == nil {
				first = ev
			}
		}
	}

	// A panic ends the stream with Internal; the server goes on serving.
	_, _, err := call("req-boom", "boom")
	if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "handler bug") {
		t.Fatalf("panic: %v, want Internal without the detail", err)
	}
	if got := <-obs.got; got != "Watch Internal INTERNAL" {
		t.Fatalf("observed %q", got)
	}
	if !strings.Contains(buf.String(), "panic in handler") {
		t.Fatalf("no panic log line:\n%s", buf.String())
	}
	if l := findLine(t, buf.String(), "req-boom"); l["operator"] != "alice" || l["code"] != "Internal" || l["method"] != "/workspace.v1.WatchService/Watch" {
		t.Fatalf("log line %v", l)
	}

	ev, hdr, err := call("req-ok", "src")
	if status.Code(err) != codes.NotFound {
		t.Fatalf("second call: %v", err)
	}
	if ev.GetId() != "req-ok" {
		t.Fatalf("handler saw request ID %q", ev.GetId())
	}
	if got := hdr.Get(rpcmeta.RequestID); len(got) != 1 || got[0] != "req-ok" {
		t.Fatalf("x-request-id header %v", got)
	}
	if got := <-obs.got; got != "Watch NotFound NOT_FOUND" {
		t.Fatalf("observed %q", got)
	}
	if l := findLine(t, buf.String(), "req-ok"); l["scope"] != "PROJECT" || l["project"] != "demo" || l["@level"] != "info" {
		t.Fatalf("log line %v", l)
	}
}
