package rpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/davfs"
)

// grpcCode is the gRPC code of a davfs error: the one table's row for its
// reason, or, for a reason the table does not know, the davfs code itself
// (davfs codes carry the gRPC numbers by construction). An unknown code is
// Internal.
func grpcCode(c davfs.Code, reason davfs.Reason) codes.Code {
	if row, ok := errtable.Lookup(string(reason)); ok {
		return row.Code
	}
	switch code := codes.Code(c); code {
	case codes.OK, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.ResourceExhausted, codes.FailedPrecondition, codes.Aborted, codes.Internal, codes.Unavailable:
		return code
	}
	return codes.Internal
}

// internalMessage is what a client sees for an error davfs did not classify.
const internalMessage = "internal error"

// toStatus maps err to the status a client sees: a davfs *Error keeps its
// code, reason and safe message; a context error becomes DeadlineExceeded or
// Canceled; anything else is Internal with a generic message (the detail is
// only logged by the caller). It also returns the reason for logs/metrics.
func toStatus(err error) (*status.Status, davfs.Reason) {
	if err == nil {
		return status.New(codes.OK, ""), ""
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		// Already a status (from this package).
		return s, davfs.Reason(errtable.Reason(s))
	}
	var de *davfs.Error
	switch {
	case errors.As(err, &de):
		code := grpcCode(de.Code, de.Reason)
		if code == codes.OK { // an *Error must never mean success
			code = codes.Internal
		}
		msg, reason := de.Message, de.Reason
		if reason == "" {
			reason = davfs.ReasonInternal
		}
		if msg == "" {
			msg = code.String()
		}
		return errtable.Status(code, string(reason), msg), reason
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, "deadline exceeded"), ""
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, "request canceled"), ""
	}
	return errtable.Status(codes.Internal, string(davfs.ReasonInternal), internalMessage), davfs.ReasonInternal
}

// invalid builds an InvalidArgument error with a reason, for checks the RPC
// layer makes before calling davfs.
func invalid(reason davfs.Reason, msg string) error {
	return &davfs.Error{Code: davfs.CodeInvalidArgument, Reason: reason, Message: msg}
}
