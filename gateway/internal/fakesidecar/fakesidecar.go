// Package fakesidecar is an in-memory WorkspaceService for gateway tests: it
// records the metadata of every call and can be told to fail or stall, which
// a real sidecar cannot. It is not a model of davfs semantics beyond what the
// gateway's tests need (flat files per workspace, revisions, conflicts).
package fakesidecar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// Domain is the ErrorInfo domain.
const Domain = "workspace.agentworkspace.dev"

// Special paths: a path "fail/<REASON>" fails with that reason's code; a
// path "stall" blocks until the call's deadline; "leak" returns an error
// without ErrorInfo whose message names an internal address.
const (
	FailPrefix = "fail/"
	StallPath  = "stall"
	LeakPath   = "leak"
	LeakText   = "dial tcp 10.9.8.7:9091: secret internal endpoint"
)

// Call is one received call.
type Call struct {
	Method string
	MD     metadata.MD
}

// Server is a fake sidecar.
type Server struct {
	workspacev1.UnimplementedWorkspaceServiceServer
	Addr string

	mu    sync.Mutex
	files map[string]map[string]string // workspace key -> path -> content
	calls []Call
	srv   *grpc.Server
}

// Start serves a fake sidecar on 127.0.0.1:0 until t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fakesidecar: %v", err)
	}
	s := &Server{Addr: ln.Addr().String(), files: map[string]map[string]string{"global": {}}, srv: grpc.NewServer()}
	workspacev1.RegisterWorkspaceServiceServer(s.srv, s)
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(s.Stop)
	return s
}

// Stop stops serving (connections are closed).
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	srv.Stop()
}

// Restart serves again on the same address after Stop.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatalf("fakesidecar: restart on %s: %v", s.Addr, err)
	}
	srv := grpc.NewServer()
	workspacev1.RegisterWorkspaceServiceServer(srv, s)
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Calls returns the calls received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Put stores a file directly.
func (s *Server) Put(project, path, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files[project] == nil {
		s.files[project] = map[string]string{}
	}
	s.files[project][path] = content
}

func (s *Server) record(ctx context.Context, method string) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, MD: md.Copy()})
	s.mu.Unlock()
}

// Err returns a status with ErrorInfo like the real sidecar.
func Err(c codes.Code, reason, msg string) error {
	st := status.New(c, msg)
	st, _ = st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: Domain})
	return st.Err()
}

// CodeOf returns the gRPC code of a reason (the enum's numbering groups
// reasons by code, see types.proto).
func CodeOf(reason workspacev1.ErrorReason) codes.Code {
	return errtable.For(reason.String()).Code
}

func special(ctx context.Context, path string) error {
	switch {
	case strings.HasPrefix(path, FailPrefix):
		name := strings.TrimPrefix(path, FailPrefix)
		r := workspacev1.ErrorReason(workspacev1.ErrorReason_value[name])
		return Err(CodeOf(r), name, "forced failure "+name)
	case path == StallPath:
		<-ctx.Done()
		return ctx.Err()
	case path == LeakPath:
		return status.Error(codes.Internal, LeakText)
	}
	return nil
}

func key(w *workspacev1.WorkspaceRef) (string, error) {
	switch w.GetScope() {
	case workspacev1.WorkspaceScope_PROJECT:
		if w.GetProjectName() == "" {
			return "", Err(codes.InvalidArgument, "INVALID_WORKSPACE", "project_name is required")
		}
		return w.GetProjectName(), nil
	case workspacev1.WorkspaceScope_GLOBAL:
		return "global", nil
	}
	return "", Err(codes.InvalidArgument, "INVALID_WORKSPACE", "workspace.scope is required")
}

func revision(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:8])
}

func entry(path, content string) *workspacev1.Entry {
	name := path[strings.LastIndex(path, "/")+1:]
	return &workspacev1.Entry{Name: name, Path: path, Type: workspacev1.EntryType_ENTRY_TYPE_FILE, Size: int64(len(content)),
		ModifiedAt: timestamppb.New(time.Unix(1700000000, 0)), Revision: revision(content), Editable: true}
}

// open records a workspace call, applies the path's special behaviour and
// returns the workspace's files with s.mu held; the caller unlocks.
func (s *Server) open(ctx context.Context, method, path string, w *workspacev1.WorkspaceRef) (map[string]string, error) {
	s.record(ctx, method)
	if err := special(ctx, path); err != nil {
		return nil, err
	}
	s.mu.Lock()
	m, err := s.ws(w)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return m, nil
}

func (s *Server) ws(w *workspacev1.WorkspaceRef) (map[string]string, error) {
	k, err := key(w)
	if err != nil {
		return nil, err
	}
	m, ok := s.files[k]
	if !ok {
		return nil, Err(codes.NotFound, "PROJECT_NOT_FOUND", "project not found")
	}
	return m, nil
}

func (s *Server) ListProjects(ctx context.Context, _ *workspacev1.ListProjectsRequest) (*workspacev1.ListProjectsResponse, error) {
	s.record(ctx, "ListProjects")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &workspacev1.ListProjectsResponse{}
	for name := range s.files {
		if name != "global" {
			out.Projects = append(out.Projects, &workspacev1.Project{Name: name, GitInitialized: true, Revision: revision(name)})
		}
	}
	sort.Slice(out.Projects, func(i, j int) bool { return out.Projects[i].Name < out.Projects[j].Name })
	return out, nil
}

func (s *Server) CreateProject(ctx context.Context, req *workspacev1.CreateProjectRequest) (*workspacev1.Project, error) {
	s.record(ctx, "CreateProject")
	if err := special(ctx, req.GetName()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetName() == "" || req.GetName() == "global" || strings.Contains(req.GetName(), "/") {
		return nil, Err(codes.InvalidArgument, "INVALID_NAME", "invalid project name")
	}
	if _, ok := s.files[req.GetName()]; ok {
		return nil, Err(codes.AlreadyExists, "ALREADY_EXISTS", "project already exists")
	}
	s.files[req.GetName()] = map[string]string{}
	return &workspacev1.Project{Name: req.GetName(), GitInitialized: true, Revision: revision(req.GetName())}, nil
}

func (s *Server) DeleteProject(ctx context.Context, req *workspacev1.DeleteProjectRequest) (*workspacev1.DeleteProjectResponse, error) {
	s.record(ctx, "DeleteProject")
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetConfirmName() != req.GetName() {
		return nil, Err(codes.InvalidArgument, "CONFIRMATION_MISMATCH", "confirm_name does not match")
	}
	if _, ok := s.files[req.GetName()]; !ok || req.GetName() == "global" {
		return nil, Err(codes.NotFound, "PROJECT_NOT_FOUND", "project not found")
	}
	delete(s.files, req.GetName())
	return &workspacev1.DeleteProjectResponse{}, nil
}

func (s *Server) ListEntries(ctx context.Context, req *workspacev1.ListEntriesRequest) (*workspacev1.ListEntriesResponse, error) {
	m, err := s.open(ctx, "ListEntries", req.GetPath(), req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := &workspacev1.ListEntriesResponse{DirectoryRevision: "dir"}
	for p, c := range m {
		out.Entries = append(out.Entries, entry(p, c))
	}
	sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].Path < out.Entries[j].Path })
	return out, nil
}

func (s *Server) GetFile(ctx context.Context, req *workspacev1.GetFileRequest) (*workspacev1.GetFileResponse, error) {
	m, err := s.open(ctx, "GetFile", req.GetPath(), req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	c, ok := m[req.GetPath()]
	if !ok {
		return nil, Err(codes.NotFound, "NOT_FOUND", "file not found")
	}
	return &workspacev1.GetFileResponse{Entry: entry(req.GetPath(), c), Content: c}, nil
}

func (s *Server) CreateEntry(ctx context.Context, req *workspacev1.CreateEntryRequest) (*workspacev1.Entry, error) {
	p := req.GetName()
	if req.GetParentPath() != "" {
		p = req.GetParentPath() + "/" + p
	}
	m, err := s.open(ctx, "CreateEntry", p, req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if _, ok := m[p]; ok {
		return nil, Err(codes.AlreadyExists, "ALREADY_EXISTS", "entry already exists")
	}
	m[p] = ""
	return entry(p, ""), nil
}

func (s *Server) UpdateFile(ctx context.Context, req *workspacev1.UpdateFileRequest) (*workspacev1.Entry, error) {
	m, err := s.open(ctx, "UpdateFile", req.GetPath(), req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if _, err := current(m, req.GetPath(), req.GetExpectedRevision(), "file"); err != nil {
		return nil, err
	}
	m[req.GetPath()] = req.GetContent()
	return entry(req.GetPath(), req.GetContent()), nil
}

func (s *Server) MoveEntry(ctx context.Context, req *workspacev1.MoveEntryRequest) (*workspacev1.Entry, error) {
	s.record(ctx, "MoveEntry")
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.ws(req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	c, err := current(m, req.GetSourcePath(), req.GetExpectedRevision(), "entry")
	if err != nil {
		return nil, err
	}
	if _, ok := m[req.GetDestinationPath()]; ok {
		return nil, Err(codes.AlreadyExists, "ALREADY_EXISTS", "destination exists")
	}
	delete(m, req.GetSourcePath())
	m[req.GetDestinationPath()] = c
	return entry(req.GetDestinationPath(), c), nil
}

func (s *Server) DeleteEntry(ctx context.Context, req *workspacev1.DeleteEntryRequest) (*workspacev1.DeleteEntryResponse, error) {
	s.record(ctx, "DeleteEntry")
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.ws(req.GetWorkspace())
	if err != nil {
		return nil, err
	}
	if _, err := current(m, req.GetPath(), req.GetExpectedRevision(), "entry"); err != nil {
		return nil, err
	}
	delete(m, req.GetPath())
	return &workspacev1.DeleteEntryResponse{}, nil
}

// current returns the content at path in m if its revision is expected;
// what names the path in the errors ("file", "entry").
func current(m map[string]string, path, expected, what string) (string, error) {
	c, ok := m[path]
	if !ok {
		return "", Err(codes.NotFound, "NOT_FOUND", what+" not found")
	}
	if revision(c) != expected {
		return "", Err(codes.Aborted, "REVISION_MISMATCH", "the "+what+" changed since it was read")
	}
	return c, nil
}

// Revision exposes the fake's revision function.
func Revision(content string) string { return revision(content) }
