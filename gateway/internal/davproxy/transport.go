package davproxy

import (
	"crypto/tls"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// newTransport is one agent's connection pool, with that agent's header
// timeout and mutual-TLS client config (HTTP/1.1, as the sidecar's dav
// listener speaks).
func newTransport(headerTimeout time.Duration, tlsCfg *tls.Config) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               nil, // sidecars are in-cluster; never via an environment proxy
		DialContext:         d.DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		// Waiting for the sidecar's headers, counted after the request body
		// is sent; the body of the response is never cut by it.
		ResponseHeaderTimeout: headerTimeout,
		// Honour a client's "Expect: 100-continue": the body goes to the
		// sidecar only after its 100 (which reaches the client too), or
		// after this long without an answer.
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true, // pass the client's Accept-Encoding through untouched
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
	}
}

// transportFor returns the agent's transport, made on first use (and anew
// when its timeout changed).
func (h *handler) transportFor(agentID string) http.RoundTripper {
	if h.opts.Transport != nil {
		return h.opts.Transport
	}
	timeout := DefaultTimeout
	if h.opts.Timeout != nil {
		if d := h.opts.Timeout(agentID); d > 0 {
			timeout = d
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.transports[agentID]
	if t == nil || t.ResponseHeaderTimeout != timeout {
		if t != nil {
			t.CloseIdleConnections()
		}
		var tlsCfg *tls.Config
		if h.opts.TLS != nil {
			tlsCfg = h.opts.TLS(agentID)
		}
		t = newTransport(timeout, tlsCfg)
		h.transports[agentID] = t
	}
	return t
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// roundTrip sends the outbound request with its agent's transport.
func (h *handler) roundTrip(r *http.Request) (*http.Response, error) {
	return h.transportFor(stateOf(r.Context()).route.Agent).RoundTrip(r)
}

// addrRE matches IPv4 and bracketed IPv6 host:port pairs, as net errors
// print them ("read tcp 10.0.0.1:51234->10.0.0.2:9092: ...").
var addrRE = regexp.MustCompile(`(?:\d{1,3}\.){3}\d{1,3}:\d+|\[[0-9A-Fa-f:.%a-z0-9]+\]:\d+`)

// scrubAddrs replaces every host:port in s.
func scrubAddrs(s string) string { return addrRE.ReplaceAllString(s, "[address]") }

// scrubWriter is where ReverseProxy's *log.Logger writes its own errors (a
// response body copy that failed): into l without any address.
type scrubWriter struct{ l hclog.Logger }

func (w scrubWriter) Write(p []byte) (int, error) {
	w.l.Warn("sidecar WebDAV response failed", "error", scrubAddrs(strings.TrimSpace(string(p))))
	return len(p), nil
}
