package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/prometheus/client_golang/prometheus"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/metrics"
	"github.com/agentworkspace/files/gateway/internal/portal"
	"github.com/agentworkspace/files/gateway/internal/session"
)

// deleteRecorder records which delete reached the service, with what.
type deleteRecorder struct {
	workspacev1.UnimplementedWorkspaceManagementServiceServer
	got string
}

func (d *deleteRecorder) DeleteProject(_ context.Context, req *workspacev1.DeleteAgentProjectRequest) (*workspacev1.DeleteProjectResponse, error) {
	d.got = fmt.Sprintf("DeleteProject agent=%s name=%s confirm=%s", req.GetAgentId(), req.GetName(), req.GetConfirmName())
	return &workspacev1.DeleteProjectResponse{}, nil
}

func (d *deleteRecorder) DeleteProjectEntry(_ context.Context, req *workspacev1.DeleteProjectEntryRequest) (*workspacev1.DeleteEntryResponse, error) {
	d.got = fmt.Sprintf("DeleteProjectEntry agent=%s scope=%s project=%s path=%s", req.GetAgentId(),
		req.GetWorkspace().GetScope(), req.GetWorkspace().GetProjectName(), req.GetPath())
	return &workspacev1.DeleteEntryResponse{}, nil
}

func newServerWith(t *testing.T, svc workspacev1.WorkspaceManagementServiceServer) *Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(config.Auth{Tokens: []config.Token{{Operator: "alice", Role: "admin", SHA256: config.HashToken("tok")}}}, session.New(nil, 0, 0))
	s, err := New(Options{Auth: a, Service: svc, Metrics: m, Gatherer: reg,
		Portal: portal.NewFS(fstest.MapFS{"index.html": {Data: []byte("<html>portal</html>")}})})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The route table's one rule (README: DELETE .../projects/entries with the
// query confirm_name alone deletes the project named "entries"; any other
// query deletes an entry), and the generated routes around it.
func TestProjectNamedEntriesRule(t *testing.T) {
	d := &deleteRecorder{}
	s := newServerWith(t, d)
	p := APIPrefix + "/agents/codex-a/projects/"
	for _, c := range []struct{ target, want string }{
		{"entries?confirm_name=entries", "DeleteProject agent=codex-a name=entries confirm=entries"},
		{"entries?confirm_name=", "DeleteProject agent=codex-a name=entries confirm="},
		{"entries?confirm_name=nope", "DeleteProject agent=codex-a name=entries confirm=nope"},
		{"demo?confirm_name=demo", "DeleteProject agent=codex-a name=demo confirm=demo"},
		{"files?confirm_name=files", "DeleteProject agent=codex-a name=files confirm=files"},
		{"entries?workspace.scope=PROJECT&workspace.project_name=demo&path=x", "DeleteProjectEntry agent=codex-a scope=PROJECT project=demo path=x"},
		{"entries?confirm_name=entries&path=x", "DeleteProjectEntry agent=codex-a scope=WORKSPACE_SCOPE_UNSPECIFIED project= path=x"},
		{"entries", "DeleteProjectEntry agent=codex-a scope=WORKSPACE_SCOPE_UNSPECIFIED project= path="},
		// Named twice: not DeleteProject's query; DeleteProjectEntry ignores
		// a parameter that names none of its fields, as generated.
		{"entries?confirm_name=a&confirm_name=b", "DeleteProjectEntry agent=codex-a scope=WORKSPACE_SCOPE_UNSPECIFIED project= path="},
	} {
		d.got = ""
		r := httptest.NewRequest(http.MethodDelete, p+c.target, nil)
		r.Header.Set("Authorization", "Bearer tok")
		w := serve(s, r)
		if w.Code != http.StatusOK || d.got != c.want {
			t.Errorf("DELETE %s: %d %q\n got %s\nwant %s", c.target, w.Code, w.Body, d.got, c.want)
		}
	}
	// An agent ID that needs escaping keeps the ordinary route.
	d.got = ""
	r := httptest.NewRequest(http.MethodDelete, APIPrefix+"/agents/a%20b/projects/entries?confirm_name=entries", nil)
	r.Header.Set("Authorization", "Bearer tok")
	if w := serve(s, r); w.Code != http.StatusOK || d.got != "DeleteProjectEntry agent=a b scope=WORKSPACE_SCOPE_UNSPECIFIED project= path=" {
		t.Errorf("escaped agent ID: %d %s", w.Code, d.got)
	}
}

func TestDeletesProject(t *testing.T) {
	for q, want := range map[string]bool{
		"confirm_name=entries": true, "confirm_name=": true, "confirm_name": true,
		"": false, "path=x": false, "confirm_name=a&confirm_name=b": false,
		"confirm_name=a&path=x": false, "confirm_name=%zz": false, "confirm_name=a;b": false,
		"confirm_name=entries&skip_checkpoint=true": true, "skip_checkpoint=true": false,
		"confirm_name=a&skip_checkpoint=true&skip_checkpoint=true": false,
		"confirm_name=a&skip_checkpoint=true&path=x":               false,
	} {
		if got := deletesProject(q); got != want {
			t.Errorf("deletesProject(%q) = %v, want %v", q, got, want)
		}
	}
}
