package mgmt

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// Every string field the sidecar requests carry is checked, and the reason
// fits the field.
func TestRefuseInvalidUTF8(t *testing.T) {
	bad := "a\xffb"
	proj := func(name string) *workspacev1.WorkspaceRef {
		return &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: name}
	}
	for _, c := range []struct {
		req           proto.Message
		field, reason string
	}{
		{&workspacev1.GetFileRequest{Workspace: proj("p"), Path: bad}, "path", "INVALID_PATH"},
		{&workspacev1.GetFileRequest{Workspace: proj(bad), Path: "x"}, "workspace.project_name", "INVALID_WORKSPACE"},
		{&workspacev1.ListEntriesRequest{Workspace: proj("p"), Cursor: bad}, "cursor", "INVALID_CURSOR"},
		{&workspacev1.CreateEntryRequest{Workspace: proj("p"), ParentPath: bad, Name: "n"}, "parent_path", "INVALID_PATH"},
		{&workspacev1.CreateEntryRequest{Workspace: proj("p"), Name: bad}, "name", "INVALID_NAME"},
		{&workspacev1.MoveEntryRequest{Workspace: proj("p"), SourcePath: "a", DestinationPath: bad}, "destination_path", "INVALID_PATH"},
		{&workspacev1.UpdateFileRequest{Workspace: proj("p"), Path: "a", Content: bad}, "content", "INVALID_ARGUMENT"},
		{&workspacev1.UpdateFileRequest{Workspace: proj("p"), Path: "a", ExpectedRevision: bad}, "expected_revision", "INVALID_ARGUMENT"},
		{&workspacev1.DeleteProjectRequest{Name: "p", ConfirmName: bad}, "confirm_name", "INVALID_ARGUMENT"},
		{&workspacev1.CreateProjectRequest{Name: bad}, "name", "INVALID_NAME"},
	} {
		invoked := false
		err := refuseInvalidUTF8(context.Background(), "/m", c.req, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			invoked = true
			return nil
		})
		st := status.Convert(err)
		if invoked || st.Code() != codes.InvalidArgument || errtable.Reason(st) != c.reason || st.Message() != c.field+" is not valid UTF-8" {
			t.Errorf("%T: invoked %v, %s %s %q; want %s %s", c.req, invoked, st.Code(), errtable.Reason(st), st.Message(), c.reason, c.field)
		}
	}
	ok := &workspacev1.UpdateFileRequest{Workspace: proj("ünïcödé"), Path: "日本/x", Content: "\uFFFD fine"}
	invoked := false
	if err := refuseInvalidUTF8(context.Background(), "/m", ok, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		invoked = true
		return nil
	}); err != nil || !invoked {
		t.Errorf("valid request: %v, invoked %v", err, invoked)
	}
}

// Repeated and map fields are walked too: a list's elements, a map's keys
// and values, nested messages named by their path.
func TestStringFieldErrorListsAndMaps(t *testing.T) {
	bad := func(s string) bool { return s == "bad" }
	for _, c := range []struct {
		m    proto.Message
		want string
	}{
		{&structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("bad")}}, "fields.string_value x"},
		{&structpb.Struct{Fields: map[string]*structpb.Value{"bad": structpb.NewNumberValue(1)}}, "fields x"},
		{&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("ok"), structpb.NewStringValue("bad")}}, "values.string_value x"},
		{&structpb.ListValue{Values: []*structpb.Value{structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("bad")}})}}, "values.list_value.values.string_value x"},
		{&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("ok")}}, ""},
	} {
		got := ""
		if err := StringFieldError(c.m, bad, "x"); err != nil {
			got = status.Convert(err).Message()
		}
		if got != c.want {
			t.Errorf("%v: %q, want %q", c.m, got, c.want)
		}
	}
}
