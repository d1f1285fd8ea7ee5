package rpc

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
)

// workspace checks a WorkspaceRef: PROJECT needs a project_name, GLOBAL must
// not have one, anything else is INVALID_WORKSPACE.
func workspace(ref *workspacev1.WorkspaceRef) (davfs.Workspace, error) {
	switch ref.GetScope() {
	case workspacev1.WorkspaceScope_PROJECT:
		if ref.GetProjectName() == "" {
			return davfs.Workspace{}, invalid(davfs.ReasonInvalidWorkspace, "workspace.project_name is required for scope PROJECT")
		}
		return davfs.Workspace{Scope: davfs.ScopeProject, Project: ref.GetProjectName()}, nil
	case workspacev1.WorkspaceScope_GLOBAL:
		if ref.GetProjectName() != "" {
			return davfs.Workspace{}, invalid(davfs.ReasonInvalidWorkspace, "workspace.project_name must be empty for scope GLOBAL")
		}
		return davfs.Workspace{Scope: davfs.ScopeGlobal}, nil
	}
	return davfs.Workspace{}, invalid(davfs.ReasonInvalidWorkspace, "workspace.scope must be PROJECT or GLOBAL")
}

// requiring is workspace(ref) for a call whose field, holding value, is
// required: an empty value is refused after the workspace is checked.
func requiring(ref *workspacev1.WorkspaceRef, field, value string) (davfs.Workspace, error) {
	ws, err := workspace(ref)
	if err == nil && value == "" {
		err = invalid(davfs.ReasonInvalidArgument, field+" is required")
	}
	return ws, err
}

func pageSize(n int32) (int, error) {
	if n < 0 {
		return 0, invalid(davfs.ReasonInvalidArgument, "page_size must not be negative")
	}
	return int(n), nil
}

// entryTypes is the contract's name of a davfs entry type (UNSPECIFIED,
// the zero value, for any other).
var entryTypes = map[davfs.EntryType]workspacev1.EntryType{
	davfs.TypeFile:      workspacev1.EntryType_ENTRY_TYPE_FILE,
	davfs.TypeDirectory: workspacev1.EntryType_ENTRY_TYPE_DIRECTORY,
}

func entryType(t workspacev1.EntryType) (davfs.EntryType, error) {
	for d, pt := range entryTypes {
		if pt == t {
			return d, nil
		}
	}
	return davfs.TypeUnspecified, invalid(davfs.ReasonInvalidArgument, "type must be ENTRY_TYPE_FILE or ENTRY_TYPE_DIRECTORY")
}

// convert maps every element of xs with f.
func convert[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

func toEntry(e davfs.Entry) *workspacev1.Entry {
	out := &workspacev1.Entry{
		Name:     e.Name,
		Path:     e.Path,
		Size:     e.Size,
		Revision: e.Revision,
		Editable: e.Editable,
		Type:     entryTypes[e.Type],
	}
	if !e.ModTime.IsZero() {
		out.ModifiedAt = timestamppb.New(e.ModTime)
	}
	if e.Type == davfs.TypeFile && !e.Editable {
		out.NonEditableReason = nonEditable[e.Reason]
	}
	return out
}

// nonEditable is the contract's name of a davfs reason (UNSPECIFIED, the
// zero value, for any other).
var nonEditable = map[davfs.NonEditableReason]workspacev1.NonEditableReason{
	davfs.NotEditableTooLarge:      workspacev1.NonEditableReason_NON_EDITABLE_REASON_TOO_LARGE,
	davfs.NotEditableBinary:        workspacev1.NonEditableReason_NON_EDITABLE_REASON_BINARY,
	davfs.NotEditableNotUTF8:       workspacev1.NonEditableReason_NON_EDITABLE_REASON_NOT_UTF8,
	davfs.NotEditableMultipleLinks: workspacev1.NonEditableReason_NON_EDITABLE_REASON_MULTIPLE_LINKS,
	davfs.NotEditableUnknown:       workspacev1.NonEditableReason_NON_EDITABLE_REASON_UNKNOWN,
}

func toProject(p davfs.Project) *workspacev1.Project {
	out := &workspacev1.Project{Name: p.Name, GitInitialized: p.GitInitialized, Revision: p.Revision}
	if !p.ModTime.IsZero() {
		out.ModifiedAt = timestamppb.New(p.ModTime)
	}
	return out
}

// then applies to to a davfs call's result: to(v), or no response and the
// call's error.
func then[T, U any](to func(T) U) func(T, error) (U, error) {
	return func(v T, err error) (U, error) {
		if err != nil {
			var none U
			return none, err
		}
		return to(v), nil
	}
}
