package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/requestid"
)

// mutationRoute names the REST mutation a request with this path and raw
// query targets, or "" for reads and unknown routes.
func mutationRoute(method, path, rawQuery string) (action, agentID, project string) {
	rest, ok := strings.CutPrefix(path, APIPrefix+"/agents/")
	if !ok || method == http.MethodGet || method == http.MethodHead {
		return "", "", "" // reads need not be split into segments
	}
	seg := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	if len(seg) < 2 || (seg[1] != "projects" && seg[1] != "checkpoints" && seg[1] != "deleted-projects") {
		return "", "", ""
	}
	agentID = seg[0]
	if len(agentID) > 64 {
		agentID = agentID[:64]
	}
	checkpoints := seg[1] == "checkpoints"
	switch {
	case seg[1] == "deleted-projects" && len(seg) == 3 && method == http.MethodPost && strings.HasSuffix(seg[2], ":restore"):
		return "restore_deleted_project", agentID, strings.TrimSuffix(seg[2], ":restore")
	case seg[1] == "deleted-projects":
		return "", "", ""
	case checkpoints && len(seg) == 2 && method == http.MethodPost:
		return "create_checkpoint", agentID, ""
	case checkpoints && len(seg) == 3 && method == http.MethodPost && strings.HasSuffix(seg[2], ":restore"):
		return "restore_checkpoint", agentID, ""
	case checkpoints && len(seg) == 3 && method == http.MethodDelete:
		return "delete_checkpoint", agentID, ""
	case checkpoints: // reads
		return "", "", ""
	case len(seg) == 2 && method == http.MethodPost:
		return "create_project", agentID, ""
	case len(seg) == 3 && method == http.MethodPost && seg[2] == "entries":
		return "create_entry", agentID, ""
	case len(seg) == 3 && method == http.MethodPost && seg[2] == "entries:move":
		return "move_entry", agentID, ""
	case len(seg) == 3 && method == http.MethodPut && seg[2] == "files":
		return "update_file", agentID, ""
	case len(seg) == 3 && method == http.MethodDelete && seg[2] == "entries" && !deletesProject(rawQuery):
		return "delete_entry", agentID, ""
	case len(seg) == 3 && method == http.MethodDelete:
		return "delete_project", agentID, seg[2]
	}
	return "", "", ""
}

// outcome is the code and reason of the error response a refused REST
// mutation got (set by respond), for its audit record.
type outcome struct {
	code   codes.Code
	reason string
	set    bool
}

type outcomeKey struct{}

func outcomeOf(r *http.Request) *outcome {
	if r == nil {
		return nil
	}
	o, _ := r.Context().Value(outcomeKey{}).(*outcome)
	return o
}

// auditRefused records REST mutations that were refused before they reached
// the service (undecodable body, bad query), so every mutation attempt by an
// authenticated admin leaves exactly one audit record; the service records
// everything that reaches it.
func (s *Server) auditRefused(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		action, agentID, project := mutationRoute(r.Method, r.URL.Path, r.URL.RawQuery)
		if s.opts.Audit == nil || action == "" {
			return next(c)
		}
		start := s.now()
		ctx, tr := audit.Track(r.Context())
		o := &outcome{}
		ctx = context.WithValue(ctx, outcomeKey{}, o)
		c.SetRequest(r.WithContext(ctx))
		err := next(c)
		if tr.Recorded() {
			return err
		}
		status := c.Response().Status
		id, _ := auth.FromContext(ctx)
		m := audit.Mutation{
			Start: start, Duration: s.now().Sub(start), RequestID: requestid.From(ctx), Operator: id.Operator,
			AgentID: agentID, Project: project, Action: action, HTTPStatus: status, Failed: status >= 400,
		}
		if o.set {
			m.Code, m.Reason = o.code.String(), o.reason
		} else {
			// No error of ours wrote this response (none is known to reach
			// here): only its HTTP status is known.
			m.Code = audit.CodeForHTTPStatus(status)
		}
		if project != "" || action == "create_project" {
			m.Scope = "PROJECT"
		}
		s.opts.Audit.Mutation(ctx, m)
		return err
	}
}
