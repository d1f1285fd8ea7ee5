package davfs

import (
	"errors"
	"fmt"
)

// Code is the PRD §10.3 error class. Its values mirror the gRPC codes of the
// same names (the sidecar maps them one to one); davfs has no network code.
type Code int

const (
	CodeOK                 Code = 0
	CodeInvalidArgument    Code = 3
	CodeNotFound           Code = 5
	CodeAlreadyExists      Code = 6
	CodePermissionDenied   Code = 7
	CodeResourceExhausted  Code = 8
	CodeFailedPrecondition Code = 9
	CodeAborted            Code = 10
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
)

var codeNames = map[Code]string{
	CodeOK:                 "OK",
	CodeInvalidArgument:    "InvalidArgument",
	CodeNotFound:           "NotFound",
	CodeAlreadyExists:      "AlreadyExists",
	CodePermissionDenied:   "PermissionDenied",
	CodeResourceExhausted:  "ResourceExhausted",
	CodeFailedPrecondition: "FailedPrecondition",
	CodeAborted:            "Aborted",
	CodeInternal:           "Internal",
	CodeUnavailable:        "Unavailable",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Reason is a stable machine-readable reason. Each value is the name of a
// value of the contract's workspace.v1.ErrorReason enum.
type Reason string

const (
	ReasonInvalidPath          Reason = "INVALID_PATH"
	ReasonInvalidName          Reason = "INVALID_NAME"
	ReasonInvalidWorkspace     Reason = "INVALID_WORKSPACE"
	ReasonInvalidCursor        Reason = "INVALID_CURSOR"
	ReasonInvalidArgument      Reason = "INVALID_ARGUMENT"
	ReasonConfirmationMismatch Reason = "CONFIRMATION_MISMATCH"
	ReasonNotText              Reason = "NOT_TEXT"
	ReasonNotFound             Reason = "NOT_FOUND"
	ReasonProjectNotFound      Reason = "PROJECT_NOT_FOUND"
	ReasonAlreadyExists        Reason = "ALREADY_EXISTS"
	ReasonDenylisted           Reason = "DENYLISTED"
	ReasonSymlink              Reason = "SYMLINK"
	ReasonOutsideGlobal        Reason = "OUTSIDE_GLOBAL"
	ReasonProtected            Reason = "PROTECTED"
	ReasonMultipleLinks        Reason = "MULTIPLE_LINKS"
	ReasonReadOnly             Reason = "READ_ONLY"
	ReasonRevisionMismatch     Reason = "REVISION_MISMATCH"
	ReasonCursorStale          Reason = "CURSOR_STALE"
	ReasonTooLarge             Reason = "TOO_LARGE"
	ReasonPathTooLong          Reason = "PATH_TOO_LONG"
	ReasonPathTooDeep          Reason = "PATH_TOO_DEEP"
	ReasonPageSizeTooLarge     Reason = "PAGE_SIZE_TOO_LARGE"
	ReasonNoSpace              Reason = "NO_SPACE"
	ReasonNotAFile             Reason = "NOT_A_FILE"
	ReasonNotADirectory        Reason = "NOT_A_DIRECTORY"
	ReasonDirectoryNotEmpty    Reason = "DIRECTORY_NOT_EMPTY"
	ReasonMoveIntoSelf         Reason = "MOVE_INTO_SELF"
	ReasonNotRegular           Reason = "NOT_REGULAR"
	ReasonGitInitFailed        Reason = "GIT_INIT_FAILED"
	ReasonInternal             Reason = "INTERNAL"
	ReasonCheckpointNotFound   Reason = "CHECKPOINT_NOT_FOUND"
	ReasonCheckpointLimit      Reason = "CHECKPOINT_LIMIT"
	ReasonCheckpointConflict   Reason = "CHECKPOINT_CONFLICT"
	ReasonCheckpointsDisabled  Reason = "CHECKPOINTS_DISABLED"
)

// Error is the one error type of davfs. Message is safe to show a client: it
// never holds an absolute path, file content or a secret. Err keeps the
// underlying cause for logs only.
type Error struct {
	Code    Code
	Reason  Reason
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the Code of err: CodeOK for nil, CodeInternal for an error
// that is not a davfs *Error.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ReasonOf returns the Reason of err, ReasonInternal for a foreign error and
// "" for nil.
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonInternal
}
