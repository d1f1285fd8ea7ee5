package errtable

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// TestEveryReason walks the contract's ErrorReason enum: every value has a
// row, and the table holds nothing the contract does not define.
func TestEveryReason(t *testing.T) {
	for num, name := range workspacev1.ErrorReason_name {
		if num == 0 {
			continue
		}
		row, ok := Lookup(name)
		if !ok {
			t.Errorf("reason %s (%d) has no row", name, num)
			continue
		}
		if row.Code == codes.OK || row.REST < 400 || row.WebDAV < 400 {
			t.Errorf("reason %s: row %+v does not describe an error", name, row)
		}
		if http.StatusText(row.REST) == "" || http.StatusText(row.WebDAV) == "" {
			t.Errorf("reason %s: row %+v holds a status with no name", name, row)
		}
	}
	for _, name := range Reasons() {
		if _, ok := workspacev1.ErrorReason_value[name]; !ok || name == "ERROR_REASON_UNSPECIFIED" {
			t.Errorf("table row %s is not a value of the contract's ErrorReason", name)
		}
	}
}

// TestDefaultReasonKeepsCode: the reason given to a code-only error maps back
// to the same code, so a REST body's code and details never disagree.
func TestDefaultReasonKeepsCode(t *testing.T) {
	for c := codes.OK + 1; c <= codes.Unauthenticated; c++ {
		r := DefaultReason(c)
		row, ok := Lookup(r)
		if !ok {
			t.Fatalf("DefaultReason(%v) = %s, not in the table", c, r)
		}
		switch c {
		case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
			codes.Unauthenticated, codes.Unavailable, codes.Aborted, codes.ResourceExhausted:
			if row.Code != c {
				t.Errorf("DefaultReason(%v) = %s whose code is %v", c, r, row.Code)
			}
		}
	}
}

func TestStatuses(t *testing.T) {
	cases := []struct {
		code   codes.Code
		reason string
		rest   int
	}{
		{codes.Aborted, "REVISION_MISMATCH", 409},
		{codes.ResourceExhausted, "PATH_TOO_LONG", 400},
		{codes.ResourceExhausted, "PATH_TOO_DEEP", 400},
		{codes.ResourceExhausted, "NO_SPACE", 507},
		{codes.ResourceExhausted, "", 413},
		{codes.DeadlineExceeded, "", 504},
		{codes.Canceled, "", 499},
		{codes.FailedPrecondition, "", 409},
		{codes.Internal, "SOMETHING_NEW", 500},
		// A reason whose row has another code does not decide: the code does.
		{codes.Unavailable, "REVISION_MISMATCH", 503},
	}
	for _, c := range cases {
		if got := RESTStatus(c.code, c.reason); got != c.rest {
			t.Errorf("RESTStatus(%v, %q) = %d, want %d", c.code, c.reason, got, c.rest)
		}
	}
	dav := []struct {
		reason   string
		creating bool
		want     int
	}{
		{"REVISION_MISMATCH", false, 412},
		{"NOT_FOUND", false, 404},
		{"NOT_FOUND", true, 409},
		{"PROJECT_NOT_FOUND", true, 404},
		{"ALREADY_EXISTS", false, 405},
		{"PATH_TOO_LONG", false, 400},
		{"PATH_TOO_DEEP", false, 400},
		{"LOCKED", false, 423},
		{"PRECONDITION_REQUIRED", false, 428},
		{"NO_SPACE", false, 507},
		{"", false, 500},
	}
	for _, c := range dav {
		if got := WebDAVStatus(c.reason, c.creating); got != c.want {
			t.Errorf("WebDAVStatus(%q, %v) = %d, want %d", c.reason, c.creating, got, c.want)
		}
	}
}
