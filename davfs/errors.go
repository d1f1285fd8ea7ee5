package davfs

import (
	"errors"
	"fmt"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
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
	CodeDataLoss           Code = 15
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
	CodeDataLoss:           "DataLoss",
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
	ReasonCheckpointDamaged    Reason = "CHECKPOINT_DAMAGED"
	// ReasonCheckpointsUnavailable: a store is configured but cannot be
	// used (davfs/checkpoint/open.go); files keep working.
	ReasonCheckpointsUnavailable Reason = "CHECKPOINTS_UNAVAILABLE"
	// ReasonWatchUnavailable: the file watcher cannot start (inotify
	// instances used up); files keep working.
	ReasonWatchUnavailable Reason = "WATCH_UNAVAILABLE"
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

// newErr builds a davfs *Error. msg must be safe for a client: a relative
// workspace path at most, never a host path or content.
func newErr(code Code, reason Reason, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...), Err: cause}
}

// fsErr maps a system call error on the workspace path rel to a davfs
// *Error. It never puts the host path into the message.
func fsErr(err error, rel string) error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) {
		return de
	}
	switch fdio.Errno(err) {
	case unix.ENOENT:
		return newErr(CodeNotFound, ReasonNotFound, err, "%q not found", rel)
	case unix.ENOTDIR:
		return newErr(CodeNotFound, ReasonNotFound, err, "%q not found (a parent is not a directory)", rel)
	case unix.EEXIST:
		return newErr(CodeAlreadyExists, ReasonAlreadyExists, err, "%q already exists", rel)
	case unix.ELOOP, unix.EXDEV:
		return newErr(CodePermissionDenied, ReasonSymlink, err, "%q crosses a symbolic link or mount", rel)
	case unix.EACCES, unix.EPERM:
		return newErr(CodePermissionDenied, ReasonReadOnly, err, "permission denied on %q", rel)
	case unix.EROFS:
		return newErr(CodePermissionDenied, ReasonReadOnly, err, "%q is on a read-only file system", rel)
	case unix.ENOSPC, unix.EDQUOT:
		return newErr(CodeResourceExhausted, ReasonNoSpace, err, "no space left while writing %q", rel)
	case unix.EFBIG:
		return newErr(CodeResourceExhausted, ReasonTooLarge, err, "%q is too large for the file system", rel)
	case unix.ENOTEMPTY:
		return newErr(CodeFailedPrecondition, ReasonDirectoryNotEmpty, err, "directory %q is not empty", rel)
	case unix.EISDIR:
		return newErr(CodeFailedPrecondition, ReasonNotAFile, err, "%q is a directory", rel)
	case unix.ENAMETOOLONG:
		return newErr(CodeResourceExhausted, ReasonPathTooLong, err, "%q is too long", rel)
	}
	return newErr(CodeInternal, ReasonInternal, err, "file system error on %q", rel)
}

func errInvalidPath(rel, why string) *Error {
	return newErr(CodeInvalidArgument, ReasonInvalidPath, nil, "invalid path %q: %s", rel, why)
}

func errSymlink(rel string) *Error {
	return newErr(CodePermissionDenied, ReasonSymlink, nil, "%q is or crosses a symbolic link", rel)
}

func errRevisionRequired() *Error {
	return newErr(CodeInvalidArgument, ReasonInvalidArgument, nil, "expected_revision is required")
}

func errStale(rel string) *Error {
	return newErr(CodeAborted, ReasonRevisionMismatch, nil, "%q has changed since it was read (revision mismatch)", rel)
}

func errClosed() *Error {
	return newErr(CodeUnavailable, ReasonInternal, nil, "file system is closed")
}

func errPreconditionRequired() *Error {
	return newErr(CodeFailedPrecondition, "PRECONDITION_REQUIRED", nil,
		"send If-Match with the current ETag (or hold a lock) to replace or remove an existing resource")
}

// PreconditionRequired is the FailedPrecondition/PRECONDITION_REQUIRED
// error of a write that replaces or removes an existing resource without
// If-Match; msg, when set, replaces the default message (KeepingOff,
// KeepSkipped).
func PreconditionRequired(msg string) *Error {
	e := errPreconditionRequired()
	if msg != "" {
		e.Message = msg
	}
	return e
}
