package httpapi

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// TestEveryReasonIsMapped: every reason the contract defines reaches REST
// with its row's status in the one table.
func TestEveryReasonIsMapped(t *testing.T) {
	for name, num := range workspacev1.ErrorReason_value {
		if num == 0 {
			continue
		}
		row, ok := errtable.Lookup(name)
		if !ok {
			t.Errorf("ErrorReason %s has no row in contracts/errtable", name)
			continue
		}
		if got := HTTPStatus(row.Code, name); got != row.REST {
			t.Errorf("%s (%s): HTTP %d, want %d", name, row.Code, got, row.REST)
		}
	}
}

// Codes without a reason (grpc-gateway's own errors, transport).
func TestCodeWithoutReason(t *testing.T) {
	for c, want := range map[codes.Code]int{
		codes.OK: 200, codes.Canceled: 499, codes.Unknown: 500, codes.InvalidArgument: 400,
		codes.DeadlineExceeded: 504, codes.NotFound: 404, codes.AlreadyExists: 409,
		codes.PermissionDenied: 403, codes.ResourceExhausted: 413, codes.FailedPrecondition: 409,
		codes.Aborted: 409, codes.OutOfRange: 400, codes.Unimplemented: 501, codes.Internal: 500,
		codes.Unavailable: 503, codes.DataLoss: 500, codes.Unauthenticated: 401,
	} {
		if got := HTTPStatus(c, ""); got != want {
			t.Errorf("%s: %d, want %d", c, got, want)
		}
	}
	if HTTPStatus(codes.Code(99), "") != http.StatusInternalServerError {
		t.Error("unknown code must be 500")
	}
}
