package rpc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
)

// davfsReasons reads the Reason constants out of davfs/errors.go, so a
// reason added there cannot stay out of the one table (contracts/errtable).
func davfsReasons(t *testing.T) []davfs.Reason {
	t.Helper()
	src, err := os.ReadFile("../../../davfs/errors.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*Reason\w+\s+Reason\s*=\s*"([A-Z_]+)"`)
	found := re.FindAllStringSubmatch(string(src), -1)
	if len(found) == 0 {
		t.Fatal("no Reason constants found in davfs/errors.go")
	}
	out := make([]davfs.Reason, 0, len(found))
	for _, m := range found {
		out = append(out, davfs.Reason(m[1]))
	}
	return out
}

// TestEveryReasonIsInTable: every davfs reason has a row in the one table.
func TestEveryReasonIsInTable(t *testing.T) {
	for _, r := range davfsReasons(t) {
		if _, ok := errtable.Lookup(string(r)); !ok {
			t.Errorf("davfs reason %s has no row in contracts/errtable", r)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	for _, r := range davfsReasons(t) {
		tc := struct {
			reason davfs.Reason
			code   davfs.Code
		}{r, davfs.Code(errtable.For(string(r)).Code)}
		t.Run(string(tc.reason), func(t *testing.T) {
			if _, ok := workspacev1.ErrorReason_value[string(tc.reason)]; !ok {
				t.Errorf("reason %s is not a workspace.v1.ErrorReason", tc.reason)
			}
			for _, err := range []error{
				&davfs.Error{Code: tc.code, Reason: tc.reason, Message: "safe message", Err: errors.New("/abs/host/path detail")},
				fmt.Errorf("wrapped: %w", &davfs.Error{Code: tc.code, Reason: tc.reason, Message: "safe message"}),
			} {
				st, reason := toStatus(err)
				if int(st.Code()) != int(tc.code) {
					t.Errorf("code = %d (%s), want %d", st.Code(), st.Code(), tc.code)
				}
				if reason != tc.reason {
					t.Errorf("reason = %q, want %q", reason, tc.reason)
				}
				if st.Message() != "safe message" {
					t.Errorf("message = %q, want the safe message only", st.Message())
				}
				checkInfo(t, st, tc.reason)
			}
		})
	}
}

func checkInfo(t *testing.T, st *status.Status, want davfs.Reason) {
	t.Helper()
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			if ei.GetReason() != string(want) || ei.GetDomain() != errtable.Domain {
				t.Errorf("ErrorInfo = %v, want reason %s domain %s", ei, want, errtable.Domain)
			}
			return
		}
	}
	t.Errorf("no ErrorInfo in %v", st.Details())
}

func TestErrorMappingOther(t *testing.T) {
	// A foreign error is Internal with a generic message: the detail (here a
	// host path) never reaches the client.
	st, reason := toStatus(errors.New("open /data/projects/x: input/output error"))
	if st.Code() != codes.Internal || st.Message() != internalMessage || reason != davfs.ReasonInternal {
		t.Errorf("foreign error -> %v %q %q", st.Code(), st.Message(), reason)
	}
	checkInfo(t, st, davfs.ReasonInternal)

	// A davfs code outside the table, with a reason the table does not
	// know, is Internal, never OK or Unknown.
	st, _ = toStatus(&davfs.Error{Code: davfs.Code(99), Reason: "NOT_A_REASON", Message: "m"})
	if st.Code() != codes.Internal {
		t.Errorf("unknown code -> %v", st.Code())
	}
	st, _ = toStatus(&davfs.Error{Code: davfs.CodeOK, Message: "m"})
	if st.Code() != codes.Internal {
		t.Errorf("*Error with CodeOK -> %v", st.Code())
	}
	checkInfo(t, st, davfs.ReasonInternal)

	if st, _ := toStatus(context.DeadlineExceeded); st.Code() != codes.DeadlineExceeded {
		t.Errorf("deadline -> %v", st.Code())
	}
	if st, _ := toStatus(fmt.Errorf("x: %w", context.Canceled)); st.Code() != codes.Canceled {
		t.Errorf("canceled -> %v", st.Code())
	}
	if st, _ := toStatus(nil); st.Code() != codes.OK {
		t.Errorf("nil -> %v", st.Code())
	}
}

func TestGRPCCodeNumbers(t *testing.T) {
	// davfs codes carry the gRPC numbers; the switch must agree with them.
	for _, c := range []davfs.Code{davfs.CodeOK, davfs.CodeInvalidArgument, davfs.CodeNotFound, davfs.CodeAlreadyExists,
		davfs.CodePermissionDenied, davfs.CodeResourceExhausted, davfs.CodeFailedPrecondition, davfs.CodeAborted,
		davfs.CodeInternal, davfs.CodeUnavailable} {
		if got := grpcCode(c, ""); int(got) != int(c) || got.String() != c.String() {
			t.Errorf("grpcCode(%s=%d) = %s=%d", c, int(c), got, int(got))
		}
	}
}
