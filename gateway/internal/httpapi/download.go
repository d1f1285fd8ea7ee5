package httpapi

import (
	"bytes"
	"cmp"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/davproxy"
	"github.com/agentworkspace/files/gateway/internal/requestid"
	"github.com/agentworkspace/files/internal/davwire"
)

// download is GET /api/v1/agent-gateway/agents/{agent_id}/download
// ?workspace.scope=PROJECT&workspace.project_name=demo&path=src: a file as
// an attachment (Range, ETag, If-None-Match as WebDAV's GET), a folder (a
// project's root with an empty path, GLOBAL's root too) as a .zip streamed
// while it is read. It is served by the agent's sidecar through the WebDAV
// view (mutual TLS, the sidecar's credential), so it needs the agent's
// davEndpoint; errors come back as REST errors. Each download is audited
// (action "download").
func (s *Server) download(c echo.Context) error {
	r := c.Request()
	start := s.now()
	agentID := c.Param("agent_id")
	q := r.URL.Query()
	scope, project, p := q.Get("workspace.scope"), q.Get("workspace.project_name"), q.Get("path")
	m := audit.Mutation{Start: start, RequestID: requestid.From(r.Context()), AgentID: agentID,
		Scope: strings.TrimPrefix(scope, "WORKSPACE_SCOPE_"), Project: project, Action: "download", Source: p}
	if id, ok := auth.FromContext(r.Context()); ok {
		m.Operator = id.Operator
	}
	davPath, msg := downloadPath(agentID, scope, project, p)
	if msg != "" {
		s.auditDownload(c, m, codes.InvalidArgument, "INVALID_PATH", http.StatusBadRequest)
		return s.writeError(c, codes.InvalidArgument, workspacev1.ErrorReason_INVALID_PATH, msg)
	}
	if s.opts.DAV == nil {
		return s.writeError(c, codes.FailedPrecondition, workspacev1.ErrorReason_NOT_SUPPORTED, "downloads are not available in this build")
	}
	in := r.Clone(davproxy.WithReason(r.Context()))
	in.Method = http.MethodGet
	in.URL = &url.URL{Path: davPath, RawPath: escapedDavPath(agentID, scope, project, p), RawQuery: "download=1"}
	in.RequestURI = in.URL.RequestURI()
	in.Body = http.NoBody
	code, reason, status := s.viaDAV(c, in)
	s.auditDownload(c, m, code, reason, status)
	return nil
}

// viaDAV serves in (a request built for the WebDAV view) and answers the
// view's error as a REST error; it returns the outcome.
func (s *Server) viaDAV(c echo.Context, in *http.Request) (codes.Code, string, int) {
	w := &restErrors{ResponseWriter: c.Response()}
	s.opts.DAV.ServeHTTP(w, in)
	if w.status < 400 {
		return codes.OK, "", cmp.Or(w.status, http.StatusOK)
	}
	code, reason := s.writeViewError(c, w.status, w.Header(), w.body.String())
	return code, reason, w.status
}

// writeViewError writes the WebDAV view's error answer (status, its
// headers, the start of its plain-text body) as a REST error with the
// errtable reason, and returns its code and reason.
func (s *Server) writeViewError(c echo.Context, status int, h http.Header, body string) (codes.Code, string) {
	reason := cmp.Or(h.Get(errtable.ReasonHeader), viewReasons[status], "INTERNAL")
	row := errtable.For(reason)
	msg := strings.TrimSpace(body)
	if status >= 500 || msg == "" {
		msg = http.StatusText(status)
	}
	c.Response().Header().Del("Content-Length")
	c.Response().Header().Del(errtable.ReasonHeader)
	writeStatus(c.Response(), s.marshaler, errtable.Status(row.Code, reason, msg), 0)
	return row.Code, reason
}

// viewReasons are the reasons of the WebDAV view's own refusals, which
// carry no reason header.
var viewReasons = map[int]string{http.StatusNotFound: "NOT_FOUND", http.StatusServiceUnavailable: "SIDECAR_UNAVAILABLE",
	http.StatusBadGateway: "SIDECAR_UNAVAILABLE", http.StatusTooManyRequests: "TOO_MANY_UPLOADS", http.StatusBadRequest: "INVALID_PATH"}

func (s *Server) auditDownload(c echo.Context, m audit.Mutation, code codes.Code, reason string, status int) {
	if s.opts.Audit == nil {
		return
	}
	m.Duration = s.now().Sub(m.Start)
	m.Code, m.Reason, m.Failed, m.HTTPStatus = code.String(), reason, status >= 400, status
	s.opts.Audit.Mutation(c.Request().Context(), m)
}

// downloadPath is the WebDAV name of what is downloaded, or why the
// request is refused. Nothing is cleaned: a dot or empty segment, a
// leading or trailing "/" is refused.
func downloadPath(agentID, scope, project, p string) (string, string) {
	if p != "" {
		for _, seg := range strings.Split(p, "/") {
			switch seg {
			case "":
				return "", "invalid path: empty segment (a leading, trailing or doubled /)"
			case ".", "..":
				return "", "invalid path: dot segment (. or ..)"
			}
		}
	}
	if !davwire.ValidPrefix("/dav/" + agentID) {
		return "", "invalid agent ID"
	}
	switch scope {
	case "PROJECT", "WORKSPACE_SCOPE_PROJECT":
		if project == "" || strings.Contains(project, "/") || project == "." || project == ".." {
			return "", "invalid workspace: workspace.project_name must name one project"
		}
		return join("/dav/"+agentID+"/projects/"+project, p), ""
	case "GLOBAL", "WORKSPACE_SCOPE_GLOBAL":
		if project != "" {
			return "", "invalid workspace: a GLOBAL workspace has no project_name"
		}
		return join("/dav/"+agentID+"/global", p), ""
	}
	return "", "invalid workspace: workspace.scope must be PROJECT or GLOBAL"
}

func escapedDavPath(agentID, scope, project, p string) string {
	var b bytes.Buffer
	b.WriteString("/dav/" + url.PathEscape(agentID))
	if strings.HasSuffix(scope, "GLOBAL") {
		b.WriteString("/global")
	} else {
		b.WriteString("/projects/" + url.PathEscape(project))
	}
	if p != "" {
		for _, seg := range strings.Split(p, "/") {
			b.WriteString("/" + url.PathEscape(seg))
		}
	}
	return b.String()
}

func join(base, p string) string {
	if p == "" {
		return base
	}
	return base + "/" + p
}

// maxHeldBody is how much of a held-back answer's body is kept: enough
// for the WebDAV view's error text, which is rewritten as a REST error.
const maxHeldBody = 4096

// keepStart appends to buf what of p fits within maxHeldBody.
func keepStart(buf *bytes.Buffer, p []byte) {
	if room := maxHeldBody - buf.Len(); room > 0 {
		buf.Write(p[:min(len(p), room)])
	}
}

// restErrors holds back an error answer of the WebDAV view (to be
// rewritten as a REST error) and passes a success through unbuffered.
type restErrors struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *restErrors) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if code < 400 {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *restErrors) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.status >= 400 {
		keepStart(&w.body, p)
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *restErrors) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.status < 400 {
		f.Flush()
	}
}

func (w *restErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }
