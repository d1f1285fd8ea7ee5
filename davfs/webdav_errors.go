package davfs

import (
	"errors"
	"io/fs"
)

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
// PROTECTED, ...) cannot travel through os.Is*-compatible errors; the status
// it decides (404, 403, 405/409) does not depend on it.
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

// wrapErr maps a davfs error onto the webdav.FileSystem boundary (see
// above). A nil error stays nil; an *fs.PathError is returned unchanged.
func wrapErr(op, name string, err error) error {
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
	var kind error
	switch e.Code {
	case CodeNotFound:
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	case CodePermissionDenied:
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	case CodeAlreadyExists:
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrExist}
	case CodeInvalidArgument, CodeFailedPrecondition:
		kind = fs.ErrInvalid
	}
	return &fs.PathError{Op: op, Path: name, Err: &webdavError{kind: kind, err: e}}
}

func errNotFound() *Error {
	return &Error{Code: CodeNotFound, Reason: ReasonNotFound, Message: "not found"}
}

func errRevisionMismatch() *Error {
	return &Error{
		Code:    CodeAborted,
		Reason:  ReasonRevisionMismatch,
		Message: "the target's revision does not match the precondition",
	}
}

func readOnlyErr(op, name, msg string) error {
	return wrapErr(op, name, &Error{Code: CodePermissionDenied, Reason: ReasonReadOnly, Message: msg})
}
