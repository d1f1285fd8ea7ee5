// Package httpapi is the gateway's HTTP surface on echo: the REST API
// (grpc-gateway over the in-process WorkspaceManagementService), the portal
// login session, the WebDAV view mount, /metrics, /healthz, /readyz and the
// portal's static files.
//
// Every response carries X-Request-ID and the security headers. Every route
// except /healthz, /readyz, the portal's files, OPTIONS / and the login
// (POST /api/v1/agent-gateway/session) requires an authenticated admin;
// cookie-authenticated state-changing requests also need X-CSRF-Token.
// /readyz answers 503 until Options.Ready says the gateway is ready (a
// replica sharing sign-outs lists them first).
package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"github.com/agentworkspace/files/contracts/errtable"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/metrics"
	"github.com/agentworkspace/files/gateway/internal/requestid"
	"github.com/agentworkspace/files/gateway/internal/session"
	"github.com/agentworkspace/files/gateway/internal/uploads"
	"github.com/agentworkspace/files/internal/davwire"
)

// APIPrefix is the REST API's path prefix.
const APIPrefix = "/api/v1/agent-gateway"

// MaxAPIBody bounds REST request bodies: a 1 MiB file (the default
// maxEditableFileSize) as JSON fits even when every byte is escaped (\u0001
// is 6 bytes). The gateway holds a body while it decodes it, about twice
// its size live, so limits.uploadsPerAgent such bodies fit its memory
// limit (docs/limits.md "Memory"); 16 MiB did not.
const MaxAPIBody = 8 << 20

// DAVRealm is the Basic realm announced on WebDAV 401s.
const DAVRealm = "agent-workspace"

// davMethods are routed to the WebDAV view.
var davMethods = []string{
	http.MethodOptions, http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete,
	http.MethodPost, http.MethodPatch, "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK",
}

// Options are the Server's collaborators.
type Options struct {
	Auth    *auth.Authenticator
	Service workspacev1.WorkspaceManagementServiceServer
	// Checkpoints serves the checkpoint routes; nil leaves them out.
	Checkpoints workspacev1.CheckpointManagementServiceServer
	Metrics     *metrics.Metrics
	Gatherer    prometheus.Gatherer
	// DAV is the WebDAV view mounted at /dav/; nil answers 501.
	DAV http.Handler
	// Portal serves the static portal.
	Portal http.Handler
	// Writable is webdav.writable (only for the fallback OPTIONS answer).
	Writable bool
	// Audit records REST mutations refused before reaching Service.
	Audit *audit.Logger
	// BodyReadTimeout bounds the whole body of a request that is not (yet)
	// authenticated; BodyIdleTimeout each read of an authenticated
	// request's body (see deadline.go). 0 disables them (unit tests).
	BodyReadTimeout time.Duration
	BodyIdleTimeout time.Duration
	Logger          hclog.Logger
	Now             func() time.Time
	// Watch serves live changes (watch.go); nil answers 501.
	Watch        Watcher
	WatchMetrics *WatchMetrics
	// Stopping is closed when the gateway shuts down: open watch streams end.
	Stopping <-chan struct{}
	// Uploads bounds the REST requests with a body in flight per agent
	// (limits.uploadsPerAgent, shared with the WebDAV view). Nil: no cap.
	Uploads *uploads.Slots
	// WatchHeartbeat is the keep-alive interval of a watch stream, at
	// which its credentials are checked again (default WatchHeartbeat).
	WatchHeartbeat time.Duration
	// WatchStreams caps the open watch streams per agent (default
	// DefaultWatchStreams).
	WatchStreams int
	// WatchWriteTimeout bounds each write of a watch stream (default
	// WatchWriteTimeout).
	WatchWriteTimeout time.Duration
	// SignOut ends a session on every replica (signouts.Shared, through
	// the Kubernetes API); nil ends it only in Auth's store, in this
	// process.
	SignOut SignOuter
	// Search serves the search route (search.go); nil answers 409
	// NOT_SUPPORTED.
	Search Searcher
	// Ready gates /readyz (503 until it reports true); nil is always ready.
	Ready func() bool
}

// SignOuter ends the session sealed in a cookie value everywhere. An error
// means it was recorded nowhere: the session is still live.
type SignOuter interface {
	SignOut(ctx context.Context, value string) error
}

// Server is the gateway's HTTP handler.
type Server struct {
	e         *echo.Echo
	opts      Options
	log       hclog.Logger
	now       func() time.Time
	marshaler runtime.Marshaler

	watchMu   sync.Mutex
	watchOpen map[string]int // open watch streams by agent
}

// New builds the echo server and registers every route.
func New(opts Options) (*Server, error) {
	s := &Server{opts: opts, log: cmp.Or(opts.Logger, hclog.NewNullLogger()), now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	s.marshaler = newMarshaler()
	restAPI, err := s.newAPI()
	if err != nil {
		return nil, err
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.echoError
	e.Use(s.bodyDeadline, s.requestID, s.recover, s.securityHeaders, s.sanitize, s.accessLog)

	admin := s.requireAdmin

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{})), admin)

	e.POST(APIPrefix+"/session", s.login)
	e.GET(APIPrefix+"/session", s.whoami)
	e.DELETE(APIPrefix+"/session", s.logout)
	e.GET(APIPrefix+"/openapi.json", s.openapi, admin)
	e.GET(APIPrefix+"/agents/:agent_id/watch", s.watch, admin)
	e.GET(APIPrefix+"/agents/:agent_id/search", s.search, admin)
	e.GET(APIPrefix+"/agents/:agent_id/download", s.download, admin)
	e.PUT(APIPrefix+"/agents/:agent_id/upload", s.upload, admin)
	e.OPTIONS(APIPrefix+"/agents/:agent_id/upload", s.uploadLimit, admin)
	api := echo.WrapHandler(restAPI)
	e.Any(APIPrefix+"/*", api, admin, s.auditRefused)
	e.Any(APIPrefix, api, admin)

	dav := s.davHandler()
	e.Match(davMethods, "/dav", dav, admin)
	e.Match(davMethods, "/dav/*", dav, admin)

	e.OPTIONS("/", s.rootOptions)
	e.Match([]string{http.MethodGet, http.MethodHead}, "/*", s.portalOrNotFound(echo.WrapHandler(opts.Portal)))
	s.e = e
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

func (s *Server) davHandler() echo.HandlerFunc {
	if s.opts.DAV == nil {
		// Only a Server built without a WebDAV view (unit tests); the
		// gateway always mounts davproxy.
		return func(c echo.Context) error {
			return s.writeError(c, codes.Unimplemented, workspacev1.ErrorReason_INTERNAL, "the WebDAV view is not available in this build")
		}
	}
	return echo.WrapHandler(s.opts.DAV)
}

func (s *Server) rootOptions(c echo.Context) error {
	if s.opts.DAV != nil {
		s.opts.DAV.ServeHTTP(c.Response(), c.Request())
		return nil
	}
	h := c.Response().Header()
	h.Set("DAV", "1, 2")
	h.Set("MS-Author-Via", "DAV")
	h.Set("Allow", davwire.Allow(s.opts.Writable))
	return c.NoContent(http.StatusOK)
}

func (s *Server) portalOrNotFound(portal echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := c.Request().URL.Path
		if strings.HasPrefix(p, "/api/") || p == "/api" {
			return s.writeError(c, codes.NotFound, workspacev1.ErrorReason_NOT_FOUND, "no such API route")
		}
		return portal(c)
	}
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is /healthz until the gateway is ready: a starting replica lists
// the shared sign-outs first, so the Service sends it nobody before.
func (s *Server) readyz(c echo.Context) error {
	if s.opts.Ready != nil && !s.opts.Ready() {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "starting"})
	}
	return s.healthz(c)
}

func (s *Server) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", contracts.OpenAPI)
}

// --- middleware ---

func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		id := requestid.Sanitize(r.Header.Get(requestid.Header))
		if id == "" {
			id = requestid.New()
		}
		r.Header.Set(requestid.Header, id)
		c.Response().Header().Set(requestid.Header, id)
		c.SetRequest(r.WithContext(requestid.With(r.Context(), id)))
		return next(c)
	}
}

func (s *Server) recover(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in handler", "request_id", requestid.From(c.Request().Context()), "panic", v)
				err = echo.NewHTTPError(http.StatusInternalServerError)
			}
		}()
		return next(c)
	}
}

func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		if p := c.Request().URL.Path; p == "/dav" || strings.HasPrefix(p, "/dav/") {
			// Files an agent wrote must never run as this origin when an
			// admin opens one in the browser: no scripts, opaque origin.
			h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; sandbox; frame-ancestors 'none'")
		} else {
			// CodeMirror injects <style> elements, hence 'unsafe-inline' for styles only.
			h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")
		}
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if p := c.Request().URL.Path; p == "/api" || strings.HasPrefix(p, "/api/") {
			// File content, listings, sessions: nothing of the API may be
			// kept by a browser or a proxy cache.
			h.Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}

func (s *Server) sanitize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		s.opts.Auth.Sanitize(c.Request())
		return next(c)
	}
}

// accessLog logs every request without query strings and, for WebDAV, only
// the agent and workspace part of the path (names below are not logged).
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := s.now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		r := c.Request()
		p := r.URL.Path
		if strings.HasPrefix(p, "/dav/") {
			parts := strings.SplitN(p, "/", 5)
			if len(parts) > 4 {
				p = strings.Join(parts[:4], "/") + "/..."
			}
		}
		op := ""
		if id, ok := auth.FromContext(r.Context()); ok {
			op = id.Operator
		}
		level := hclog.Info
		if p == "/healthz" || p == "/readyz" {
			level = hclog.Debug // probes would drown everything else
		}
		s.log.Log(level, "request", "method", r.Method, "path", p, "status", c.Response().Status,
			"duration_ms", float64(s.now().Sub(start).Microseconds())/1000,
			"request_id", requestid.From(r.Context()), "operator", op)
		return nil
	}
}

// requireAdmin authenticates, authorises (admin only) and checks CSRF.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		id, err := s.opts.Auth.Authenticate(r)
		if err != nil {
			if p := r.URL.Path; p == "/dav" || strings.HasPrefix(p, "/dav/") {
				c.Response().Header().Set("WWW-Authenticate", `Basic realm="`+DAVRealm+`", charset="UTF-8"`)
			}
			return s.deny(c, codes.Unauthenticated, "authentication required")
		}
		if !id.Admin() {
			return s.deny(c, codes.PermissionDenied, "admin role required")
		}
		if !auth.CheckCSRF(id, r) {
			return s.deny(c, codes.PermissionDenied, "missing or invalid "+auth.CSRFHeader+" header")
		}
		s.opts.Auth.StripIdentity(r)
		authenticatedBody(r, s.opts.BodyIdleTimeout)
		c.SetRequest(r.WithContext(auth.WithIdentity(r.Context(), id)))
		return next(c)
	}
}

func (s *Server) authFailure(status string) {
	if s.opts.Metrics != nil {
		s.opts.Metrics.AuthFailures.WithLabelValues(status).Inc()
	}
}

// deny refuses a request whose credentials are missing or invalid
// (Unauthenticated, 401) or not an admin's (PermissionDenied, 403), and
// counts the failure; it returns nil for the handler to return.
func (s *Server) deny(c echo.Context, code codes.Code, msg string) error {
	label, reason := "403", workspacev1.ErrorReason_FORBIDDEN
	if code == codes.Unauthenticated {
		label, reason = "401", workspacev1.ErrorReason_UNAUTHENTICATED
	}
	s.authFailure(label)
	return s.writeError(c, code, reason, msg)
}

// echoError renders echo's own errors (no route, method not allowed,
// panics) in the REST shape.
func (s *Server) echoError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := http.StatusInternalServerError
	if he, ok := err.(*echo.HTTPError); ok {
		code = he.Code
	}
	st, code := routingError(code)
	respond(c.Response(), c.Request(), s.marshaler, st, code)
}

// --- session (portal login) ---

type sessionResponse struct {
	Operator  string `json:"operator"`
	Role      string `json:"role"`
	CSRFToken string `json:"csrf_token,omitempty"`
	// SSO is set when the identity comes from the trusted proxy (the
	// portal then has no token login and signs out at SignOutURL).
	SSO        bool   `json:"sso,omitempty"`
	SignOutURL string `json:"sign_out_url,omitempty"`
}

// sessionOf describes id to the portal.
func (s *Server) sessionOf(id auth.Identity) sessionResponse {
	out := sessionResponse{Operator: id.Operator, Role: id.Role}
	if id.Session != nil {
		out.CSRFToken = id.Session.CSRFToken
	}
	if id.Method == auth.MethodProxy {
		out.SSO, out.SignOutURL = true, s.opts.Auth.SignOutPath()
	}
	return out
}

func (s *Server) login(c echo.Context) error {
	r := c.Request()
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<10))
	if err != nil {
		rf := readRefusal(err)
		writeStatus(c.Response(), s.marshaler, rf.st, rf.httpStatus)
		return nil
	}
	var in struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Token == "" {
		return s.writeError(c, codes.InvalidArgument, workspacev1.ErrorReason_INVALID_ARGUMENT, `body must be JSON {"token": "..."}`)
	}
	id, ok := s.opts.Auth.Token(in.Token)
	if !ok {
		return s.deny(c, codes.Unauthenticated, "invalid token")
	}
	if !id.Admin() {
		return s.deny(c, codes.PermissionDenied, "admin role required")
	}
	store := s.opts.Auth.Sessions()
	sess, err := store.Create(id.Operator, id.Role)
	if err != nil {
		return s.writeError(c, codes.Internal, workspacev1.ErrorReason_INTERNAL, "could not create session")
	}
	s.setSessionCookie(c, sess.ID, int(store.Lifetime().Seconds()))
	s.log.Info("session created", "operator", id.Operator, "request_id", requestid.From(r.Context()))
	return c.JSON(http.StatusOK, sessionResponse{Operator: sess.Operator, Role: sess.Role, CSRFToken: sess.CSRFToken})
}

// whoami is GET /session: who is signed in (admins only, like every
// route). A non-admin gets the usual 403 error, which also names them and,
// signed in by the trusted proxy, where to sign out (the portal's "no
// access" page offers that).
func (s *Server) whoami(c echo.Context) error {
	r := c.Request()
	id, err := s.opts.Auth.Authenticate(r)
	if err != nil {
		return s.deny(c, codes.Unauthenticated, "authentication required")
	}
	if id.Admin() {
		return c.JSON(http.StatusOK, s.sessionOf(id))
	}
	s.authFailure("403")
	buf, err := marshalError(s.marshaler, withReason(errtable.Status(codes.PermissionDenied, workspacev1.ErrorReason_FORBIDDEN.String(), "admin role required")))
	var body map[string]any
	if err != nil || json.Unmarshal(buf, &body) != nil {
		return s.deny(c, codes.PermissionDenied, "admin role required")
	}
	who := s.sessionOf(id)
	body["operator"], body["role"] = who.Operator, who.Role
	if who.SSO {
		body["sso"], body["sign_out_url"] = true, who.SignOutURL
	}
	return c.JSON(http.StatusForbidden, body)
}

// logout ends the cookie session (CSRF header required when the session is
// live) and always clears the cookie.
func (s *Server) logout(c echo.Context) error {
	r := c.Request()
	if ck, err := r.Cookie(session.CookieName); err == nil && ck.Value != "" {
		store := s.opts.Auth.Sessions()
		if sess, ok := store.Get(ck.Value); ok {
			if !sess.CheckCSRF(r.Header.Get(auth.CSRFHeader)) {
				return s.deny(c, codes.PermissionDenied, "missing or invalid "+auth.CSRFHeader+" header")
			}
			if s.opts.SignOut != nil {
				if err := s.opts.SignOut.SignOut(r.Context(), ck.Value); err != nil {
					// The cookie is kept: the session is still live, and
					// signing out again may work.
					s.log.Error("sign-out not recorded", "operator", sess.Operator, "error", err, "request_id", requestid.From(r.Context()))
					return s.writeError(c, codes.Unavailable, workspacev1.ErrorReason_ERROR_REASON_UNSPECIFIED,
						"sign-out failed: the shared sign-out list could not be updated; the session is still valid, try again")
				}
			} else {
				store.Delete(ck.Value)
			}
		}
	}
	s.setSessionCookie(c, "", -1)
	return c.NoContent(http.StatusNoContent)
}

// setSessionCookie sets the session cookie to value for maxAge seconds (-1
// clears it). Every API response, this one too, is Cache-Control: no-store
// (securityHeaders).
func (s *Server) setSessionCookie(c echo.Context, value string, maxAge int) {
	http.SetCookie(c.Response(), &http.Cookie{Name: session.CookieName, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.opts.Auth.Secure(c.Request())})
}
