// Package errtable is the one error table of Agent Workspace Files. Next to
// the contract (contracts/proto/workspace/v1/types.proto, enum ErrorReason),
// it maps every reason to its gRPC code, its REST status and its WebDAV
// status, and defines the google.rpc.ErrorInfo domain. The sidecar's gRPC
// and WebDAV servers, the gateway's REST API, its WebDAV proxy and its audit
// all read it; nothing else holds a copy.
//
// The table is written with literals so it can be read against PRD §10.3 and
// RFC 4918. Choices worth knowing:
//   - Aborted is 409 on REST (a revision mismatch, a stale cursor); a WebDAV
//     revision mismatch is 412 Precondition Failed, because there the
//     revision travels as an entity tag in If-Match / If:.
//   - Path and page limits (PATH_TOO_LONG, PATH_TOO_DEEP,
//     PAGE_SIZE_TOO_LARGE) are ResourceExhausted for gRPC but 400 on both
//     HTTP surfaces: the request itself is malformed for this server, and
//     507 Insufficient Storage would tell a WebDAV client the disk is full.
//   - ALREADY_EXISTS is 405 on WebDAV (RFC 4918 §9.3.1: MKCOL over an
//     existing resource).
//   - A WebDAV NOT_FOUND for a method that creates its target (PUT, MKCOL,
//     the Destination of COPY/MOVE) means a missing parent: 409 Conflict
//     (RFC 4918 §9.3.1, §9.7.1). WebDAVStatus takes that flag.
package errtable

import (
	"cmp"
	"maps"
	"net/http"
	"slices"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Domain is the google.rpc.ErrorInfo domain of every workspace error.
const Domain = "workspace.agentworkspace.dev"

// ReasonHeader is the response header in which the sidecar's WebDAV server
// names the reason of an error response, so the gateway's audit records the
// true code instead of guessing it back from a status. The gateway strips it
// (and any copy a client sends) before a response leaves it.
const ReasonHeader = "X-Workspace-Error-Reason"

// Status is a status of code c and message msg with an ErrorInfo naming
// reason in Domain.
func Status(c codes.Code, reason, msg string) *status.Status {
	return WithReason(status.New(c, msg), reason)
}

// WithReason is st with an ErrorInfo naming reason in Domain appended to its
// details (st itself should that fail).
func WithReason(st *status.Status, reason string) *status.Status {
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: Domain}); err == nil {
		return d
	}
	return st
}

// Reason is the first non-empty ErrorInfo reason of st ("" when none).
func Reason(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() != "" {
			return info.GetReason()
		}
	}
	return ""
}

// Row is one reason's statuses on each surface.
type Row struct {
	Code   codes.Code
	REST   int
	WebDAV int
}

// table is the literal table: reason name (a value of the contract's
// ErrorReason enum) → statuses. TestEveryReason walks the enum.
var table = map[string]Row{
	// InvalidArgument
	"INVALID_PATH":          {codes.InvalidArgument, 400, 400},
	"INVALID_NAME":          {codes.InvalidArgument, 400, 400},
	"INVALID_WORKSPACE":     {codes.InvalidArgument, 400, 400},
	"INVALID_CURSOR":        {codes.InvalidArgument, 400, 400},
	"INVALID_ARGUMENT":      {codes.InvalidArgument, 400, 400},
	"CONFIRMATION_MISMATCH": {codes.InvalidArgument, 400, 400},
	"NOT_TEXT":              {codes.InvalidArgument, 400, 400},
	// NotFound
	"NOT_FOUND":         {codes.NotFound, 404, 404},
	"AGENT_NOT_FOUND":   {codes.NotFound, 404, 404},
	"PROJECT_NOT_FOUND": {codes.NotFound, 404, 404},
	// AlreadyExists
	"ALREADY_EXISTS": {codes.AlreadyExists, 409, 405},
	// PermissionDenied
	"DENYLISTED":     {codes.PermissionDenied, 403, 403},
	"SYMLINK":        {codes.PermissionDenied, 403, 403},
	"OUTSIDE_GLOBAL": {codes.PermissionDenied, 403, 403},
	"PROTECTED":      {codes.PermissionDenied, 403, 403},
	"MULTIPLE_LINKS": {codes.PermissionDenied, 403, 403},
	"READ_ONLY":      {codes.PermissionDenied, 403, 403},
	"FORBIDDEN":      {codes.PermissionDenied, 403, 403},
	// Aborted
	"REVISION_MISMATCH": {codes.Aborted, 409, 412},
	"CURSOR_STALE":      {codes.Aborted, 409, 409},
	"LOCKED":            {codes.Aborted, 409, 423},
	// ResourceExhausted
	"TOO_LARGE":           {codes.ResourceExhausted, 413, 413},
	"PATH_TOO_LONG":       {codes.ResourceExhausted, 400, 400},
	"PATH_TOO_DEEP":       {codes.ResourceExhausted, 400, 400},
	"PAGE_SIZE_TOO_LARGE": {codes.ResourceExhausted, 400, 400},
	"NO_SPACE":            {codes.ResourceExhausted, 507, 507},
	"TOO_MANY_STREAMS":    {codes.ResourceExhausted, 429, 429},
	"TOO_MANY_UPLOADS":    {codes.ResourceExhausted, 429, 429},
	"LOCK_LIMIT":          {codes.ResourceExhausted, 507, 507}, // RFC 4918 §9.10.6 (no room for the lock)
	// FailedPrecondition
	"NOT_A_FILE":                  {codes.FailedPrecondition, 409, 409},
	"NOT_A_DIRECTORY":             {codes.FailedPrecondition, 409, 409},
	"DIRECTORY_NOT_EMPTY":         {codes.FailedPrecondition, 409, 409},
	"MOVE_INTO_SELF":              {codes.FailedPrecondition, 409, 403}, // RFC 4918 §9.8.5: 403 when source and destination are the same
	"NOT_REGULAR":                 {codes.FailedPrecondition, 409, 403},
	"PROJECT_MANAGEMENT_DISABLED": {codes.FailedPrecondition, 409, 403},
	"NOT_SUPPORTED":               {codes.FailedPrecondition, 409, 403}, // Depth: infinity (RFC 4918 §9.1: 403 propfind-finite-depth)
	"PRECONDITION_REQUIRED":       {codes.FailedPrecondition, 428, 428},
	// Unavailable
	"SIDECAR_UNAVAILABLE":     {codes.Unavailable, 503, 503},
	"CHECKPOINTS_UNAVAILABLE": {codes.Unavailable, 503, 503}, // one feature of a running sidecar (its store cannot be used); files work
	"WATCH_UNAVAILABLE":       {codes.Unavailable, 503, 503}, // its file watcher cannot start (inotify instances used up); files work
	// Internal
	"GIT_INIT_FAILED": {codes.Internal, 500, 500},
	"INTERNAL":        {codes.Internal, 500, 500},
	// Unauthenticated (gateway only)
	"UNAUTHENTICATED": {codes.Unauthenticated, 401, 401},
	// Checkpoints
	"CHECKPOINT_NOT_FOUND": {codes.NotFound, 404, 404},
	"CHECKPOINT_LIMIT":     {codes.ResourceExhausted, 507, 507},
	"CHECKPOINT_CONFLICT":  {codes.FailedPrecondition, 409, 409},
	"CHECKPOINTS_DISABLED": {codes.FailedPrecondition, 409, 403},
	// DataLoss says what happened (stored data is corrupt), not 500 on the
	// HTTP surfaces: nothing failed in the server and a retry gets the same
	// answer; 409 tells the client the checkpoint's state refuses the
	// request, which it acts on by deleting that checkpoint or using another.
	"CHECKPOINT_DAMAGED": {codes.DataLoss, 409, 409},
}

// Lookup returns the row of reason, and false for a reason the table does
// not know (which callers treat as INTERNAL).
func Lookup(reason string) (Row, bool) {
	r, ok := table[reason]
	return r, ok
}

// For returns the row of reason; an unknown or empty reason gets INTERNAL's.
func For(reason string) Row {
	if r, ok := table[reason]; ok {
		return r
	}
	return table["INTERNAL"]
}

// Reasons lists every reason in the table, in name order.
func Reasons() []string {
	return slices.Sorted(maps.Keys(table))
}

// RESTStatus is the REST status of an error with code c and reason (the
// ErrorInfo reason, "" when it carries none). A known reason decides; an
// error without one (grpc-gateway's own decoding errors, a context error)
// gets its code's status from DefaultReason's row, or from the few codes no
// reason stands for.
func RESTStatus(c codes.Code, reason string) int {
	if c == codes.OK {
		return http.StatusOK
	}
	if r, ok := table[reason]; ok && r.Code == c {
		return r.REST
	}
	switch c {
	case codes.Canceled:
		return 499 // client closed request
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.OutOfRange:
		return http.StatusBadRequest
	case codes.FailedPrecondition:
		return http.StatusConflict
	}
	return For(DefaultReason(c)).REST
}

// WebDAVStatus is the WebDAV status of reason. creating says the method
// creates its target (PUT, MKCOL, the Destination of COPY/MOVE): then a
// missing name means a missing parent, 409.
func WebDAVStatus(reason string, creating bool) int {
	if creating && reason == "NOT_FOUND" {
		return http.StatusConflict
	}
	return For(reason).WebDAV
}

// DefaultReason names the reason for an error of code c that carries none
// (INTERNAL for a code defaultReasons does not name).
func DefaultReason(c codes.Code) string {
	return cmp.Or(defaultReasons[c], "INTERNAL")
}

var defaultReasons = map[codes.Code]string{
	codes.InvalidArgument:   "INVALID_ARGUMENT",
	codes.OutOfRange:        "INVALID_ARGUMENT",
	codes.NotFound:          "NOT_FOUND",
	codes.AlreadyExists:     "ALREADY_EXISTS",
	codes.PermissionDenied:  "FORBIDDEN",
	codes.Unauthenticated:   "UNAUTHENTICATED",
	codes.Unavailable:       "SIDECAR_UNAVAILABLE",
	codes.DeadlineExceeded:  "SIDECAR_UNAVAILABLE",
	codes.Aborted:           "REVISION_MISMATCH",
	codes.ResourceExhausted: "TOO_LARGE",
}
