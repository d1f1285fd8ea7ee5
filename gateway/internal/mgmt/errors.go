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

// Error returns a gRPC status error with an ErrorInfo carrying reason.
func Error(code codes.Code, reason workspacev1.ErrorReason, msg string) error {
	return errtable.Status(code, reason.String(), msg).Err()
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
		if i, ok := d.(*errdetails.ErrorInfo); ok && i.GetDomain() == errtable.Domain {
			info = i
		}
	}
	if info != nil && st.Code() != codes.DeadlineExceeded {
		// The table holds every reason of the contract, and only those.
		reason := info.GetReason()
		if _, known := errtable.Lookup(reason); !known {
			reason = errtable.DefaultReason(st.Code())
		}
		return errtable.Status(st.Code(), reason, st.Message()).Err()
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
	return errtable.Status(st.Code(), errtable.DefaultReason(st.Code()), fmt.Sprintf("workspace service of agent %q failed (%s)", agentID, st.Code())).Err()
}

func unavailable(agentID string) error {
	return Error(codes.Unavailable, workspacev1.ErrorReason_SIDECAR_UNAVAILABLE,
		fmt.Sprintf("the workspace service of agent %q is unavailable; try again later", agentID))
}
