// Package davwire names the headers the gateway and the sidecar's WebDAV
// server use between themselves. The gateway sets each request header after
// stripping any copy a client sent, and strips each response header before a
// response leaves it; the sidecar trusts them because only the gateway
// reaches its WebDAV port (NetworkPolicy). It also holds the two sides'
// shared method table, Allow header, path grammar (path.go, route.go) and
// metric registration.
package davwire

import (
	"errors"
	"net/http"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/contracts/errtable"
)

const (
	// PrefixHeader carries the path prefix under which the gateway serves
	// this sidecar's tree ("/dav/{agent_id}"). The gateway forwards request
	// paths (and Destination) unchanged, so they start with the prefix; the
	// sidecar strips it and emits every href, Location and Destination it
	// writes under it (x/net/webdav's Handler.Prefix).
	PrefixHeader = "X-Forwarded-Prefix"
	// ReadOnlyHeader, set to "true", says the gateway's view is read-only
	// (webdav.writable false): the sidecar then advertises "DAV: 1", no
	// DAV:supportedlock, and refuses every write itself too.
	ReadOnlyHeader = "X-Workspace-Read-Only"
	// OperatorHeader is the authenticated operator, for the sidecar's logs.
	OperatorHeader = "X-Operator"
	// RequestIDHeader travels both ways.
	RequestIDHeader = "X-Request-ID"
	// ReasonHeader names the errtable reason of an error response.
	ReasonHeader = errtable.ReasonHeader
	// UnconditionalHeader, set to UnconditionalKeep by a gateway with
	// webdav.unconditionalWrites: keep, lets a write that replaces or
	// removes an existing resource without a precondition or a held lock
	// go ahead once what it replaces is kept as a per-file version (the
	// sidecar honours it only with its checkpoints enabled).
	UnconditionalHeader = "X-Workspace-Unconditional-Writes"
	UnconditionalKeep   = "keep"
	// KeptHeader, on a successful response, says the request's write went
	// ahead without a precondition because of UnconditionalHeader: the IDs
	// (comma-separated) of the versions it kept, or KeptNone when it
	// replaced nothing (a MOVE of its source to a new name). The gateway
	// audits it and strips it.
	KeptHeader = "X-Workspace-Kept-Versions"
	KeptNone   = "none"
	// AutoCheckpointHeader, on a response to a WebDAV request whose delete
	// took an automatic checkpoint (a recursive DELETE, or the removal of a
	// COPY or MOVE destination directory), holds its ID (comma-separated
	// when there were more). The gateway audits it and strips it.
	AutoCheckpointHeader = "X-Workspace-Auto-Checkpoint"
	// MaxUploadHeader, on the sidecar's OPTIONS answers and its 413s, is
	// services.project.maxUploadSize in bytes: the portal refuses a larger
	// file before sending it. The gateway passes it through.
	MaxUploadHeader = "X-Max-Upload-Size"
)

// The Allow header of the WebDAV surface: AllowRead on a read-only view
// (and for a read method's refusal there), AllowWrite where clients may
// write. The gateway answers OPTIONS and 405 with them itself; the sidecar
// with AllowRead on its read-only view.
const (
	AllowRead  = "OPTIONS, GET, HEAD, PROPFIND"
	AllowWrite = AllowRead + ", PUT, DELETE, MKCOL, COPY, MOVE, PROPPATCH, LOCK, UNLOCK"
)

// Allow is the Allow header of a view: AllowWrite when it is writable,
// else AllowRead.
func Allow(writable bool) string {
	if writable {
		return AllowWrite
	}
	return AllowRead
}

var prefixRE = regexp.MustCompile(`^/dav/[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidPrefix reports whether p is a prefix the sidecar accepts: "/dav/"
// and one agent ID of safe characters (nothing that needs escaping in a URL
// or in XML), no trailing slash.
func ValidPrefix(p string) bool { return prefixRE.MatchString(p) }

// Methods are the methods of the WebDAV surface, true for those that write
// (POST, which x/net/webdav serves like GET, included: the gateway's view
// refuses it, the sidecar checks it as a write). Metrics label any other
// method "OTHER" (label cardinality stays bounded).
var Methods = map[string]bool{
	http.MethodOptions: false, http.MethodGet: false, http.MethodHead: false, "PROPFIND": false,
	http.MethodPut: true, http.MethodDelete: true, "MKCOL": true, "COPY": true,
	"MOVE": true, "PROPPATCH": true, "LOCK": true, "UNLOCK": true, http.MethodPost: true,
}

// Register registers c, or returns the identical collector already
// registered (a second handler on the same registry shares the series).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}
