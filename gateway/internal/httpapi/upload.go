package httpapi

import (
	"bytes"
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
	"github.com/agentworkspace/files/internal/davwire"
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

// uploadLimit answers OPTIONS .../agents/{agent_id}/upload
// ?workspace.scope=…[&workspace.project_name=…] with 204, Allow: OPTIONS,
// PUT and the sidecar's maxUploadSize as X-Max-Upload-Size, taken from the
// WebDAV view's OPTIONS of the workspace's root (whose other headers, the
// view's DAV capabilities, are not this route's), so the portal refuses a
// larger file before sending it. Nothing is written or audited.
func (s *Server) uploadLimit(c echo.Context) error {
	q := c.Request().URL.Query()
	agentID, scope, project := c.Param("agent_id"), q.Get("workspace.scope"), q.Get("workspace.project_name")
	davPath, msg := downloadPath(agentID, scope, project, "")
	if msg != "" {
		return s.writeError(c, codes.InvalidArgument, workspacev1.ErrorReason_INVALID_PATH, msg)
	}
	if s.opts.DAV == nil {
		return s.writeError(c, codes.FailedPrecondition, workspacev1.ErrorReason_NOT_SUPPORTED, "uploads are not available in this build")
	}
	in := c.Request().Clone(c.Request().Context())
	in.Method = http.MethodOptions
	in.Body, in.ContentLength = http.NoBody, 0
	in.URL = &url.URL{Path: davPath + "/", RawPath: escapedDavPath(agentID, scope, project, "") + "/"}
	in.RequestURI = in.URL.RequestURI()
	w := &heldAnswer{header: http.Header{}}
	s.opts.DAV.ServeHTTP(w, in)
	if w.status >= 400 {
		_, _ = s.writeViewError(c, w.status, w.header, w.body.String())
		return nil
	}
	h := c.Response().Header()
	h.Set("Allow", "OPTIONS, PUT")
	if v := w.header.Get(davwire.MaxUploadHeader); v != "" {
		h.Set(davwire.MaxUploadHeader, v)
	}
	return c.NoContent(http.StatusNoContent)
}

// heldAnswer keeps an answer of the WebDAV view (its headers, status and
// the start of its body) instead of sending it.
type heldAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *heldAnswer) Header() http.Header { return w.header }

func (w *heldAnswer) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *heldAnswer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	keepStart(&w.body, p)
	return len(p), nil
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
