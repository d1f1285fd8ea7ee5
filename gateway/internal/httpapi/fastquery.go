package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// The two hot GET routes (directory listing, file read) replace the
// generated grpc-gateway handlers with ones that decode the common query
// strings by hand: runtime.PopulateQueryParameters resolves every parameter
// by protoreflect and a regexp, a visible share of a REST call's own CPU.
// Anything the hand decoder does not recognise exactly (unknown, repeated
// or agent_id parameters, enum numbers, non-decimal page sizes, bad
// escapes, ';') goes to runtime.PopulateQueryParameters unchanged, so what
// is accepted or refused (400) is grpc-gateway's decision
// (TestFastQueryMatchesGrpcGateway compares both on a corpus). Everything
// else is what the generated handler does: same context annotation, error
// handler and response forwarding.

const (
	entriesPattern = APIPrefix + "/agents/{agent_id}/projects/entries"
	filesPattern   = APIPrefix + "/agents/{agent_id}/projects/files"
)

// agentIDFilter is the generated handlers' filter: agent_id comes from the path.
var agentIDFilter = utilities.NewDoubleArray([][]string{{"agent_id"}})

// registerFastGets overrides the generated handlers of the two GET routes
// and of DELETE .../projects/entries (runtime.ServeMux dispatches to the
// last registered matching handler).
func (s *Server) registerFastGets() error {
	svc := s.opts.Service
	for _, r := range []struct {
		method, pattern string
		h               runtime.HandlerFunc
	}{
		{http.MethodGet, entriesPattern, s.fastGet("/workspace.v1.WorkspaceManagementService/ListProjectEntries", entriesPattern,
			func(ctx context.Context, r *http.Request, agentID string) (proto.Message, error) {
				req := &workspacev1.ListProjectEntriesRequest{AgentId: agentID}
				if _, err := decodeEntriesQuery(r, req); err != nil {
					return nil, err
				}
				return svc.ListProjectEntries(ctx, req)
			})},
		{http.MethodGet, filesPattern, s.fastGet("/workspace.v1.WorkspaceManagementService/GetProjectFile", filesPattern,
			func(ctx context.Context, r *http.Request, agentID string) (proto.Message, error) {
				req := &workspacev1.GetProjectFileRequest{AgentId: agentID}
				if _, err := decodeFileQuery(r, req); err != nil {
					return nil, err
				}
				return svc.GetProjectFile(ctx, req)
			})},
		{http.MethodDelete, entriesPattern, s.deleteEntries()},
	} {
		if err := s.mux.HandlePath(r.method, r.pattern, r.h); err != nil {
			return err
		}
	}
	return nil
}

// A project may be called "entries" (PRD §7.3 allows it, and an agent may
// have made the directory), but DELETE .../projects/entries is also
// DeleteProjectEntry's route, which the generated mux prefers, so such a
// project could not be deleted over REST. A DELETE of that path whose
// query names only DeleteProject's own field (confirm_name) is therefore
// DeleteProject of the project "entries"; any other query (workspace.*,
// path, expected_revision, or nothing) stays DeleteProjectEntry, as
// generated. ("files" has no DELETE route of its own and needs nothing.)
const projectPattern = APIPrefix + "/agents/{agent_id}/projects/{name}"

// projectFilter is the generated DeleteProject handler's filter.
var projectFilter = utilities.NewDoubleArray([][]string{{"agent_id"}, {"name"}})

func (s *Server) deleteEntries() runtime.HandlerFunc {
	svc := s.opts.Service
	project := s.fastGet("/workspace.v1.WorkspaceManagementService/DeleteProject", projectPattern,
		func(ctx context.Context, r *http.Request, agentID string) (proto.Message, error) {
			req := &workspacev1.DeleteAgentProjectRequest{AgentId: agentID, Name: "entries"}
			if err := populateSlow(r, req, projectFilter); err != nil {
				return nil, err
			}
			return svc.DeleteProject(ctx, req)
		})
	entry := s.fastGet("/workspace.v1.WorkspaceManagementService/DeleteProjectEntry", entriesPattern,
		func(ctx context.Context, r *http.Request, agentID string) (proto.Message, error) {
			req := &workspacev1.DeleteProjectEntryRequest{AgentId: agentID}
			if err := populateSlow(r, req, agentIDFilter); err != nil {
				return nil, err
			}
			return svc.DeleteProjectEntry(ctx, req)
		})
	return func(w http.ResponseWriter, r *http.Request, pathParams map[string]string) {
		if deletesProject(r.URL.RawQuery) {
			project(w, r, pathParams)
			return
		}
		entry(w, r, pathParams)
	}
}

// deletesProject reports whether a DELETE .../projects/entries with this raw
// query is DeleteProject: its only parameter is confirm_name, once. A query
// that does not parse is left to DeleteProjectEntry (which refuses it).
func deletesProject(rawQuery string) bool {
	q, err := url.ParseQuery(rawQuery)
	return err == nil && len(q) == 1 && len(q["confirm_name"]) == 1
}

// fastGet is the generated local handler's body with call in place of
// "parse the query and call the service".
func (s *Server) fastGet(rpc, pattern string, call func(ctx context.Context, r *http.Request, agentID string) (proto.Message, error)) runtime.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request, pathParams map[string]string) {
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		var stream runtime.ServerTransportStream
		ctx = grpc.NewContextWithServerTransportStream(ctx, &stream)
		_, outbound := runtime.MarshalerForRequest(s.mux, req)
		annotated, err := runtime.AnnotateIncomingContext(ctx, s.mux, req, rpc, runtime.WithHTTPPathPattern(pattern))
		if err != nil {
			runtime.HTTPError(ctx, s.mux, outbound, w, req, err)
			return
		}
		var resp proto.Message
		agentID, ok := pathParams["agent_id"]
		if !ok {
			err = status.Errorf(codes.InvalidArgument, "missing parameter %s", "agent_id")
		} else {
			resp, err = call(annotated, req, agentID)
		}
		annotated = runtime.NewServerMetadataContext(annotated, runtime.ServerMetadata{HeaderMD: stream.Header(), TrailerMD: stream.Trailer()})
		if err != nil {
			runtime.HTTPError(annotated, s.mux, outbound, w, req, err)
			return
		}
		runtime.ForwardResponseMessage(annotated, s.mux, outbound, w, req, resp, s.mux.GetForwardResponseOptions()...)
	}
}

// populateSlow is exactly what the generated handler does with the query.
// filter names the route's path parameters, which the query may not set.
func populateSlow(r *http.Request, m proto.Message, filter *utilities.DoubleArray) error {
	if err := r.ParseForm(); err != nil {
		return status.Errorf(codes.InvalidArgument, "%v", err)
	}
	if err := runtime.PopulateQueryParameters(m, r.Form, filter); err != nil {
		return status.Errorf(codes.InvalidArgument, "%v", err)
	}
	return nil
}

// queryParams calls set for each key=value of a plain query string (no ';',
// valid escapes, at most maxFastPairs '&'-separated pairs), decoded as
// url.ParseQuery does. It reports false as soon as set does or the query
// needs grpc-gateway's own parser.
func queryParams(raw string, set func(k, v string) bool) bool {
	if strings.IndexByte(raw, ';') >= 0 || strings.Count(raw, "&") >= maxFastPairs {
		return false
	}
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "" {
			continue // url.ParseQuery skips empty pairs
		}
		k, v, _ := strings.Cut(kv, "=")
		k, err := url.QueryUnescape(k)
		if err != nil {
			return false
		}
		if v, err = url.QueryUnescape(v); err != nil {
			return false
		}
		if !set(k, v) {
			return false
		}
	}
	return true
}

// maxFastPairs bounds the pairs (empty ones included) the hand decoder
// takes: url.ParseQuery refuses a query with more parameters than
// GODEBUG urlmaxqueryparams allows (10000 by default), so a long query is
// left to it. The routes have at most five parameters.
const maxFastPairs = 8

// workspaceParam sets the WorkspaceRef fields; it reports false for any
// other key or a value it does not decode itself.
func workspaceParam(w **workspacev1.WorkspaceRef, seen *uint8, k, v string) bool {
	switch k {
	case "workspace.scope":
		n, ok := workspacev1.WorkspaceScope_value[v]
		if !ok || !once(seen, 1) {
			return false // enum numbers and bad names: grpc-gateway decides
		}
		ref(w).Scope = workspacev1.WorkspaceScope(n)
	case "workspace.project_name", "workspace.projectName":
		if !once(seen, 2) {
			return false
		}
		ref(w).ProjectName = v
	default:
		return false
	}
	return true
}

func ref(w **workspacev1.WorkspaceRef) *workspacev1.WorkspaceRef {
	if *w == nil {
		*w = &workspacev1.WorkspaceRef{}
	}
	return *w
}

// once marks bit in seen and reports whether it was clear: a field named
// twice (also as snake_case and lowerCamelCase) is left to grpc-gateway.
func once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// decimal32 parses a plain decimal int32 as strconv.ParseInt(v, 10, 32).
func decimal32(v string) (int32, bool) {
	n, err := strconv.ParseInt(v, 10, 32)
	return int32(n), err == nil
}

// decodeEntriesQuery fills req (AgentId already set) from the query; fast
// reports whether the hand decoder did it.
func decodeEntriesQuery(r *http.Request, req *workspacev1.ListProjectEntriesRequest) (fast bool, err error) {
	var seen uint8
	ok := queryParams(r.URL.RawQuery, func(k, v string) bool {
		switch k {
		case "path":
			if !once(&seen, 4) {
				return false
			}
			req.Path = v
		case "page_size", "pageSize":
			n, ok := decimal32(v)
			if !ok || !once(&seen, 8) {
				return false
			}
			req.PageSize = n
		case "cursor":
			if !once(&seen, 16) {
				return false
			}
			req.Cursor = v
		default:
			return workspaceParam(&req.Workspace, &seen, k, v)
		}
		return true
	})
	if ok {
		return true, nil
	}
	agentID := req.AgentId
	proto.Reset(req)
	req.AgentId = agentID
	return false, populateSlow(r, req, agentIDFilter)
}

// decodeFileQuery fills req (AgentId already set) from the query; fast
// reports whether the hand decoder did it.
func decodeFileQuery(r *http.Request, req *workspacev1.GetProjectFileRequest) (fast bool, err error) {
	var seen uint8
	ok := queryParams(r.URL.RawQuery, func(k, v string) bool {
		if k == "path" {
			if !once(&seen, 4) {
				return false
			}
			req.Path = v
			return true
		}
		return workspaceParam(&req.Workspace, &seen, k, v)
	})
	if ok {
		return true, nil
	}
	agentID := req.AgentId
	proto.Reset(req)
	req.AgentId = agentID
	return false, populateSlow(r, req, agentIDFilter)
}
