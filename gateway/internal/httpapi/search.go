package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"github.com/labstack/echo/v4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
)

// Search (docs/search.md):
//
//	GET /api/v1/agent-gateway/agents/{agent_id}/search
//	    ?workspace.scope=PROJECT&workspace.project_name=demo&path=src
//	    &query=TODO&mode=SEARCH_MODE_CONTENT&regex=false&case_sensitive=true
//	    &include=*.go&exclude=testdata   (repeated)
//	    &max_results=&max_bytes=&max_file_bytes=&timeout_ms=
//
// answered as grpc-gateway answers a server-streaming call: newline-
// delimited JSON, one {"result": SearchResult} per line, the summary last,
// or {"error": Status} when the stream fails after its first line. Errors
// before the first line (a bad regex, a bad path, no such agent) are
// ordinary REST errors with the table's HTTP status. The query is decoded
// by grpc-gateway's own query parser. It is authenticated and authorised
// like every API route (requireAdmin); it reads, so it is not audited (no
// read is). The client going away cancels the sidecar's walk.
//
// The route is the generated one's (the proto's google.api.http), served
// here because grpc-gateway's in-process handlers do not stream.

// Searcher opens an agent's search stream (mgmt.Service).
type Searcher interface {
	Search(ctx context.Context, req *workspacev1.SearchProjectRequest) (*workspacev1.SearchResult, mgmt.SearchRecv, context.CancelFunc, error)
}

// searchFilter keeps agent_id (the path's) out of the query parser.
var searchFilter = utilities.NewDoubleArray([][]string{{"agent_id"}})

func (s *Server) search(c echo.Context) error {
	r, w := c.Request(), c.Response()
	if s.opts.Search == nil {
		return s.writeError(c, codes.FailedPrecondition, workspacev1.ErrorReason_NOT_SUPPORTED, "search is not available in this build")
	}
	req := &workspacev1.SearchProjectRequest{}
	if err := runtime.PopulateQueryParameters(req, r.URL.Query(), searchFilter); err != nil {
		return s.writeError(c, codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, "the query parameters do not parse: "+truncateParam(err.Error()))
	}
	req.AgentId = c.Param("agent_id")
	first, recv, cancel, err := s.opts.Search.Search(r.Context(), req)
	if err != nil {
		respond(w, r, s.marshaler, status.Convert(err), 0)
		return nil
	}
	defer cancel()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{})
	for m := first; ; {
		line, err := s.marshaler.Marshal(m)
		if err != nil || !s.searchWrite(w, rc, "result", line) {
			return nil
		}
		if m.GetSummary() != nil {
			return nil
		}
		if m, err = recv(); err != nil {
			if r.Context().Err() == nil {
				st := withReason(status.Convert(err))
				if b, err := marshalError(s.marshaler, st); err == nil {
					s.searchWrite(w, rc, "error", b)
				}
			}
			return nil
		}
	}
}

// searchWrite writes one line {"<key>": body} and flushes it, bounded by
// the stream write timeout; false when the client cannot take it.
func (s *Server) searchWrite(w http.ResponseWriter, rc *http.ResponseController, key string, body []byte) bool {
	b := make([]byte, 0, len(body)+len(key)+8)
	b = append(append(append(append(b, `{"`...), key...), `":`...), body...)
	b = append(b, "}\n"...)
	return s.streamWrite(w, rc, b)
}
