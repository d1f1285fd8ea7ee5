package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// fakeFS is a hand-written FS: it records the last call and returns err.
type fakeFS struct {
	FS   // nil: methods not overridden panic (the interceptor recovers)
	mu   sync.Mutex
	last string
	ws   davfs.Workspace
	err  error
}

func (f *fakeFS) record(call string, ws davfs.Workspace) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last, f.ws = call, ws
	return f.err
}

func (f *fakeFS) ReadFile(ctx context.Context, ws davfs.Workspace, p string) (davfs.File, error) {
	if err := f.record("ReadFile "+p, ws); err != nil {
		return davfs.File{}, err
	}
	return davfs.File{Entry: davfs.Entry{Name: "a.txt", Path: p, Type: davfs.TypeFile, Size: 6, Revision: "r1", Editable: true,
		ModTime: time.Unix(1700000000, 0)}, Content: []byte("SECRET")}, nil
}

func (f *fakeFS) UpdateFile(ctx context.Context, ws davfs.Workspace, p string, content []byte, rev string) (davfs.Entry, error) {
	if err := f.record("UpdateFile "+p+" "+rev, ws); err != nil {
		return davfs.Entry{}, err
	}
	return davfs.Entry{Name: "a.txt", Path: p, Type: davfs.TypeFile, Revision: "r2", Editable: true}, nil
}

func (f *fakeFS) ListEntries(ctx context.Context, ws davfs.Workspace, dir string, n int, cursor string) (davfs.Page, error) {
	if err := f.record("ListEntries", ws); err != nil {
		return davfs.Page{}, err
	}
	return davfs.Page{Entries: []davfs.Entry{{Name: "big.bin", Path: "big.bin", Type: davfs.TypeFile, Reason: davfs.NotEditableUnknown}}}, nil
}

// serve serves srv on 127.0.0.1 until the test ends and returns a client
// connection to it.
func serve(t *testing.T, srv *grpc.Server) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func startService(t *testing.T, fs FS) (workspacev1.WorkspaceServiceClient, *proctest.Log) {
	t.Helper()
	var buf proctest.Log
	log := hclog.New(&hclog.LoggerOptions{JSONFormat: true, Output: &buf, Level: hclog.Debug})
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(Interceptor(log, nil)))
	del, _ := fs.(Deleter) // nil: a delete panics (the interceptor recovers)
	workspacev1.RegisterWorkspaceServiceServer(srv, NewService(fs, del))
	conn := serve(t, srv)
	return workspacev1.NewWorkspaceServiceClient(conn), &buf
}

var (
	project = &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "demo"}
	global  = &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_GLOBAL}
)

func TestWorkspaceRefValidation(t *testing.T) {
	fs := &fakeFS{}
	c, _ := startService(t, fs)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ref  *workspacev1.WorkspaceRef
		want codes.Code
		ws   davfs.Workspace
	}{
		{"project", project, codes.OK, davfs.Workspace{Scope: davfs.ScopeProject, Project: "demo"}},
		{"global", global, codes.OK, davfs.Workspace{Scope: davfs.ScopeGlobal}},
		{"missing", nil, codes.InvalidArgument, davfs.Workspace{}},
		{"unspecified", &workspacev1.WorkspaceRef{ProjectName: "demo"}, codes.InvalidArgument, davfs.Workspace{}},
		{"project without name", &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT}, codes.InvalidArgument, davfs.Workspace{}},
		{"global with name", &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_GLOBAL, ProjectName: "demo"}, codes.InvalidArgument, davfs.Workspace{}},
		{"unknown scope", &workspacev1.WorkspaceRef{Scope: 9}, codes.InvalidArgument, davfs.Workspace{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs.last = ""
			resp, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: tc.ref, Path: "a.txt"})
			if status.Code(err) != tc.want {
				t.Fatalf("GetFile: %v, want %v", err, tc.want)
			}
			if tc.want != codes.OK {
				if fs.last != "" {
					t.Errorf("davfs was called (%s) for an invalid workspace", fs.last)
				}
				if r := reasonOf(err); r != "INVALID_WORKSPACE" {
					t.Errorf("reason %q, want INVALID_WORKSPACE", r)
				}
				return
			}
			if fs.ws != tc.ws || resp.GetContent() != "SECRET" || resp.GetEntry().GetRevision() != "r1" ||
				resp.GetEntry().GetModifiedAt().AsTime().Unix() != 1700000000 {
				t.Errorf("got ws %+v resp %v", fs.ws, resp)
			}
		})
	}
}

func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.GetReason()
		}
	}
	return ""
}

func TestRequiredFields(t *testing.T) {
	fs := &fakeFS{}
	c, _ := startService(t, fs)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"UpdateFile without expected_revision": func() error {
			_, err := c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: project, Path: "a", Content: "x"})
			return err
		},
		"MoveEntry without expected_revision": func() error {
			_, err := c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: project, SourcePath: "a", DestinationPath: "b"})
			return err
		},
		"DeleteEntry without expected_revision": func() error {
			_, err := c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: project, Path: "a"})
			return err
		},
		"CreateEntry without type": func() error {
			_, err := c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: project, Name: "a"})
			return err
		},
		"negative page size": func() error {
			_, err := c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: project, PageSize: -1})
			return err
		},
		"negative project page size": func() error {
			_, err := c.ListProjects(ctx, &workspacev1.ListProjectsRequest{PageSize: -1})
			return err
		},
	} {
		if err := call(); status.Code(err) != codes.InvalidArgument || reasonOf(err) != "INVALID_ARGUMENT" {
			t.Errorf("%s: %v (reason %q), want InvalidArgument/INVALID_ARGUMENT", name, err, reasonOf(err))
		}
	}
}

func TestNonEditableReasonOnList(t *testing.T) {
	c, _ := startService(t, &fakeFS{})
	resp, err := c.ListEntries(context.Background(), &workspacev1.ListEntriesRequest{Workspace: project})
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.GetEntries()[0]; e.GetNonEditableReason() != workspacev1.NonEditableReason_NON_EDITABLE_REASON_UNKNOWN {
		t.Errorf("entry %v", e)
	}
}

func TestInterceptor(t *testing.T) {
	fs := &fakeFS{}
	c, logs := startService(t, fs)

	t.Run("request ID echoed and logged, content never logged", func(t *testing.T) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), rpcmeta.RequestID, "req-123", rpcmeta.Operator, "alice")
		var hdr metadata.MD
		if _, err := c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: project, Path: "dir/a.txt",
			Content: "TOPSECRET", ExpectedRevision: "r1"}, grpc.Header(&hdr)); err != nil {
			t.Fatal(err)
		}
		if got := hdr.Get(rpcmeta.RequestID); len(got) != 1 || got[0] != "req-123" {
			t.Errorf("x-request-id header = %v", got)
		}
		line := findLine(t, logs.String(), "req-123")
		for k, want := range map[string]any{"method": "/workspace.v1.WorkspaceService/UpdateFile", "code": "OK", "operator": "alice",
			"scope": "PROJECT", "project": "demo", "path": "dir/a.txt"} {
			if line[k] != want {
				t.Errorf("log %s = %v, want %v", k, line[k], want)
			}
		}
		if _, ok := line["duration"]; !ok {
			t.Error("log line has no duration")
		}
		if strings.Contains(logs.String(), "TOPSECRET") {
			t.Error("file content reached the log")
		}
	})

	t.Run("levels: successful reads debug, mutations and failures info", func(t *testing.T) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), rpcmeta.RequestID, "req-read", rpcmeta.Operator, "bob")
		if _, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: project, Path: "dir/a.txt"}); err != nil {
			t.Fatal(err)
		}
		if l := findLine(t, logs.String(), "req-read"); l["@level"] != "debug" || l["operator"] != "bob" || l["path"] != "dir/a.txt" {
			t.Errorf("read logged as %v", l)
		}
		if l := findLine(t, logs.String(), "req-123"); l["@level"] != "info" {
			t.Errorf("mutation logged at %v", l["@level"])
		}
		fs.err = &davfs.Error{Code: davfs.CodeNotFound, Reason: davfs.ReasonNotFound, Message: "not found"}
		defer func() { fs.err = nil }()
		ctx = metadata.AppendToOutgoingContext(context.Background(), rpcmeta.RequestID, "req-miss")
		if _, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: project, Path: "nope"}); status.Code(err) != codes.NotFound {
			t.Fatalf("err = %v", err)
		}
		if l := findLine(t, logs.String(), "req-miss"); l["@level"] != "info" || l["reason"] != "NOT_FOUND" {
			t.Errorf("failed read logged as %v", l)
		}
	})

	t.Run("request ID generated when missing or malformed", func(t *testing.T) {
		for _, id := range []string{"", "bad id {\"x\":1}", strings.Repeat("a", 200)} {
			ctx := context.Background()
			if id != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, rpcmeta.RequestID, id)
			}
			var hdr metadata.MD
			_, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: global, Path: "AGENTS.md"}, grpc.Header(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			got := hdr.Get(rpcmeta.RequestID)
			if len(got) != 1 || len(got[0]) != 32 {
				t.Errorf("generated x-request-id = %v", got)
			}
		}
	})

	t.Run("error header and internal detail kept out of the message", func(t *testing.T) {
		fs.err = &davfs.Error{Code: davfs.CodeInternal, Reason: davfs.ReasonInternal, Message: "internal error",
			Err: errors.New("detail-for-logs-only")}
		defer func() { fs.err = nil }()
		ctx := metadata.AppendToOutgoingContext(context.Background(), rpcmeta.RequestID, "req-err")
		var hdr metadata.MD
		_, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: project, Path: "x"}, grpc.Header(&hdr))
		if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "detail-for-logs-only") {
			t.Errorf("err = %v", err)
		}
		if got := hdr.Get(rpcmeta.RequestID); len(got) != 1 || got[0] != "req-err" {
			t.Errorf("x-request-id header on error = %v", got)
		}
		if !strings.Contains(logs.String(), "detail-for-logs-only") {
			t.Error("internal detail not logged")
		}
	})

	t.Run("panic is Internal", func(t *testing.T) {
		_, err := c.CreateProject(context.Background(), &workspacev1.CreateProjectRequest{Name: "p"}) // fakeFS.FS is nil
		if status.Code(err) != codes.Internal || status.Convert(err).Message() != internalMessage {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("expired deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		time.Sleep(time.Millisecond)
		_, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: project, Path: "x"})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("err = %v", err)
		}
	})
}

func findLine(t *testing.T, logs, requestID string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["request_id"] == requestID && m["@message"] == "rpc" {
			return m
		}
	}
	t.Fatalf("no rpc log line with request_id %s in:\n%s", requestID, logs)
	return nil
}
