package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/uploads"
)

// The REST routes are grpc-gateway's generated handlers
// (RegisterWorkspaceManagementServiceHandlerServer): they decode the query
// and body with runtime.PopulateQueryParameters and protojson, call the
// in-process service and write its answer through the one marshaler. One
// routing rule stands in front of them (projectNamedEntries).

// newAPI builds the REST handler: the routing rule, then the generated
// routes, behind the body-size limit, with the decoder's refusal slot.
func (s *Server) newAPI() (http.Handler, error) {
	mux, err := s.newMux(runtime.UnescapingModeLegacy) // grpc-gateway's default
	if err != nil {
		return nil, err
	}
	// The same generated routes, matched on the escaped path: only
	// projectNamedEntries sends requests here (see there).
	escaped, err := s.newMux(runtime.UnescapingModeAllExceptReserved)
	if err != nil {
		return nil, err
	}
	routes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r2, ok := projectNamedEntries(r); ok {
			escaped.ServeHTTP(w, r2)
			return
		}
		mux.ServeHTTP(w, r)
	})
	return s.uploadSlot(http.MaxBytesHandler(withRefusalSlot(routes), MaxAPIBody)), nil
}

// uploadSlot holds one of the agent's limits.uploadsPerAgent slots (shared
// with WebDAV) while a REST request's body is read, or answers 429
// TOO_MANY_UPLOADS with Retry-After before reading any of it.
func (s *Server) uploadSlot(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent, ok := agentOf(r.URL.Path)
		if !ok || !uploads.HasBody(r) {
			next.ServeHTTP(w, r)
			return
		}
		release, ok := s.opts.Uploads.Acquire(agent, "rest")
		if !ok {
			uploads.Refuse(w.Header())
			respond(w, r, s.marshaler, errtable.Status(codes.ResourceExhausted, uploads.Reason,
				"too many uploads to agent "+strconv.Quote(agent)+" are in progress; retry later"), 0)
			return
		}
		defer release()
		r.Body = uploads.Body(r.Body, release)
		next.ServeHTTP(w, r)
	})
}

// agentOf is the agent ID of an API path under /agents/{agent_id}/.
func agentOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, APIPrefix+"/agents/")
	if !ok {
		return "", false
	}
	id, _, found := strings.Cut(rest, "/")
	return id, found && id != ""
}

func (s *Server) newMux(mode runtime.UnescapingMode) (*runtime.ServeMux, error) {
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, s.marshaler),
		runtime.WithErrorHandler(s.errorHandler),
		runtime.WithRoutingErrorHandler(s.routingErrorHandler),
		// One Content-Length response instead of chunked encoding: one write
		// system call (and one client wake-up) less per REST response.
		runtime.WithWriteContentLength(),
		// The service runs in process and reads the identity and request ID
		// from the context, never incoming metadata (it sends sidecars only
		// its own x-request-id/x-operator), so no request header is copied
		// into metadata.
		runtime.WithIncomingHeaderMatcher(func(string) (string, bool) { return "", false }),
		// No X-HTTP-Method-Override: a form POST served as DELETE (or any
		// other method) would be a mutation that auditRefused, which goes by
		// the request's method, does not know it is auditing.
		runtime.WithDisablePathLengthFallback(),
		runtime.WithUnescapingMode(mode),
	)
	if err := workspacev1.RegisterWorkspaceManagementServiceHandlerServer(context.Background(), mux, s.opts.Service); err != nil {
		return nil, err
	}
	if s.opts.Checkpoints != nil {
		if err := workspacev1.RegisterCheckpointManagementServiceHandlerServer(context.Background(), mux, s.opts.Checkpoints); err != nil {
			return nil, err
		}
	}
	return mux, nil
}

// projectNamedEntries is the route table's one rule of its own. A project
// may be called "entries" (PRD §7.3 allows it, and an agent may have made
// the directory), but DELETE .../projects/entries is also
// DeleteProjectEntry's route, whose literal segment the generated mux
// prefers over DeleteProject's {name}. So a DELETE of that path whose query
// names only DeleteProject's own fields, once each (confirm_name, and
// optionally skip_checkpoint), is
// DeleteProject of the project "entries"; any other query (workspace.*,
// path, expected_revision, or none) stays DeleteProjectEntry, as generated.
// ("files" has no DELETE route of its own and needs nothing.)
//
// The request goes on to the generated DeleteProject handler unchanged
// except for its escaped path: the last segment is written %65ntries, an
// equivalent spelling of "entries" (RFC 3986 §6.2.2.2) that the literal
// segment of DeleteProjectEntry's pattern does not match on a mux matching
// escaped paths, while DeleteProject's {name} captures and unescapes it.
func projectNamedEntries(r *http.Request) (*http.Request, bool) {
	if r.Method != http.MethodDelete || !deletesProject(r.URL.RawQuery) {
		return nil, false
	}
	agentID, ok := strings.CutPrefix(r.URL.Path, APIPrefix+"/agents/")
	if !ok {
		return nil, false
	}
	agentID, ok = strings.CutSuffix(agentID, "/projects/entries")
	// Agent IDs that need escaping name no agent; they keep the ordinary
	// route (and its AGENT_NOT_FOUND).
	if !ok || agentID == "" || url.PathEscape(agentID) != agentID {
		return nil, false
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.RawPath = APIPrefix + "/agents/" + agentID + "/projects/%65ntries"
	r2.URL = &u
	return r2, true
}

// deletesProject reports whether a DELETE .../projects/entries with this raw
// query is DeleteProject: its parameters are confirm_name, once, and at
// most skip_checkpoint, once. A query that does not parse is left to
// DeleteProjectEntry (which refuses it).
func deletesProject(rawQuery string) bool {
	q, err := url.ParseQuery(rawQuery)
	if err != nil || len(q["confirm_name"]) != 1 {
		return false
	}
	switch len(q) {
	case 1:
		return true
	case 2:
		return len(q["skip_checkpoint"]) == 1
	}
	return false
}
