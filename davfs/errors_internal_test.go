package davfs

import (
	"testing"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// allReasons lists every Reason constant of errors.go.
var allReasons = []Reason{
	ReasonInvalidPath, ReasonInvalidName, ReasonInvalidWorkspace, ReasonInvalidCursor,
	ReasonInvalidArgument, ReasonConfirmationMismatch, ReasonNotText, ReasonNotFound,
	ReasonProjectNotFound, ReasonAlreadyExists, ReasonDenylisted, ReasonSymlink,
	ReasonOutsideGlobal, ReasonProtected, ReasonMultipleLinks, ReasonReadOnly,
	ReasonRevisionMismatch, ReasonCursorStale, ReasonTooLarge, ReasonPathTooLong,
	ReasonPathTooDeep, ReasonPageSizeTooLarge, ReasonNoSpace, ReasonNotAFile,
	ReasonNotADirectory, ReasonDirectoryNotEmpty, ReasonMoveIntoSelf, ReasonNotRegular,
	ReasonGitInitFailed, ReasonInternal,
}

// TestReasonsInContract: every davfs reason is a value of the contract's
// ErrorReason enum, so none is unmapped at the gRPC/REST boundary.
func TestReasonsInContract(t *testing.T) {
	for _, r := range allReasons {
		if _, ok := workspacev1.ErrorReason_value[string(r)]; !ok {
			t.Errorf("reason %s is not in workspace.v1.ErrorReason", r)
		}
	}
}

func TestCodeOfReasonOf(t *testing.T) {
	if CodeOf(nil) != CodeOK || ReasonOf(nil) != "" {
		t.Fatal("nil")
	}
	e := newErr(CodeAborted, ReasonRevisionMismatch, nil, "x")
	if CodeOf(e) != CodeAborted || ReasonOf(e) != ReasonRevisionMismatch {
		t.Fatal("davfs error")
	}
}
