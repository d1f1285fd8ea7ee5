package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// fastQueryCorpus: the queries the portal and clients send, both field
// name styles, enum by name and by number, and everything that must stay
// grpc-gateway's decision (unknown parameters, which it ignores; repeated
// ones; agent_id; bad values; bad escapes; ';').
var fastQueryCorpus = []string{
	"",
	"workspace.scope=PROJECT&workspace.project_name=demo",
	"workspace.scope=PROJECT&workspace.projectName=demo&path=dir%2Fsub&page_size=100&cursor=abc",
	"workspace.scope=GLOBAL&path=skills&pageSize=5",
	"workspace.scope=WORKSPACE_SCOPE_UNSPECIFIED",
	"workspace.scope=1&workspace.project_name=demo",
	"workspace.scope=2",
	"workspace.scope=99",
	"workspace.scope=project",
	"workspace.scope=",
	"workspace.scope=PROJECT&workspace.scope=GLOBAL",
	"workspace.project_name=a&workspace.projectName=b",
	"path=a&path=b",
	"page_size=1&pageSize=2",
	"page_size=-1", "page_size=+7", "page_size=0x10", "page_size=2147483648", "page_size=", "page_size=1.5", "page_size=007",
	"cursor=&path=",
	"path",
	"&&path=x&&",
	"path=%E6%97%A5%E6%9C%AC+x%2By",
	"path=%zz", "path%=x", "pa%74h=x",
	"path=a;b", "path=a%3Bb",
	"agent_id=other", "agentId=other",
	"unknown=1", "workspace.unknown=1", "Path=x", "workspace=PROJECT", "=x", "workspace.scope.x=1",
	"path=bad%FFutf8",
	"cursor=c&cursor=d",
	// url.ParseQuery refuses more than 10000 parameters, empty ones
	// included (GODEBUG urlmaxqueryparams).
	"path=x" + strings.Repeat("&", 10000),
	"path=x" + strings.Repeat("&", 9999),
}

func TestFastQueryMatchesGrpcGateway(t *testing.T) {
	fastHits := map[string]bool{}
	for _, q := range fastQueryCorpus {
		r := httptest.NewRequest(http.MethodGet, "/x?"+q, nil)
		for _, c := range []struct {
			name       string
			fast, slow proto.Message
			decode     func(*http.Request) (bool, error)
		}{
			{"entries", &workspacev1.ListProjectEntriesRequest{AgentId: "a"}, &workspacev1.ListProjectEntriesRequest{AgentId: "a"}, nil},
			{"files", &workspacev1.GetProjectFileRequest{AgentId: "a"}, &workspacev1.GetProjectFileRequest{AgentId: "a"}, nil},
		} {
			var fast bool
			var ferr error
			switch m := c.fast.(type) {
			case *workspacev1.ListProjectEntriesRequest:
				fast, ferr = decodeEntriesQuery(r.Clone(context.Background()), m)
			case *workspacev1.GetProjectFileRequest:
				fast, ferr = decodeFileQuery(r.Clone(context.Background()), m)
			}
			serr := populateSlow(r.Clone(context.Background()), c.slow, agentIDFilter)
			if (ferr == nil) != (serr == nil) {
				t.Errorf("%s %q: fast error %v, grpc-gateway error %v", c.name, q, ferr, serr)
				continue
			}
			if serr != nil {
				if status.Code(ferr) != codes.InvalidArgument || ferr.Error() != serr.Error() {
					t.Errorf("%s %q: fast error %v, grpc-gateway error %v", c.name, q, ferr, serr)
				}
				continue
			}
			if !proto.Equal(c.fast, c.slow) {
				t.Errorf("%s %q: fast %v, grpc-gateway %v", c.name, q, c.fast, c.slow)
			}
			if fast {
				fastHits[c.name+" "+q] = true
			}
		}
	}
	// The common forms must take the fast path (or the override is pointless).
	for _, k := range []string{
		"entries workspace.scope=PROJECT&workspace.projectName=demo&path=dir%2Fsub&page_size=100&cursor=abc",
		"entries workspace.scope=GLOBAL&path=skills&pageSize=5",
		"files workspace.scope=PROJECT&workspace.project_name=demo",
		"files path=%E6%97%A5%E6%9C%AC+x%2By",
	} {
		if !fastHits[k] {
			t.Errorf("%s: not decoded by the fast path", k)
		}
	}
}

// routeService records the requests of the two overridden routes.
type routeService struct {
	cannedService
	entries *workspacev1.ListProjectEntriesRequest
	file    *workspacev1.GetProjectFileRequest
}

func (r *routeService) ListProjectEntries(ctx context.Context, req *workspacev1.ListProjectEntriesRequest) (*workspacev1.ListEntriesResponse, error) {
	r.entries = req
	return &workspacev1.ListEntriesResponse{}, nil
}

func (r *routeService) GetProjectFile(ctx context.Context, req *workspacev1.GetProjectFileRequest) (*workspacev1.GetFileResponse, error) {
	r.file = req
	if req.GetPath() == "missing" {
		return nil, status.Error(codes.NotFound, "no such file")
	}
	return &workspacev1.GetFileResponse{Content: "x"}, nil
}

// TestFastGetRoutes drives the overridden routes through the whole server:
// the request the service gets, the 400 for an unknown parameter (REST error
// shape, request ID) for an undecodable value, unknown parameters ignored
// as grpc-gateway does, service errors mapped as before.
func TestFastGetRoutes(t *testing.T) {
	s, _ := newServer(t)
	svc := &routeService{}
	s.opts.Service = svc
	if err := s.registerFastGets(); err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer tok")
		r.Header.Set("X-Request-ID", "rid-1")
		return serve(s, r)
	}
	w := get(APIPrefix + "/agents/codex-a/projects/entries?workspace.scope=PROJECT&workspace.projectName=demo&path=d&page_size=7")
	want := &workspacev1.ListProjectEntriesRequest{AgentId: "codex-a", Workspace: &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "demo"}, Path: "d", PageSize: 7}
	if w.Code != http.StatusOK || !proto.Equal(svc.entries, want) {
		t.Fatalf("entries: %d %s, service got %v", w.Code, w.Body, svc.entries)
	}
	if w.Header().Get("Content-Length") == "" || w.Header().Get("X-Request-ID") != "rid-1" {
		t.Errorf("entries headers: %v", w.Header())
	}
	w = get(APIPrefix + "/agents/codex-a/projects/files?workspace.scope=GLOBAL&path=AGENTS.md")
	if w.Code != http.StatusOK || svc.file.GetPath() != "AGENTS.md" || svc.file.GetAgentId() != "codex-a" || svc.file.GetWorkspace().GetScope() != workspacev1.WorkspaceScope_GLOBAL {
		t.Fatalf("files: %d %s, service got %v", w.Code, w.Body, svc.file)
	}
	if !strings.Contains(w.Body.String(), `"content":"x"`) {
		t.Errorf("files body: %s", w.Body)
	}
	// grpc-gateway ignores parameters that name no field; so does the override.
	w = get(APIPrefix + "/agents/codex-a/projects/files?workspace.scope=GLOBAL&path=x&bogus=1")
	if w.Code != http.StatusOK || svc.file.GetPath() != "x" {
		t.Errorf("unknown parameter: %d %s, service got %v", w.Code, w.Body, svc.file)
	}
	w = get(APIPrefix + "/agents/codex-a/projects/entries?workspace.scope=PROJECT&page_size=ten")
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "INVALID_ARGUMENT") || w.Header().Get("X-Request-ID") != "rid-1" {
		t.Errorf("bad page_size: %d %s %v", w.Code, w.Body, w.Header())
	}
	w = get(APIPrefix + "/agents/codex-a/projects/entries?workspace.scope=NOPE")
	if w.Code != http.StatusBadRequest {
		t.Errorf("bad enum: %d %s", w.Code, w.Body)
	}
	w = get(APIPrefix + "/agents/codex-a/projects/files?path=missing")
	if w.Code != http.StatusNotFound {
		t.Errorf("service error: %d %s", w.Code, w.Body)
	}
}
