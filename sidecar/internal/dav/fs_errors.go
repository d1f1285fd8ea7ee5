package dav

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/agentworkspace/files/davfs"
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
// PROTECTED, MULTIPLE_LINKS, ...) cannot travel through os.Is*-compatible
// errors; a caller that needs it (a reason header, an audit record) puts
// an ErrorLog in the request's state (RequestState.Errors), where every
// error this layer returns is recorded with its original *Error.
//
// The Path is the WebDAV name (never a host path); the message is the safe
// davfs message.

// webdavError carries a davfs *Error through an *fs.PathError.
type webdavError struct {
	kind error // fs.ErrInvalid or nil
	err  *davfs.Error
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
func ErrorFromWebDAV(err error) (*davfs.Error, bool) {
	if err == nil {
		return nil, false
	}
	var e *davfs.Error
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
		return &davfs.Error{Code: davfs.CodePermissionDenied, Reason: davfs.ReasonReadOnly, Message: "permission denied"}, true
	case fs.ErrExist:
		return &davfs.Error{Code: davfs.CodeAlreadyExists, Reason: davfs.ReasonAlreadyExists, Message: "already exists"}, true
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
	e  *davfs.Error
}

const maxLoggedErrs = 8

func (l *ErrorLog) add(pe *fs.PathError, e *davfs.Error) {
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
func (l *ErrorLog) Lookup(err error) (*davfs.Error, bool) {
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
func (l *ErrorLog) Last() (*davfs.Error, bool) {
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
// above) and records it in the request's ErrorLog. A nil error stays nil;
// an *fs.PathError is returned unchanged.
func (d *davFS) wrapErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*fs.PathError); ok {
		return err // already mapped by this layer
	}
	var e *davfs.Error
	if !errors.As(err, &e) {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	var pe *fs.PathError
	switch e.Code {
	case davfs.CodeNotFound:
		pe = &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	case davfs.CodePermissionDenied:
		pe = &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	case davfs.CodeAlreadyExists:
		pe = &fs.PathError{Op: op, Path: name, Err: fs.ErrExist}
	case davfs.CodeInvalidArgument, davfs.CodeFailedPrecondition:
		pe = &fs.PathError{Op: op, Path: name, Err: &webdavError{kind: fs.ErrInvalid, err: e}}
	default:
		pe = &fs.PathError{Op: op, Path: name, Err: &webdavError{err: e}}
	}
	if l := d.st.Errors; l != nil {
		l.add(pe, e)
	}
	return pe
}

func errNotFound() *davfs.Error {
	return &davfs.Error{Code: davfs.CodeNotFound, Reason: davfs.ReasonNotFound, Message: "not found"}
}

func errRevisionMismatch() *davfs.Error {
	return newErr(davfs.CodeAborted, davfs.ReasonRevisionMismatch, "the target's revision does not match the precondition")
}

func (d *davFS) readOnlyErr(op, name, msg string) error {
	return d.wrapErr(op, name, &davfs.Error{Code: davfs.CodePermissionDenied, Reason: davfs.ReasonReadOnly, Message: msg})
}

func errAlreadyExists() *davfs.Error {
	return &davfs.Error{Code: davfs.CodeAlreadyExists, Reason: davfs.ReasonAlreadyExists, Message: "the resource already exists"}
}

// newErr is a davfs *Error of this layer's own (a refusal the core never
// sees: a virtual level, a partial write).
func newErr(code davfs.Code, reason davfs.Reason, format string, args ...any) *davfs.Error {
	return &davfs.Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func errMultipleLinks(rel string) *davfs.Error {
	return newErr(davfs.CodePermissionDenied, davfs.ReasonMultipleLinks, "%q has more than one hard link", rel)
}

func errPreconditionRequired() *davfs.Error { return davfs.PreconditionRequired("") }
