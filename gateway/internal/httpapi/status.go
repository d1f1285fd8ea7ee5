package httpapi

import (
	"net/http"

	"google.golang.org/grpc/codes"
)

// HTTPStatus is the one table from gRPC code (and, where the code alone is
// ambiguous, the ErrorInfo reason) to the REST status. Decisions beyond
// grpc-gateway's defaults:
//   - Aborted is 409 (revision mismatch, stale cursor).
//   - ResourceExhausted is 413 for TOO_LARGE (and when no reason is given),
//     507 for NO_SPACE, 400 for PATH_TOO_LONG, PATH_TOO_DEEP and
//     PAGE_SIZE_TOO_LARGE (the request itself is malformed for this server).
//   - FailedPrecondition is 409: the target's current state (a directory, not
//     a file; not empty; no sidecar configured) conflicts with the request.
//     412 is kept for WebDAV If-Match failures.
//   - DeadlineExceeded is 504 (the gateway rewrites sidecar deadlines to
//     Unavailable 503, so clients normally see 503).
func HTTPStatus(c codes.Code, reason string) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Canceled:
		return 499
	case codes.Unknown:
		return http.StatusInternalServerError
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists:
		return http.StatusConflict
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.ResourceExhausted:
		switch reason {
		case "PATH_TOO_LONG", "PATH_TOO_DEEP", "PAGE_SIZE_TOO_LARGE":
			return http.StatusBadRequest
		case "NO_SPACE":
			return http.StatusInsufficientStorage
		}
		return http.StatusRequestEntityTooLarge
	case codes.FailedPrecondition:
		return http.StatusConflict
	case codes.Aborted:
		return http.StatusConflict
	case codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Internal:
		return http.StatusInternalServerError
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DataLoss:
		return http.StatusInternalServerError
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}
