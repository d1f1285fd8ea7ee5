package davfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

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
	// used (checkpoint_open.go); files keep working.
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

// Errors at the webdav.FileSystem boundary.
//
// x/net/webdav decides 404 (and 409 for PUT/MKCOL) with os.IsNotExist, and
// os.IsNotExist/IsPermission/IsExist unwrap one *fs.PathError and then only
// compare its Err with the fs sentinel by == (or ask a syscall.Errno). So
// the three classes that have a sentinel are returned exactly as
//
//	&fs.PathError{Op: op, Path: webdavName, Err: fs.ErrNotExist}   // NotFound
//	&fs.PathError{Op: op, Path: webdavName, Err: fs.ErrPermission} // PermissionDenied
//	&fs.PathError{Op: op, Path: webdavName, Err: fs.ErrExist}      // AlreadyExists
//
// and every other davfs error as
//
//	&fs.PathError{Op: op, Path: webdavName, Err: *webdavError}
//
// where the webdavError unwraps to the davfs *Error, so errors.As(err,
// &*Error) recovers the code and reason: REVISION_MISMATCH (Aborted, 412),
// TOO_LARGE and NO_SPACE (ResourceExhausted, 413/507), NOT_A_FILE,
// NOT_A_DIRECTORY, DIRECTORY_NOT_EMPTY (FailedPrecondition, 409/405),
// INVALID_PATH and friends (InvalidArgument, which also matches fs.ErrInvalid,
// as does FailedPrecondition).
//
// ErrorFromWebDAV covers both: for a sentinel error it returns a fresh
// *Error with the class's code and a generic reason (NOT_FOUND,
// ALREADY_EXISTS, READ_ONLY for permission). The specific reason of those
// three classes (PROJECT_NOT_FOUND, DENYLISTED, SYMLINK, OUTSIDE_GLOBAL,
// PROTECTED, MULTIPLE_LINKS, ...) cannot travel through os.Is*-compatible
// errors; a caller that needs it (a reason header, an audit record) puts an
// ErrorLog in the request's context (WithErrorLog), where every error this
// layer returns is recorded with its original *Error.
//
// The Path is the WebDAV name (never a host path); the message is the safe
// davfs message.

// webdavError carries a davfs *Error through an *fs.PathError.
type webdavError struct {
	kind error // fs.ErrInvalid or nil
	err  *Error
}

func (e *webdavError) Error() string { return e.err.Message }

// Is makes errors.Is(err, fs.ErrInvalid) hold for invalid arguments and
// failed preconditions.
func (e *webdavError) Is(target error) bool { return e.kind != nil && target == e.kind }

func (e *webdavError) Unwrap() error { return e.err }

// ErrorFromWebDAV recovers the davfs *Error from an error returned by the
// webdav.FileSystem of WebDAV (or by a webdav.File it opened), including the
// error x/net/webdav hands its Logger: the original for every class but
// NotFound, PermissionDenied and AlreadyExists, which come back with their
// code and a generic reason (see above). It reports false for nil and for
// errors that did not come from davfs (a failed request body read, a webdav
// lock error, a context error).
func ErrorFromWebDAV(err error) (*Error, bool) {
	if err == nil {
		return nil, false
	}
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return nil, false
	}
	switch pe.Err {
	case fs.ErrNotExist:
		return errNotFound(), true
	case fs.ErrPermission:
		return &Error{Code: CodePermissionDenied, Reason: ReasonReadOnly, Message: "permission denied"}, true
	case fs.ErrExist:
		return &Error{Code: CodeAlreadyExists, Reason: ReasonAlreadyExists, Message: "already exists"}, true
	}
	return nil, false
}

// ErrorLog records the errors the WebDAV FileSystem returned for one
// request, each with the davfs *Error it came from, so the specific reason
// of a NotFound/PermissionDenied/AlreadyExists survives the os.Is*-shaped
// boundary. It keeps the last few only (a PROPFIND may meet many vanished
// entries); it is safe for concurrent use.
type ErrorLog struct {
	mu   sync.Mutex
	errs []loggedErr // oldest first, at most maxLoggedErrs
}

type loggedErr struct {
	pe *fs.PathError
	e  *Error
}

const maxLoggedErrs = 8

type errorLogKey struct{}

// WithErrorLog returns ctx carrying a new ErrorLog.
func WithErrorLog(ctx context.Context) (context.Context, *ErrorLog) {
	l := &ErrorLog{}
	return context.WithValue(ctx, errorLogKey{}, l), l
}

func (l *ErrorLog) add(pe *fs.PathError, e *Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) == maxLoggedErrs {
		copy(l.errs, l.errs[1:])
		l.errs = l.errs[:maxLoggedErrs-1]
	}
	l.errs = append(l.errs, loggedErr{pe, e})
}

// Lookup returns the davfs *Error behind err: the recorded original when
// err (or an error it wraps) is one this layer returned, else what
// ErrorFromWebDAV recovers.
func (l *ErrorLog) Lookup(err error) (*Error, bool) {
	var pe *fs.PathError
	if l != nil && errors.As(err, &pe) {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i := len(l.errs) - 1; i >= 0; i-- {
			if l.errs[i].pe == pe {
				return l.errs[i].e, true
			}
		}
	}
	return ErrorFromWebDAV(err)
}

// Last returns the most recent davfs error recorded, for a failure whose
// error the caller never saw (http.ServeContent answering 500 when a Seek
// failed).
func (l *ErrorLog) Last() (*Error, bool) {
	if l == nil {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) == 0 {
		return nil, false
	}
	return l.errs[len(l.errs)-1].e, true
}

// wrapErr maps a davfs error onto the webdav.FileSystem boundary (see
// above) and records it in ctx's ErrorLog. A nil error stays nil; an
// *fs.PathError is returned unchanged.
func wrapErr(ctx context.Context, op, name string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*fs.PathError); ok {
		return err // already mapped by this layer
	}
	var e *Error
	if !errors.As(err, &e) {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	var pe *fs.PathError
	switch e.Code {
	case CodeNotFound:
		pe = &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	case CodePermissionDenied:
		pe = &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	case CodeAlreadyExists:
		pe = &fs.PathError{Op: op, Path: name, Err: fs.ErrExist}
	case CodeInvalidArgument, CodeFailedPrecondition:
		pe = &fs.PathError{Op: op, Path: name, Err: &webdavError{kind: fs.ErrInvalid, err: e}}
	default:
		pe = &fs.PathError{Op: op, Path: name, Err: &webdavError{err: e}}
	}
	if l, ok := ctx.Value(errorLogKey{}).(*ErrorLog); ok {
		l.add(pe, e)
	}
	return pe
}

func errNotFound() *Error {
	return &Error{Code: CodeNotFound, Reason: ReasonNotFound, Message: "not found"}
}

func errRevisionMismatch() *Error {
	return newErr(CodeAborted, ReasonRevisionMismatch, nil, "the target's revision does not match the precondition")
}

func readOnlyErr(ctx context.Context, op, name, msg string) error {
	return wrapErr(ctx, op, name, &Error{Code: CodePermissionDenied, Reason: ReasonReadOnly, Message: msg})
}

func errPreconditionRequired() *Error {
	return newErr(CodeFailedPrecondition, "PRECONDITION_REQUIRED", nil,
		"send If-Match with the current ETag (or hold a lock) to replace or remove an existing resource")
}

func errAlreadyExists() *Error {
	return &Error{Code: CodeAlreadyExists, Reason: ReasonAlreadyExists, Message: "the resource already exists"}
}
