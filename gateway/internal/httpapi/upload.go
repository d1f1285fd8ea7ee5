package httpapi

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"
	"google.golang.org/grpc/codes"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/davproxy"
	"github.com/agentworkspace/files/gateway/internal/requestid"
)

// upload is PUT /api/v1/agent-gateway/agents/{agent_id}/upload
// ?workspace.scope=PROJECT&workspace.project_name=demo&path=bin/a.png
// &if_exists=fail|replace[&expected_revision=R]: the body (any bytes) becomes
// the file. It is the WebDAV PUT the view already serves (the sidecar's
// maxUploadSize, limits.uploadsPerAgent, the PUT's audit record
// webdav.PUT), sent whatever webdav.writable says (REST writes are the
// admin's). if_exists=fail (the default) creates only (an existing name:
// 409 REVISION_MISMATCH, the sidecar's If-None-Match: * failing); replace with expected_revision replaces that revision only;
// replace without it keeps what it replaces as a per-file version
// (checkpoints on; 428 PRECONDITION_REQUIRED otherwise).
func (s *Server) upload(c echo.Context) error {
	r := c.Request()
	q := r.URL.Query()
	agentID := c.Param("agent_id")
	scope, project, p := q.Get("workspace.scope"), q.Get("workspace.project_name"), q.Get("path")
	davPath, msg := downloadPath(agentID, scope, project, p)
	if msg == "" && p == "" {
		msg = "invalid path: name the file to write"
	}
	ifExists, rev := q.Get("if_exists"), q.Get("expected_revision")
	if msg == "" && ifExists != "" && ifExists != "fail" && ifExists != "replace" {
		msg = "invalid if_exists: fail or replace"
	}
	if msg != "" {
		s.auditRefusedUpload(c, agentID, scope, project, p)
		return s.writeError(c, codes.InvalidArgument, workspacev1.ErrorReason_INVALID_PATH, msg)
	}
	if s.opts.DAV == nil {
		return s.writeError(c, codes.FailedPrecondition, workspacev1.ErrorReason_NOT_SUPPORTED, "uploads are not available in this build")
	}
	put := davproxy.RESTPut{Keep: ifExists == "replace" && rev == ""}
	in := r.Clone(davproxy.WithReason(davproxy.WithRESTPut(r.Context(), put)))
	in.Method = http.MethodPut
	in.URL = &url.URL{Path: davPath, RawPath: escapedDavPath(agentID, scope, project, p)}
	in.RequestURI = in.URL.RequestURI()
	for _, k := range []string{"If", "If-Match", "If-None-Match", "Content-Range", "Content-Type"} {
		in.Header.Del(k)
	}
	switch {
	case ifExists == "replace" && rev != "":
		in.Header.Set("If-Match", strconv.Quote(rev))
	case ifExists != "replace":
		in.Header.Set("If-None-Match", "*")
	}
	_, _, _ = s.viaDAV(c, in)
	return nil
}

// auditRefusedUpload records an upload refused before the view saw it.
func (s *Server) auditRefusedUpload(c echo.Context, agentID, scope, project, p string) {
	r := c.Request()
	m := audit.Mutation{Start: s.now(), RequestID: requestid.From(r.Context()), AgentID: agentID,
		Scope: scope, Project: project, Action: "upload", Source: p}
	if id, ok := auth.FromContext(r.Context()); ok {
		m.Operator = id.Operator
	}
	s.auditDownload(c, m, codes.InvalidArgument, "INVALID_PATH", http.StatusBadRequest)
}
