package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
)

// withReason makes sure a status carries an ErrorInfo so every REST error
// body has a machine-readable reason.
func withReason(st *status.Status) *status.Status {
	if mgmt.Reason(st) != "" {
		return st
	}
	r := mgmt.DefaultReason(st.Code())
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: r.String(), Domain: mgmt.Domain}); err == nil {
		return d
	}
	return st
}

// writeStatus writes st as grpc-gateway's error body {code, message, details}.
func writeStatus(w http.ResponseWriter, m runtime.Marshaler, st *status.Status, httpStatus int) {
	st = withReason(st)
	pb := st.Proto()
	buf, err := m.Marshal(pb)
	if err != nil {
		http.Error(w, `{"code":13,"message":"failed to marshal error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Del("Trailer")
	w.Header().Del("Transfer-Encoding")
	w.Header().Set("Content-Type", "application/json")
	if httpStatus == 0 {
		httpStatus = HTTPStatus(st.Code(), mgmt.Reason(st))
	}
	w.WriteHeader(httpStatus)
	_, _ = w.Write(buf)
}

// errorHandler is grpc-gateway's error handler: status from our table.
func (s *Server) errorHandler(_ context.Context, _ *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
	var hs *runtime.HTTPStatusError
	if errors.As(err, &hs) {
		writeStatus(w, m, status.Convert(hs.Err), hs.HTTPStatus)
		return
	}
	st := status.Convert(err)
	if st.Code() == codes.InvalidArgument && strings.Contains(st.Message(), "request body too large") {
		st = status.New(codes.ResourceExhausted, "request body too large")
		if d, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: workspacev1.ErrorReason_TOO_LARGE.String(), Domain: mgmt.Domain}); derr == nil {
			st = d
		}
	}
	writeStatus(w, m, st, 0)
}

// routingErrorHandler keeps grpc-gateway's 404/405 statuses.
func (s *Server) routingErrorHandler(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	var st *status.Status
	switch httpStatus {
	case http.StatusNotFound:
		st = status.New(codes.NotFound, "no such API route")
	case http.StatusMethodNotAllowed:
		st = status.New(codes.Unimplemented, "method not allowed")
	case http.StatusBadRequest:
		st = status.New(codes.InvalidArgument, "bad request")
	default:
		st = status.New(codes.Internal, "routing error")
	}
	s.errorHandler(ctx, mux, m, w, r, &runtime.HTTPStatusError{HTTPStatus: httpStatus, Err: st.Err()})
}

// writeError writes a gateway-made error in the REST error shape.
func (s *Server) writeError(w http.ResponseWriter, code codes.Code, reason workspacev1.ErrorReason, msg string) {
	writeStatus(w, s.marshaler, status.Convert(mgmt.Error(code, reason, msg)), 0)
}

func statusOf(c codes.Code, msg string) *status.Status { return status.New(c, msg) }
