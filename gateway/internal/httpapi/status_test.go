package httpapi

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/fakesidecar"
)

// Every ErrorReason in types.proto, its gRPC code (PRD §10.3) and the REST
// status. Written with literals so it can be checked against the spec; the
// test fails when a reason is added to the enum without a row here.
var reasonTable = map[string]struct {
	code codes.Code
	http int
}{
	"INVALID_PATH":                {codes.InvalidArgument, 400},
	"INVALID_NAME":                {codes.InvalidArgument, 400},
	"INVALID_WORKSPACE":           {codes.InvalidArgument, 400},
	"INVALID_CURSOR":              {codes.InvalidArgument, 400},
	"INVALID_ARGUMENT":            {codes.InvalidArgument, 400},
	"CONFIRMATION_MISMATCH":       {codes.InvalidArgument, 400},
	"NOT_TEXT":                    {codes.InvalidArgument, 400},
	"NOT_FOUND":                   {codes.NotFound, 404},
	"AGENT_NOT_FOUND":             {codes.NotFound, 404},
	"PROJECT_NOT_FOUND":           {codes.NotFound, 404},
	"ALREADY_EXISTS":              {codes.AlreadyExists, 409},
	"DENYLISTED":                  {codes.PermissionDenied, 403},
	"SYMLINK":                     {codes.PermissionDenied, 403},
	"OUTSIDE_GLOBAL":              {codes.PermissionDenied, 403},
	"PROTECTED":                   {codes.PermissionDenied, 403},
	"MULTIPLE_LINKS":              {codes.PermissionDenied, 403},
	"READ_ONLY":                   {codes.PermissionDenied, 403},
	"FORBIDDEN":                   {codes.PermissionDenied, 403},
	"REVISION_MISMATCH":           {codes.Aborted, 409},
	"CURSOR_STALE":                {codes.Aborted, 409},
	"TOO_LARGE":                   {codes.ResourceExhausted, 413},
	"PATH_TOO_LONG":               {codes.ResourceExhausted, 400},
	"PATH_TOO_DEEP":               {codes.ResourceExhausted, 400},
	"PAGE_SIZE_TOO_LARGE":         {codes.ResourceExhausted, 400},
	"NO_SPACE":                    {codes.ResourceExhausted, 507},
	"NOT_A_FILE":                  {codes.FailedPrecondition, 409},
	"NOT_A_DIRECTORY":             {codes.FailedPrecondition, 409},
	"DIRECTORY_NOT_EMPTY":         {codes.FailedPrecondition, 409},
	"MOVE_INTO_SELF":              {codes.FailedPrecondition, 409},
	"NOT_REGULAR":                 {codes.FailedPrecondition, 409},
	"PROJECT_MANAGEMENT_DISABLED": {codes.FailedPrecondition, 409},
	"SIDECAR_UNAVAILABLE":         {codes.Unavailable, 503},
	"GIT_INIT_FAILED":             {codes.Internal, 500},
	"INTERNAL":                    {codes.Internal, 500},
	"UNAUTHENTICATED":             {codes.Unauthenticated, 401},
}

func TestEveryReasonIsMapped(t *testing.T) {
	for name, num := range workspacev1.ErrorReason_value {
		if num == 0 {
			continue
		}
		row, ok := reasonTable[name]
		if !ok {
			t.Errorf("ErrorReason %s has no row in reasonTable", name)
			continue
		}
		if c := fakesidecar.CodeOf(workspacev1.ErrorReason(num)); c != row.code {
			t.Errorf("%s: enum grouping says %s, table says %s", name, c, row.code)
		}
		if got := HTTPStatus(row.code, name); got != row.http {
			t.Errorf("%s (%s): HTTP %d, want %d", name, row.code, got, row.http)
		}
	}
	for name := range reasonTable {
		if _, ok := workspacev1.ErrorReason_value[name]; !ok {
			t.Errorf("reasonTable row %s is not an ErrorReason", name)
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
