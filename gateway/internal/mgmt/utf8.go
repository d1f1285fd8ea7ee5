package mgmt

import (
	"context"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// refuseInvalidUTF8 is the sidecar clients' interceptor: a request with a
// string field that is not valid UTF-8 is refused (InvalidArgument, with
// the reason of the field) before protobuf refuses to marshal it, which
// would surface as Internal. A REST query string is where such strings come
// from: runtime.PopulateQueryParameters sets them as they are.
func refuseInvalidUTF8(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if m, ok := req.(proto.Message); ok {
		if err := StringFieldError(m, func(s string) bool { return !utf8.ValidString(s) }, "is not valid UTF-8"); err != nil {
			return err
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// StringFieldError returns an InvalidArgument error naming the first
// string field of m (in declaration order, nested messages included) for
// which bad reports true, "<field> <problem>", with the reason that fits
// the field (fieldReason); nil when there is none.
func StringFieldError(m proto.Message, bad func(string) bool, problem string) error {
	name, leaf, ok := findString(m.ProtoReflect(), bad)
	if !ok {
		return nil
	}
	return Error(codes.InvalidArgument, fieldReason(leaf), name+" "+problem)
}

// findString finds that field: its dotted name and its own name. It
// allocates nothing until it finds one (every sidecar call walks its
// request).
func findString(m protoreflect.Message, bad func(string) bool) (name string, leaf protoreflect.Name, found bool) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len() && !found; i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len() && !found; j++ {
				name, leaf, found = findIn(l.Get(j), fd, fd.Kind(), bad)
			}
		case fd.IsMap():
			// A key, then its value (a key is never a message). The
			// closure has variables of its own: capturing the results
			// would move them to the heap for every call.
			var mName string
			var mLeaf protoreflect.Name
			var mFound bool
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if mName, mLeaf, mFound = findIn(k.Value(), fd, fd.MapKey().Kind(), bad); !mFound {
					mName, mLeaf, mFound = findIn(mv, fd, fd.MapValue().Kind(), bad)
				}
				return !mFound
			})
			name, leaf, found = mName, mLeaf, mFound
		default:
			name, leaf, found = findIn(v, fd, fd.Kind(), bad)
		}
	}
	return name, leaf, found
}

// findIn checks one value of field fd, of kind: a string, or a message's
// fields.
func findIn(v protoreflect.Value, fd protoreflect.FieldDescriptor, kind protoreflect.Kind, bad func(string) bool) (string, protoreflect.Name, bool) {
	switch {
	case kind == protoreflect.StringKind && bad(v.String()):
		return string(fd.Name()), fd.Name(), true
	case kind == protoreflect.MessageKind:
		if name, leaf, found := findString(v.Message(), bad); found {
			return string(fd.Name()) + "." + name, leaf, true
		}
	}
	return "", "", false
}

// fieldReason is the reason of a malformed string field, by the field's
// name in the contract: paths are INVALID_PATH, the workspace's project
// INVALID_WORKSPACE, names INVALID_NAME, cursors INVALID_CURSOR, anything
// else INVALID_ARGUMENT.
func fieldReason(field protoreflect.Name) workspacev1.ErrorReason {
	switch field {
	case "path", "parent_path", "source_path", "destination_path":
		return workspacev1.ErrorReason_INVALID_PATH
	case "project_name":
		return workspacev1.ErrorReason_INVALID_WORKSPACE
	case "name":
		return workspacev1.ErrorReason_INVALID_NAME
	case "cursor":
		return workspacev1.ErrorReason_INVALID_CURSOR
	}
	return workspacev1.ErrorReason_INVALID_ARGUMENT
}
