package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
)

// newMarshaler is the REST API's one codec: grpc-gateway's runtime.JSONPb
// (protojson) with proto field names (snake_case) and every field emitted,
// unpopulated ones included, which the portal relies on. Unknown request
// fields are refused.
func newMarshaler() runtime.Marshaler {
	return restJSON{&runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

// restJSON is runtime.JSONPb with a request decoder that explains its
// refusals in sentences for people, with the reason that fits, instead of
// protojson's "proto: (line 1:81): ..." under INVALID_ARGUMENT. Decoding
// itself is runtime.JSONPb's (json.RawMessage, then protojson).
type restJSON struct {
	*runtime.JSONPb
}

// Marshal implements runtime.Marshaler: runtime.JSONPb's encoding of a
// message (protojson with the options above), appended to a buffer sized
// for it once; JSONPb.Marshal marshals and then copies the result into a
// growing bytes.Buffer, which for a 16 KiB file was a third of the
// encoding's time. The bytes are the same (codec_test).
func (j restJSON) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok || j.Indent != "" {
		return j.JSONPb.Marshal(v)
	}
	n := proto.Size(m)
	return j.MarshalOptions.MarshalAppend(make([]byte, 0, n+n/8+512), m)
}

// NewDecoder implements runtime.Marshaler.
func (j restJSON) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		err := j.decode(r, v)
		var rf *refusal
		if b, ok := r.(*slotBody); ok && errors.As(err, &rf) {
			// The generated handler turns any decoding error into
			// InvalidArgument with the error's text; the error handler
			// reads the refusal from here instead.
			b.refusal = rf
		}
		return err
	})
}

func (j restJSON) decode(r io.Reader, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return j.JSONPb.NewDecoder(r).Decode(v) // no route binds a body to a non-message field
	}
	var raw json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return err // an empty body: the generated handler accepts it
		}
		return readRefusal(err)
	}
	if err := j.JSONPb.Unmarshal(raw, m); err != nil {
		return bodyRefusal(raw, m, err)
	}
	return nil
}

// refusal is a request the gateway refuses before it reaches the service:
// its status (code, reason, message) and, when the table's status does not
// fit (408), the HTTP status.
type refusal struct {
	st         *status.Status
	httpStatus int
}

func (r *refusal) Error() string { return r.st.Message() }

func refuse(code codes.Code, reason workspacev1.ErrorReason, httpStatus int, format string, args ...any) *refusal {
	return &refusal{st: errtable.Status(code, reason.String(), fmt.Sprintf(format, args...)), httpStatus: httpStatus}
}

// readRefusal explains an error reading or tokenising the body.
func readRefusal(err error) *refusal {
	var mb *http.MaxBytesError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &mb):
		return refuse(codes.ResourceExhausted, workspacev1.ErrorReason_TOO_LARGE, 0, "the request body is larger than %d MiB", mb.Limit>>20)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return refuse(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, http.StatusRequestTimeout, "the request body did not arrive in time")
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return refuse(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, 0, "the request body is not valid JSON")
	}
	return refuse(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, 0, "the request body could not be read")
}

// bodyRefusal explains why protojson refused a JSON value. Invalid UTF-8
// is named by the field it is in (a path is INVALID_PATH, a project name
// INVALID_WORKSPACE...): the body is decoded once more with each invalid
// sequence replaced by U+FFFD, and the first string field holding U+FFFD
// is the one (mgmt.StringFieldError decides the reason). Nothing decoded
// that way goes anywhere.
func bodyRefusal(raw []byte, m proto.Message, err error) *refusal {
	if !utf8.Valid(raw) {
		clean := m.ProtoReflect().New().Interface()
		if protojson.Unmarshal(bytes.ToValidUTF8(raw, []byte("\uFFFD")), clean) == nil {
			if ferr := mgmt.StringFieldError(clean, func(s string) bool { return strings.ContainsRune(s, utf8.RuneError) }, "is not valid UTF-8"); ferr != nil {
				return &refusal{st: status.Convert(ferr)}
			}
		}
		return refuse(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, 0, "the request body is not valid UTF-8")
	}
	// protojson's errors read "proto: (line 1:12): unknown field \"x\"";
	// the part after the position is the useful one.
	detail := err.Error()
	if _, after, ok := strings.Cut(detail, "): "); ok && strings.HasPrefix(detail, "proto:") {
		detail = after
	} else {
		detail = strings.TrimPrefix(detail, "proto: ")
	}
	return refuse(codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, 0, "the request body does not fit this call: %s", detail)
}

// slotBody is a REST request's body as the generated handlers see it: the
// decoder leaves its refusal here for the error handler.
type slotBody struct {
	io.ReadCloser
	refusal *refusal
}

// withRefusalSlot gives every REST request body a refusal slot.
func withRefusalSlot(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &slotBody{ReadCloser: r.Body}
		}
		h.ServeHTTP(w, r)
	})
}

// refusalOf returns the decoder's refusal of r's body, if any.
func refusalOf(r *http.Request) *refusal {
	if r == nil {
		return nil
	}
	if b, ok := r.Body.(*slotBody); ok {
		return b.refusal
	}
	return nil
}
