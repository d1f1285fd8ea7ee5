package davhandler

import (
	"errors"
	"io/fs"
	"net/http"

	"github.com/agentworkspace/files/davfs"
)

// statusFor is the one table from a davfs error to a WebDAV status. Reasons
// win over codes where the PRD names a WebDAV status for them; missingParent
// turns NotFound into 409 for methods that create the target (PUT, MKCOL, the
// destination of COPY/MOVE), as RFC 4918 asks.
func statusFor(err error, creating bool) int {
	if err == nil {
		return http.StatusOK
	}
	var de *davfs.Error
	if !errors.As(err, &de) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if creating {
				return http.StatusConflict
			}
			return http.StatusNotFound
		case errors.Is(err, fs.ErrPermission):
			return http.StatusForbidden
		case errors.Is(err, fs.ErrExist):
			return http.StatusMethodNotAllowed
		}
		return http.StatusInternalServerError
	}
	switch de.Reason {
	case davfs.ReasonDenylisted, davfs.ReasonSymlink, davfs.ReasonOutsideGlobal,
		davfs.ReasonProtected, davfs.ReasonReadOnly, davfs.ReasonMultipleLinks,
		davfs.ReasonNotRegular, davfs.ReasonMoveIntoSelf:
		return http.StatusForbidden // 403
	case davfs.ReasonRevisionMismatch:
		return http.StatusPreconditionFailed // 412
	case davfs.ReasonTooLarge:
		return http.StatusRequestEntityTooLarge // 413
	case davfs.ReasonNoSpace:
		return http.StatusInsufficientStorage // 507
	case davfs.ReasonPathTooLong:
		return http.StatusRequestURITooLong // 414
	case davfs.ReasonNotFound, davfs.ReasonProjectNotFound:
		if creating && de.Reason == davfs.ReasonNotFound {
			return http.StatusConflict // 409: missing parent
		}
		return http.StatusNotFound // 404
	case davfs.ReasonAlreadyExists:
		return http.StatusMethodNotAllowed // 405 (MKCOL over an existing resource)
	case davfs.ReasonNotAFile, davfs.ReasonNotADirectory, davfs.ReasonDirectoryNotEmpty:
		return http.StatusConflict // 409
	}
	switch de.Code {
	case davfs.CodeInvalidArgument:
		return http.StatusBadRequest
	case davfs.CodeNotFound:
		if creating {
			return http.StatusConflict
		}
		return http.StatusNotFound
	case davfs.CodeAlreadyExists:
		return http.StatusMethodNotAllowed
	case davfs.CodePermissionDenied:
		return http.StatusForbidden
	case davfs.CodeResourceExhausted:
		return http.StatusInsufficientStorage
	case davfs.CodeFailedPrecondition:
		return http.StatusConflict
	case davfs.CodeAborted:
		return http.StatusPreconditionFailed
	case davfs.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// safeMessage is what the client sees: the davfs safe message, or the
// status text for anything else (details go to the log only).
func safeMessage(err error, status int) string {
	var de *davfs.Error
	if errors.As(err, &de) && de.Message != "" && status < 500 {
		return de.Message
	}
	return http.StatusText(status)
}
