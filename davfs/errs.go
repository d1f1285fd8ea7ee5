package davfs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// newErr builds a davfs *Error. msg must be safe for a client: a relative
// workspace path at most, never a host path or content.
func newErr(code Code, reason Reason, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...), Err: cause}
}

// errnoOf extracts a unix.Errno from err, 0 if there is none.
func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
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
	switch errnoOf(err) {
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
