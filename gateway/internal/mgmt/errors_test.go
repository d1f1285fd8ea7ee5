package mgmt

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

func TestRewrap(t *testing.T) {
	foreign := status.New(codes.PermissionDenied, "x")
	foreign, _ = foreign.WithDetails(&errdetails.ErrorInfo{Reason: "DENYLISTED", Domain: "evil.example"})
	cases := []struct {
		name   string
		in     error
		code   codes.Code
		reason string
		msg    string
	}{
		{"sidecar error kept", Error(codes.Aborted, workspacev1.ErrorReason_REVISION_MISMATCH, "the file changed"), codes.Aborted, "REVISION_MISMATCH", "the file changed"},
		{"unknown reason name", statusWith(codes.NotFound, "NEW_REASON", "gone"), codes.NotFound, "NOT_FOUND", "gone"},
		{"connection refused", status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 10.1.2.3:9091: connect: connection refused\""), codes.Unavailable, "SIDECAR_UNAVAILABLE", ""},
		{"deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), codes.Unavailable, "SIDECAR_UNAVAILABLE", ""},
		{"plain deadline", context.DeadlineExceeded, codes.Unavailable, "SIDECAR_UNAVAILABLE", ""},
		{"transport internal", status.Error(codes.Internal, "grpc: error while marshaling: 10.1.2.3"), codes.Internal, "INTERNAL", ""},
		{"foreign domain", foreign.Err(), codes.PermissionDenied, "FORBIDDEN", ""},
		{"non-status", errors.New("dial 10.1.2.3"), codes.Internal, "INTERNAL", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := status.Convert(rewrap(context.Background(), c.in, "codex-a"))
			if st.Code() != c.code || errtable.Reason(st) != c.reason {
				t.Errorf("got %s/%s, want %s/%s", st.Code(), errtable.Reason(st), c.code, c.reason)
			}
			if c.msg != "" && st.Message() != c.msg {
				t.Errorf("message %q, want %q", st.Message(), c.msg)
			}
			if strings.Contains(st.Message(), "10.1.2.3") || strings.Contains(st.Message(), "dial") {
				t.Errorf("transport text leaked: %q", st.Message())
			}
		})
	}
	if rewrap(context.Background(), nil, "a") != nil {
		t.Error("nil error rewrapped")
	}
}

func statusWith(c codes.Code, reason, msg string) error {
	st := status.New(c, msg)
	st, _ = st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errtable.Domain})
	return st.Err()
}
