package rpc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
)

// searchStream is the server side of one Search stream: what was sent.
type searchStream struct {
	grpc.ServerStream
	ctx  context.Context
	sent []*workspacev1.SearchResult
}

func (s *searchStream) Context() context.Context { return s.ctx }
func (s *searchStream) Send(m *workspacev1.SearchResult) error {
	s.sent = append(s.sent, m)
	return nil
}

func TestSearchSlots(t *testing.T) {
	d := t.TempDir()
	if err := os.MkdirAll(filepath.Join(d, "projects", "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "projects", "demo", "a.txt"), []byte("TODO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(d, "codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := davfs.Open(davfs.Config{ProjectsRoot: filepath.Join(d, "projects"), CodexHome: filepath.Join(d, "codex")})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	s := NewService(fs, nil).WithSearch(fs)
	req := &workspacev1.SearchRequest{Workspace: &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "demo"}, Query: "TODO"}
	for range MaxSearches {
		s.searchSlots <- struct{}{} // searches running
	}
	err = s.Search(req, &searchStream{ctx: context.Background()})
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || errtable.Reason(st) != "TOO_MANY_STREAMS" {
		t.Fatalf("with every slot taken: %v", err)
	}
	<-s.searchSlots // one ends
	st := &searchStream{ctx: context.Background()}
	if err := s.Search(req, st); err != nil || len(st.sent) != 2 || st.sent[0].GetMatch().GetPath() != "a.txt" || st.sent[1].GetSummary() == nil {
		t.Fatalf("with a slot free: %v %v", err, st.sent)
	}
	if len(s.searchSlots) != MaxSearches-1 {
		t.Fatalf("the search kept its slot: %d taken", len(s.searchSlots))
	}
}

func TestSearchUnavailableWithoutVolume(t *testing.T) {
	err := NewService(nil, nil).Search(&workspacev1.SearchRequest{}, &searchStream{ctx: context.Background()})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("err %v", err)
	}
}
