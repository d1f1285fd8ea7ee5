package mgmt

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// Domain is the google.rpc.ErrorInfo domain of every workspace error
// (defined once, in contracts/errtable).
const Domain = errtable.Domain

// Error returns a gRPC status error with an ErrorInfo carrying reason.
func Error(code codes.Code, reason workspacev1.ErrorReason, msg string) error {
	st := status.New(code, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason.String(), Domain: Domain}); err == nil {
		st = d
	}
	return st.Err()
}

// Reason returns the ErrorInfo reason of st ("" when none).
func Reason(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() != "" {
			return info.GetReason()
		}
	}
	return ""
}

// DefaultReason names a reason for a code when the error carries none (for
// example grpc-gateway's own request-decoding errors).
func DefaultReason(c codes.Code) workspacev1.ErrorReason {
	return workspacev1.ErrorReason(workspacev1.ErrorReason_value[errtable.DefaultReason(c)])
}

// rewrap turns anything a sidecar call returned into a client-safe status.
// A status the sidecar produced itself carries our ErrorInfo; its code,
// reason and message (davfs's safe message) are copied. Anything else came
// from the transport (connection refused, deadline, reset...) and may name
// the endpoint, so its text is dropped.
func rewrap(ctx context.Context, err error, agentID string) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) {
			return unavailable(agentID)
		}
		if errors.Is(err, context.Canceled) {
			return status.Error(codes.Canceled, "request canceled")
		}
		return Error(codes.Internal, workspacev1.ErrorReason_INTERNAL, "internal error")
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok && i.GetDomain() == Domain {
			info = i
		}
	}
	if info != nil && st.Code() != codes.DeadlineExceeded {
		reason := workspacev1.ErrorReason(workspacev1.ErrorReason_value[info.GetReason()])
		if reason == workspacev1.ErrorReason_ERROR_REASON_UNSPECIFIED {
			reason = DefaultReason(st.Code())
		}
		out := status.New(st.Code(), st.Message())
		if d, derr := out.WithDetails(&errdetails.ErrorInfo{Reason: reason.String(), Domain: Domain}); derr == nil {
			out = d
		}
		return out.Err()
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return unavailable(agentID)
	case codes.Canceled:
		if ctx.Err() == context.DeadlineExceeded {
			return unavailable(agentID)
		}
		return status.Error(codes.Canceled, "request canceled")
	}
	// A status without our ErrorInfo: keep the code, never the text.
	return Error(st.Code(), DefaultReason(st.Code()), fmt.Sprintf("workspace service of agent %q failed (%s)", agentID, st.Code()))
}

func unavailable(agentID string) error {
	return Error(codes.Unavailable, workspacev1.ErrorReason_SIDECAR_UNAVAILABLE,
		fmt.Sprintf("the workspace service of agent %q is unavailable; try again later", agentID))
}
