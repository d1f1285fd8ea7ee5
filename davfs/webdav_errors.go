package davfs

import (
	"errors"
	"io/fs"
)

// Errors at the webdav.FileSystem boundary.
//
// x/net/webdav decides 404 (and 409 for PUT/MKCOL) with os.IsNotExist, which
// unwraps one *fs.PathError and then compares its Err with fs.ErrNotExist by
// ==. So a not-found error is returned as
//
//	&fs.PathError{Op: op, Path: webdavName, Err: fs.ErrNotExist}
//
// exactly, and every other davfs error as
//
//	&fs.PathError{Op: op, Path: webdavName, Err: *webdavError}
//
// where the webdavError matches fs.ErrPermission (PermissionDenied),
// fs.ErrExist (AlreadyExists) or fs.ErrInvalid (InvalidArgument) with
// errors.Is, and unwraps to the davfs *Error, so errors.As(err, &*Error)
// recovers the code and reason (REVISION_MISMATCH → 412, TOO_LARGE → 413,
// NO_SPACE → 507, ...). ErrorFromWebDAV does both: for a not-found error it
// returns a NotFound *Error (the original reason, e.g. PROJECT_NOT_FOUND,
// is not kept: every not-found is a 404 or, for a missing parent, a 409).
//
// The Path is the WebDAV name (never a host path); the message is the safe
// davfs message.

// webdavError carries a davfs *Error through an *fs.PathError.
type webdavError struct {
	kind error // fs.ErrPermission, fs.ErrExist, fs.ErrInvalid or nil
	err  *Error
}

func (e *webdavError) Error() string { return e.err.Message }

// Is makes errors.Is(err, fs.ErrPermission) (and ErrExist, ErrInvalid) hold.
func (e *webdavError) Is(target error) bool { return e.kind != nil && target == e.kind }

func (e *webdavError) Unwrap() error { return e.err }

// ErrorFromWebDAV recovers the davfs *Error from an error returned by the
// webdav.FileSystem of WebDAV (or by a webdav.File it opened), including the
// error x/net/webdav hands its Logger. It reports false for nil and for
// errors that did not come from davfs (for example a failed request body
// read, or a webdav lock error).
func ErrorFromWebDAV(err error) (*Error, bool) {
	if err == nil {
		return nil, false
	}
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err == fs.ErrNotExist {
		return errNotFound(), true
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
		kind = fs.ErrPermission
	case CodeAlreadyExists:
		kind = fs.ErrExist
	case CodeInvalidArgument:
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
