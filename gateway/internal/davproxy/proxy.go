package davproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/internal/davwire"
)

// rewrite builds the outbound request (httputil.ReverseProxy.Rewrite). The
// path, query and every WebDAV header (Destination, If, Depth, Overwrite,
// Lock-Token...) go as the client sent them.
func (h *handler) rewrite(pr *httputil.ProxyRequest) {
	st := stateOf(pr.In.Context())
	u := *st.target
	u.Path, u.RawPath, u.RawQuery = pr.In.URL.Path, pr.In.URL.RawPath, pr.In.URL.RawQuery
	u.User, u.Fragment = nil, ""
	pr.Out.URL = &u
	pr.Out.Host = pr.In.Host // the sidecar checks Destination's host against it
	hdr := pr.Out.Header
	// Credentials, identity and the wire contract's headers are the
	// gateway's to set, never the client's.
	maps.DeleteFunc(hdr, func(k string, _ []string) bool {
		return strings.HasPrefix(k, "X-Forwarded-") || strings.HasPrefix(k, "X-Workspace-")
	})
	for _, k := range []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Csrf-Token",
		davwire.OperatorHeader, davwire.RequestIDHeader, "X-Real-Ip",
		"Upgrade", "Connection"} { // no protocol switch through the view
		hdr.Del(k)
	}
	hdr.Set(davwire.PrefixHeader, "/dav/"+st.route.Agent)
	rp, rest := restPut(pr.In)
	switch {
	case rest && rp.Keep:
		hdr.Set(davwire.UnconditionalHeader, davwire.UnconditionalKeep)
	case rest:
	case !h.opts.Writable:
		hdr.Set(davwire.ReadOnlyHeader, "true")
	case h.opts.KeepUnconditional:
		hdr.Set(davwire.UnconditionalHeader, davwire.UnconditionalKeep)
	}
	if st.operator != "" {
		hdr.Set(davwire.OperatorHeader, st.operator)
	}
	if st.requestID != "" {
		hdr.Set(davwire.RequestIDHeader, st.requestID)
	}
}

// modifyResponse makes the sidecar's answer safe to show the client and
// takes the error reason for the audit.
func (h *handler) modifyResponse(resp *http.Response) error {
	st := stateOf(resp.Request.Context())
	hdr := resp.Header
	if loc, ok := browserRedirect(resp, st.route); ok {
		// A person opened a collection URL in a browser: x/net/webdav has
		// no GET for collections (405); show the place in the portal.
		resp.Body.Close()
		resp.Body = http.NoBody
		resp.ContentLength = 0
		clear(hdr)
		resp.StatusCode, resp.Status = http.StatusSeeOther, "303 See Other"
		hdr.Set("Location", loc)
		hdr.Set("Cache-Control", "no-store")
		hdr.Set("Content-Length", "0")
		return nil
	}
	if reason := hdr.Get(davwire.ReasonHeader); reason != "" && resp.StatusCode >= 400 {
		if _, ok := errtable.Lookup(reason); ok {
			st.rec.reason = reason
		}
	}
	// On an error too: a MOVE or COPY that removed its destination and
	// then failed names the version of what it removed.
	rp, _ := restPut(resp.Request)
	if v := hdr.Get(davwire.KeptHeader); v != "" && (h.opts.KeepUnconditional || rp.Keep) {
		st.rec.unconditional = true
		st.rec.kept = checkpointIDs(v)
	}
	if v := hdr.Get(davwire.AutoCheckpointHeader); v != "" {
		st.rec.autos = checkpointIDs(v)
	}
	reason := hdr.Get(davwire.ReasonHeader)
	maps.DeleteFunc(hdr, func(k string, _ []string) bool { return strings.HasPrefix(k, "X-Workspace-") })
	if keep, _ := resp.Request.Context().Value(reasonKey{}).(bool); keep && reason != "" {
		hdr.Set(davwire.ReasonHeader, reason) // for the caller of WithReason, which removes it
	}
	for _, k := range []string{"Server", "X-Powered-By", davwire.RequestIDHeader, "Set-Cookie"} {
		hdr.Del(k)
	}
	// Files come from the agent's volume: a browser must never run them
	// as part of the gateway's origin (where the portal session lives).
	hdr.Set("Content-Security-Policy", contentCSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	if m := resp.Request.Method; resp.StatusCode < 400 && hdr.Get("Cache-Control") == "" &&
		(m == http.MethodGet || m == http.MethodHead || m == "PROPFIND") {
		// File content and listings: the sidecar says no-store; a cache
		// between here and the client must never keep them either way.
		hdr.Set("Cache-Control", "no-store")
	}
	if !h.opts.Writable {
		if allow := hdr.Get("Allow"); allow != "" {
			hdr.Set("Allow", intersectAllow(allow))
		}
	}
	host, hostname := st.target.Host, st.target.Hostname()
	for k, vs := range hdr {
		for _, v := range vs {
			if strings.Contains(v, host) || (hostname != "" && strings.Contains(v, hostname)) {
				h.log.Warn("dropping response header that names the sidecar", "header", k, "agent_id", st.route.Agent)
				delete(hdr, k)
				break
			}
		}
	}
	if st.rec.reason != "" {
		if s := resp.StatusCode; s == 403 || s == 405 || s == 412 || s == 423 || s == 428 {
			h.metrics.rejections.WithLabelValues(strings.ToLower(st.rec.reason)).Inc()
		}
	}
	return nil
}

// checkpointID is the shape of a checkpoint ID (davfs).
var checkpointID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// checkpointIDs are the checkpoint IDs in a comma-separated header value
// (davwire.KeptHeader, davwire.AutoCheckpointHeader); nothing else in it is
// audited.
func checkpointIDs(v string) []string {
	return slices.DeleteFunc(strings.Split(v, ","), func(id string) bool { return !checkpointID.MatchString(id) })
}

// contentCSP sandboxes whatever a browser renders from the WebDAV view: no
// script, no same-origin access, nothing loaded.
const contentCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"

// proxyError answers when the sidecar could not be reached, sent no
// response headers within its timeout, or failed before sending them. The
// message names the agent, never the endpoint.
func (h *handler) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r.Context())
	rec := st.rec
	if st.body != nil && st.body.err != nil {
		// The client's body stopped (the gateway's body deadline, or the
		// connection broke): its fault, not the sidecar's. net/http
		// canceled the request's context when the read failed, so this
		// comes first.
		rec.Header().Set("Connection", "close")
		h.refuse(rec, http.StatusRequestTimeout, "INVALID_ARGUMENT", "the request body did not arrive in time")
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away; nothing to answer.
		rec.status, rec.code = 499, codes.Canceled
		return
	}
	h.log.Warn("sidecar WebDAV request failed", "agent_id", st.route.Agent, "method", r.Method,
		"request_id", st.requestID, "error", scrubErr(err, st.target.Host, st.target.Hostname()))
	h.metrics.unavailable.WithLabelValues(st.route.Agent).Inc()
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &ne) && ne.Timeout() && !(errors.As(err, &oe) && oe.Op == "dial") {
		h.refuse(rec, http.StatusGatewayTimeout, "SIDECAR_UNAVAILABLE",
			fmt.Sprintf("the WebDAV service of agent %q did not answer in time", st.route.Agent))
		rec.code = codes.DeadlineExceeded
		return
	}
	h.refuse(rec, http.StatusServiceUnavailable, "SIDECAR_UNAVAILABLE",
		fmt.Sprintf("the WebDAV service of agent %q is unavailable", st.route.Agent))
}

// scrubErr is err's text for a log line without the sidecar's address: a
// network error keeps only its operation and cause ("dial: connect:
// connection refused"), a failed DNS lookup says only that, and any
// host:port or the endpoint's host left in the text is replaced.
func scrubErr(err error, hosts ...string) string {
	var dnsErr *net.DNSError
	var oe *net.OpError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "sidecar host name not found"
	case errors.As(err, &dnsErr):
		return "sidecar host name lookup failed"
	case errors.As(err, &oe) && oe.Err != nil:
		err = fmt.Errorf("%s: %w", oe.Op, oe.Err)
	}
	s := scrubAddrs(err.Error())
	for _, h := range hosts {
		if h != "" {
			s = strings.ReplaceAll(s, h, "[address]")
		}
	}
	return s
}

// intersectAllow keeps only the read methods of a sidecar's Allow header.
func intersectAllow(allow string) string {
	var keep []string
	for _, m := range strings.Split(allow, ",") {
		m = strings.TrimSpace(m)
		if readMethod(strings.ToUpper(m)) {
			keep = append(keep, m)
		}
	}
	return strings.Join(keep, ", ")
}

// recorder captures status, bytes and the outcome's reason for metrics and
// the audit hook, lets the reverse proxy flush through it (Unwrap), and
// passes 1xx responses other than 100 Continue to the connection itself
// (the client's 100 comes from net/http, when the body is first read after
// the sidecar's).
type recorder struct {
	http.ResponseWriter
	status int
	n      int64
	reason string     // errtable reason, when there is one
	code   codes.Code // set only where the reason does not decide it
	// pre are the headers set before proxying; an informational response
	// makes ReverseProxy clear the header map, and they are restored for
	// the final response.
	pre    http.Header
	saw1xx bool
	// unconditional and kept: the sidecar's davwire.KeptHeader.
	unconditional bool
	kept          []string
	// autos: the automatic checkpoints the request's deletes took (the
	// sidecar's davwire.AutoCheckpointHeader).
	autos []string
}

func (r *recorder) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		// Straight to the innermost writer: a wrapper such as echo's
		// Response takes any WriteHeader as the final status and would
		// then drop the real one (the client saw "200 OK" after a 100
		// Continue whatever the sidecar answered).
		r.saw1xx = true
		if code == http.StatusContinue {
			// Not forwarded: the transport reads the client's body only
			// after the sidecar's 100 Continue (it signals the body writer
			// before this hook runs), and that first read makes net/http
			// send the client its own 100. Forwarding this one as well
			// raced with it and put two 100s on the wire.
			return
		}
		innermost(r.ResponseWriter).WriteHeader(code)
		return
	}
	if r.status == 0 {
		r.status = code
		if r.saw1xx {
			hdr := r.Header()
			for k, v := range r.pre {
				if _, ok := hdr[k]; !ok {
					hdr[k] = v
				}
			}
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	n, err := r.ResponseWriter.Write(p)
	r.n += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// outcome is the audit's gRPC code and reason of the final status.
func (r *recorder) outcome(status int) (codes.Code, string) {
	switch {
	case r.code != codes.OK:
		return r.code, r.reason
	case status < 400:
		return codes.OK, ""
	case r.reason != "":
		return errtable.For(r.reason).Code, r.reason
	}
	return codes.Unknown, ""
}

// countingBody counts the client's body bytes and keeps the first error
// reading it.
type countingBody struct {
	io.ReadCloser
	n     int64
	err   error
	onEnd func() // when the body ends (EOF or an error): the upload slot's release
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	c.end(err)
	return n, err
}

// browserRedirect is where the portal shows a collection that a browser
// (Accept: text/html) asked for with GET, when the sidecar answered 405: the
// agent, its Projects or Global tab, or the project. Folders inside a
// workspace open their workspace (the portal's links name files, not
// folders).
func browserRedirect(resp *http.Response, rt route) (string, bool) {
	r := resp.Request
	if r.Method != http.MethodGet || resp.StatusCode != http.StatusMethodNotAllowed ||
		!strings.Contains(r.Header.Get("Accept"), "text/html") {
		return "", false
	}
	loc := "/agents/" + url.PathEscape(rt.Agent)
	switch {
	case rt.Kind == routeWorkspace && rt.Scope == scopeGlobal:
		loc += "/global"
	case rt.Kind == routeWorkspace && rt.Project != "":
		loc += "/projects/" + url.PathEscape(rt.Project)
	case rt.Kind != routeAgent && rt.Kind != routeWorkspace:
		return "", false
	}
	return loc, true
}
