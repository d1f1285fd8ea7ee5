package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/labstack/echo/v4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// withReason makes sure a status carries an ErrorInfo so every REST error
// body has a machine-readable reason.
func withReason(st *status.Status) *status.Status {
	if errtable.Reason(st) != "" {
		return st
	}
	return errtable.WithReason(st, errtable.DefaultReason(st.Code()))
}

// HTTPStatus is the REST status of an error with code c and ErrorInfo
// reason: the one table's (contracts/errtable).
func HTTPStatus(c codes.Code, reason string) int { return errtable.RESTStatus(c, reason) }

// marshalError is st (which withReason has seen) as grpc-gateway's error body
// {code, message, details}.
func marshalError(m runtime.Marshaler, st *status.Status) ([]byte, error) {
	pb := st.Proto()
	// A message that echoes a request (a protojson detail, a name) must
	// not make the error body unmarshalable.
	pb.Message = strings.ToValidUTF8(pb.Message, "\uFFFD")
	return m.Marshal(pb)
}

// writeStatus writes st as the error body with httpStatus, or the one
// table's status when it is 0.
func writeStatus(w http.ResponseWriter, m runtime.Marshaler, st *status.Status, httpStatus int) {
	st = withReason(st)
	buf, err := marshalError(m, st)
	if err != nil {
		http.Error(w, `{"code":13,"message":"failed to marshal error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Del("Trailer")
	w.Header().Del("Transfer-Encoding")
	w.Header().Set("Content-Type", "application/json")
	if httpStatus == 0 {
		httpStatus = HTTPStatus(st.Code(), errtable.Reason(st))
	}
	w.WriteHeader(httpStatus)
	_, _ = w.Write(buf)
}

// respond writes a REST error for r and tells r's audit (auditRefused) its
// code and reason.
func respond(w http.ResponseWriter, r *http.Request, m runtime.Marshaler, st *status.Status, httpStatus int) {
	st = withReason(st)
	if o := outcomeOf(r); o != nil {
		o.code, o.reason, o.set = st.Code(), errtable.Reason(st), true
	}
	writeStatus(w, m, st, httpStatus)
}

// errorHandler is grpc-gateway's error handler: the decoder's refusal when
// it refused the body, else the error's status with the table's status.
func (s *Server) errorHandler(_ context.Context, _ *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if rf := refusalOf(r); rf != nil {
		respond(w, r, m, rf.st, rf.httpStatus)
		return
	}
	var hs *runtime.HTTPStatusError
	if errors.As(err, &hs) {
		respond(w, r, m, status.Convert(hs.Err), hs.HTTPStatus)
		return
	}
	respond(w, r, m, status.Convert(err), 0)
}

// routingErrorHandler answers grpc-gateway's routing failures with the
// library's HTTP status.
func (s *Server) routingErrorHandler(_ context.Context, _ *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	st, httpStatus := routingError(httpStatus)
	respond(w, r, m, st, httpStatus)
}

// routingError is the error body of a request no route takes (grpc-gateway's
// or echo's router): which failure it was, named by the router's HTTP
// status, which is kept (405 is not the table's Unimplemented 501). Anything
// else a router reports is an internal error.
func routingError(httpStatus int) (*status.Status, int) {
	switch httpStatus {
	case http.StatusNotFound:
		return status.New(codes.NotFound, "no such API route"), httpStatus
	case http.StatusMethodNotAllowed:
		return status.New(codes.Unimplemented, "method not allowed"), httpStatus
	case http.StatusBadRequest:
		return status.New(codes.InvalidArgument, "bad request"), httpStatus
	}
	return status.New(codes.Internal, "internal error"), http.StatusInternalServerError
}

// writeError writes a gateway-made error in the REST error shape; it
// returns nil for the handler to return.
func (s *Server) writeError(c echo.Context, code codes.Code, reason workspacev1.ErrorReason, msg string) error {
	writeStatus(c.Response(), s.marshaler, errtable.Status(code, reason.String(), msg), 0)
	return nil
}
