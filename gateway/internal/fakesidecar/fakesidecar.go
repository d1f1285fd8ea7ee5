// Package fakesidecar serves the real sidecar WorkspaceService (davfs over
// a t.TempDir() volume, see sidecartest.InProcess) in the test process, with
// what a real sidecar cannot do for the gateway's tests: it records the
// metadata of every call, can be told to fail or stall, and can be stopped
// and restarted on the same address. It serves mutual TLS like a real
// sidecar, with a certificate for its agent from the test process's CA
// (internal/pki/pkitest), so a gateway of gatewaytest trusts it.
package fakesidecar

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/pki/pkitest"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// Special paths (a request's path, or CreateProject's name): a path
// "fail/<REASON>" fails with that reason, through the sidecar's own error
// mapping (its code, ErrorInfo, message "forced failure <REASON>"); a path
// "stall" blocks until the call's deadline; "leak" returns an error without
// ErrorInfo whose message names an internal address.
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

// Server is a sidecar's WorkspaceService on Addr.
type Server struct {
	Addr        string
	ProjectsDir string // the projects volume
	AgentID     string // the agent its certificate names
	TLSDir      string // ca.crt, gateway.crt/.key, sidecar-<AgentID>.crt/.key
	tls         *pki.Source

	svc   workspacev1.WorkspaceServiceServer
	icpt  grpc.UnaryServerInterceptor // the sidecar's own
	srv   *grpc.Server
	mu    sync.Mutex
	calls []Call
}

// Start serves agentID's sidecar on 127.0.0.1:0 until t ends.
func Start(t testing.TB, agentID string) *Server {
	t.Helper()
	s := &Server{AgentID: agentID, TLSDir: pkitest.Dir(t, agentID)}
	src, err := pki.NewSource(pki.SidecarFiles(s.TLSDir, agentID), nil, nil)
	if err != nil {
		t.Fatalf("fakesidecar: %v", err)
	}
	s.tls = src
	s.svc, s.icpt, s.ProjectsDir = sidecartest.InProcess(t)
	s.Addr = s.serve(t, "127.0.0.1:0")
	t.Cleanup(s.Stop)
	return s
}

// serve starts a new gRPC server (a stopped one cannot serve again) on addr
// and returns the address it listens on.
func (s *Server) serve(t testing.TB, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("fakesidecar: listen on %s: %v", addr, err)
	}
	s.srv = grpc.NewServer(grpc.Creds(pki.HandshakenCredentials()), grpc.WaitForHandlers(true), grpc.ChainUnaryInterceptor(s.icpt, s.intercept))
	workspacev1.RegisterWorkspaceServiceServer(s.srv, s.svc)
	go s.srv.Serve(pki.Listen(ln, s.tls.ServerConfig(pki.GatewayURI, pki.ProtoGRPC), pki.ListenOptions{}))
	return ln.Addr().String()
}

// ClientTLS is the gateway's client config for this sidecar (gRPC).
func (s *Server) ClientTLS(t testing.TB) *tls.Config {
	return pkitest.GatewayClient(t, s.TLSDir, s.AgentID, pki.ProtoGRPC)
}

// Stop stops serving (connections are closed).
func (s *Server) Stop() { s.srv.Stop() }

// Restart serves again on the same address after Stop.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.serve(t, s.Addr)
}

// Calls returns the calls received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Put writes a file, with its project and parent directories, into the
// projects volume.
func (s *Server) Put(t testing.TB, project, name, content string) {
	t.Helper()
	p := filepath.Join(s.ProjectsDir, project, name)
	err := os.MkdirAll(filepath.Dir(p), 0o755)
	if err == nil {
		err = os.WriteFile(p, []byte(content), 0o644)
	}
	if err != nil {
		t.Fatalf("fakesidecar: put %s/%s: %v", project, name, err)
	}
}

// Revision returns the revision the service gives a project's file now.
func (s *Server) Revision(t testing.TB, project, name string) string {
	t.Helper()
	f, err := s.svc.GetFile(context.Background(), &workspacev1.GetFileRequest{Path: name,
		Workspace: &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: project}})
	if err != nil {
		t.Fatalf("fakesidecar: revision of %s/%s: %v", project, name, err)
	}
	return f.GetEntry().GetRevision()
}

// intercept records a call and applies the special paths, after the
// sidecar's own interceptor (which passes a status through and makes a
// davfs error the status a real sidecar returns).
func (s *Server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: path.Base(info.FullMethod), MD: md.Copy()})
	s.mu.Unlock()
	p := special(req)
	if reason, ok := strings.CutPrefix(p, FailPrefix); ok {
		return nil, &davfs.Error{Reason: davfs.Reason(reason), Message: "forced failure " + reason}
	}
	switch p {
	case StallPath:
		<-ctx.Done()
		return nil, ctx.Err()
	case LeakPath:
		return nil, status.Error(codes.Internal, LeakText)
	}
	return handler(ctx, req)
}

// special is the path of req that the special paths are matched against.
func special(req any) string {
	switch r := req.(type) {
	case *workspacev1.CreateProjectRequest:
		return r.GetName()
	case *workspacev1.CreateEntryRequest:
		return path.Join(r.GetParentPath(), r.GetName())
	case interface{ GetPath() string }:
		return r.GetPath()
	}
	return ""
}
