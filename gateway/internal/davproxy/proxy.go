package davproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

func newTransport() *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil, // sidecars are in-cluster; never via an environment proxy
		DialContext:           d.DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute, // after the request body is sent: fsync of a large upload
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true, // pass the client's Accept-Encoding through untouched
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
	}
}

// sidecarURL is the URL on the sidecar for a workspace route (or for the
// given sidecar path, escaped), under the endpoint's own base path.
func sidecarURL(target *url.URL, restEsc string) *url.URL {
	u := *target
	u.RawQuery, u.Fragment, u.User = "", "", nil
	basePath := strings.TrimSuffix(target.Path, "/")
	baseEsc := strings.TrimSuffix(target.EscapedPath(), "/")
	p, err := url.PathUnescape(restEsc)
	if err != nil {
		p = restEsc
	}
	u.Path = basePath + p
	u.RawPath = baseEsc + restEsc
	if u.EscapedPath() != u.RawPath {
		// Let url pick its own encoding when ours is not a valid one.
		u.RawPath = ""
	}
	return &u
}

// rewrite builds the outbound request (httputil.ReverseProxy.Rewrite).
func (h *handler) rewrite(pr *httputil.ProxyRequest) {
	st := stateOf(pr.In.Context())
	u := sidecarURL(st.target, st.route.restEsc)
	u.RawQuery = pr.In.URL.RawQuery
	pr.Out.URL = u
	pr.Out.Host = ""
	hdr := pr.Out.Header
	// Credentials, identity and anything that could change how the sidecar
	// maps paths (X-Forwarded-Prefix rewrites its Destination and hrefs) are
	// the gateway's to set, never the client's.
	for _, k := range []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Operator", "X-Request-Id",
		"X-Csrf-Token", "Forwarded", "X-Forwarded-Prefix", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-For",
		"X-Forwarded-User", "X-Forwarded-Groups", "X-Real-Ip"} {
		hdr.Del(k)
	}
	if st.operator != "" {
		hdr.Set("X-Operator", st.operator)
	}
	if st.requestID != "" {
		hdr.Set("X-Request-ID", st.requestID)
	}
	if d := hdr.Get("Destination"); d != "" {
		// checkDestination has already vetted it and stored the sidecar path.
		if st.destination != "" {
			hdr.Set("Destination", st.destination)
		} else {
			hdr.Del("Destination")
		}
	}
	if pr.In.Method != http.MethodGet {
		// Multistatus and error bodies must arrive uncompressed to be
		// rewritten; GET (file content) keeps the client's choice.
		hdr.Del("Accept-Encoding")
	}
	if m := pr.In.Method; m == "COPY" || m == "MOVE" {
		// Never overwrite an existing destination: that would replace it
		// without any revision check. Clients delete it first (with
		// If-Match) or get 412.
		hdr.Set("Overwrite", "F")
	}
	if v := hdr.Values("If"); len(v) > 0 {
		hdr.Del("If")
		for _, s := range v {
			hdr.Add("If", h.rewriteIfHeader(s, st))
		}
	}
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = nil // don't add Go's default
	}
}

// modifyResponse makes the sidecar's answer safe to show the client.
func (h *handler) modifyResponse(resp *http.Response) error {
	st := stateOf(resp.Request.Context())
	hosts := upstreamHosts(st.target)
	hdr := resp.Header
	for _, k := range []string{"Server", "X-Powered-By", "X-Request-Id", "Set-Cookie"} {
		hdr.Del(k)
	}
	// Files come from the agent's volume: a browser must never run them
	// as part of the gateway's origin (where the portal session lives).
	hdr.Set("Content-Security-Policy", contentCSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	for _, k := range []string{"Location", "Content-Location"} {
		if v := hdr.Get(k); v != "" {
			hdr.Set(k, h.clientHref(v, st))
		}
	}
	if !h.opts.Writable {
		if allow := hdr.Get("Allow"); allow != "" {
			hdr.Set("Allow", intersectAllow(allow))
		}
	}
	for k, vs := range hdr {
		for _, v := range vs {
			if containsHost(v, hosts) {
				h.log.Warn("dropping response header that names the sidecar", "header", k, "agent_id", st.route.agentID)
				delete(hdr, k)
				break
			}
		}
	}
	if resp.Body == nil || resp.Body == http.NoBody || resp.Request.Method == http.MethodHead {
		return nil
	}
	// A successful GET carries file content: never touched, whatever its
	// type (a user's XML file may well contain DAV:href elements).
	if resp.Request.Method == http.MethodGet && resp.StatusCode < 400 {
		return nil
	}
	if enc := hdr.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		// rewrite() asks for identity on every method but GET; an encoded
		// WebDAV body could not be rewritten or scrubbed.
		return errors.New("davproxy: sidecar sent an encoded WebDAV response")
	}
	switch {
	case isXMLContentType(hdr.Get("Content-Type")):
		resp.Body = newHrefRewriter(resp.Body, func(s string) string { return h.clientHref(s, st) }, hosts)
		resp.ContentLength = -1
		hdr.Del("Content-Length")
	case resp.StatusCode >= 400:
		// Error bodies are small messages: read up to 64 KiB, scrub any
		// upstream address, drop the rest.
		const limit = 64 << 10
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		for _, host := range hosts {
			b = bytes.ReplaceAll(b, []byte(host), []byte("sidecar"))
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		hdr.Set("Content-Length", fmt.Sprint(len(b)))
	}
	if resp.StatusCode == http.StatusPreconditionFailed {
		h.metrics.rejections.WithLabelValues("revision_conflict").Inc()
	}
	return nil
}

// contentCSP sandboxes whatever a browser renders from the WebDAV view: no
// script, no same-origin access, nothing loaded.
const contentCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"

// clientHref maps a sidecar href (a path, or an absolute URL on the
// sidecar) to the client's /dav/{agent}/... path. Only the path is kept, so
// the sidecar's host never leaks.
func (h *handler) clientHref(s string, st *state) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	p := s
	if u, err := url.Parse(s); err == nil {
		if u.Scheme != "" || u.Host != "" {
			p = u.EscapedPath()
		}
	} else if i := strings.Index(s, "://"); i >= 0 {
		// Unparseable absolute URL: keep only what follows the authority.
		rest := s[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			p = rest[j:]
		} else {
			p = "/"
		}
	}
	if !strings.HasPrefix(p, "/") {
		return s // relative reference: relative to the request, already fine
	}
	if base := strings.TrimSuffix(st.target.EscapedPath(), "/"); base != "" {
		if p == base {
			p = "/"
		} else if strings.HasPrefix(p, base+"/") {
			p = strings.TrimPrefix(p, base)
		}
	}
	return st.route.clientPath(p)
}

// rewriteIfHeader maps the resource tags of a WebDAV If header
// (RFC 4918 §10.4: "<url> (...)") from client to sidecar paths. State
// tokens inside parentheses are left alone.
func (h *handler) rewriteIfHeader(v string, st *state) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '(':
			depth++
		case c == ')':
			if depth > 0 {
				depth--
			}
		case c == '<' && depth == 0:
			end := strings.IndexByte(v[i:], '>')
			if end < 0 {
				b.WriteString(v[i:])
				return b.String()
			}
			tag := v[i+1 : i+end]
			if p, ok := h.sidecarPathFor(tag, st); ok {
				tag = p
			}
			b.WriteByte('<')
			b.WriteString(tag)
			b.WriteByte('>')
			i += end
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// sidecarPathFor maps a client URL or path in this agent's tree to the
// sidecar's absolute URL for it (only ever sent to the sidecar: a WebDAV
// server matches If-header resource tags against its own host).
func (h *handler) sidecarPathFor(s string, st *state) (string, bool) {
	u, err := url.Parse(s)
	if err != nil {
		return "", false
	}
	rt, err := parseRoute(u.EscapedPath())
	if err != nil || rt.kind != routeWorkspace || rt.agentID != st.route.agentID {
		return "", false
	}
	return sidecarURL(st.target, rt.restEsc).String(), true
}

// proxyError answers when the sidecar could not be reached or failed before
// sending a response. The message names the agent, never the endpoint.
func (h *handler) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r.Context())
	rec, _ := w.(*recorder)
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away; nothing to answer.
		if rec != nil {
			rec.reason = "client_gone"
			rec.status = 499
		}
		return
	}
	h.log.Warn("sidecar WebDAV request failed", "agent_id", st.route.agentID, "method", r.Method, "request_id", st.requestID, "error", scrubErr(err))
	h.metrics.unavailable.WithLabelValues(st.route.agentID).Inc()
	msg := fmt.Sprintf("the WebDAV service of agent %q is unavailable", st.route.agentID)
	if rec != nil {
		h.refuse(rec, http.StatusServiceUnavailable, "sidecar_unavailable", msg)
		return
	}
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// scrubErr is err for a log line without the sidecar's address: a network
// error keeps only its cause ("connect: connection refused", "i/o
// timeout"), a failed DNS lookup says only that.
func scrubErr(err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return errors.New("sidecar host name not found")
		}
		return errors.New("sidecar host name lookup failed")
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return fmt.Errorf("%s: %w", oe.Op, oe.Err)
	}
	return err
}

func upstreamHosts(target *url.URL) []string {
	hosts := []string{target.Host}
	if hn := target.Hostname(); hn != "" && hn != target.Host {
		hosts = append(hosts, hn)
	}
	return hosts
}

func containsHost(v string, hosts []string) bool {
	for _, h := range hosts {
		if h != "" && strings.Contains(v, h) {
			return true
		}
	}
	return false
}

// intersectAllow keeps only the read methods of a sidecar's Allow header.
func intersectAllow(allow string) string {
	var keep []string
	for _, m := range strings.Split(allow, ",") {
		m = strings.TrimSpace(m)
		if readMethods[strings.ToUpper(m)] {
			keep = append(keep, m)
		}
	}
	return strings.Join(keep, ", ")
}

// recorder captures status and bytes for metrics and the audit hook, and
// lets the reverse proxy flush through it.
type recorder struct {
	http.ResponseWriter
	status int
	n      int64
	reason string
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.n += int64(n)
	return n, err
}

func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

type countingBody struct {
	io.ReadCloser
	n int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	return n, err
}
