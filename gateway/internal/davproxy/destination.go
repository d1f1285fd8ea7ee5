package davproxy

import (
	"net/http"
	"net/url"
	"strings"
)

// checkDestination is the gateway's policy on the Destination of a COPY or
// MOVE. It never changes the header: the sidecar gets it as the client sent
// it (paths are the same on both sides of the wire) and refuses unsafe
// paths itself too.
//
// Refusals (RFC 4918 §9.8.5, §9.9.4):
//   - another host (an absolute URI whose authority is not this request's
//     Host): 502 Bad Gateway, the status RFC 4918 gives for a destination on
//     another server;
//   - this host, but outside the source's workspace (another agent, global
//     vs project, another project, or not a workspace path at all): 403
//     Forbidden. Workspaces are isolation boundaries; the client may GET and
//     PUT instead where it is allowed to.
//   - missing, unparseable or an unsafe path (see parseRoute): 400.
func (h *handler) checkDestination(w *recorder, r *http.Request, src route) (route, bool) {
	raw := strings.TrimSpace(r.Header.Get("Destination"))
	if raw == "" {
		h.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "a Destination header is required")
		return route{}, false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil {
		h.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "invalid Destination header")
		return route{}, false
	}
	if (u.Scheme != "" || u.Host != "") && !strings.EqualFold(u.Host, r.Host) {
		h.refuse(w, http.StatusBadGateway, "FORBIDDEN", "the Destination is on another server")
		return route{}, false
	}
	dst, err := parseRoute(u.EscapedPath())
	if err != nil {
		h.refuse(w, http.StatusBadRequest, "INVALID_PATH", "Destination: "+err.Error())
		return route{}, false
	}
	switch {
	case dst.Kind == routeWorkspace && dst.Agent != src.Agent:
		h.refuse(w, http.StatusForbidden, "FORBIDDEN", "the Destination is in another agent's workspace")
		return route{}, false
	case !sameWorkspace(src, dst) || (dst.Scope == scopeProject && (dst.Project == "" || dst.RelPath == "")):
		h.refuse(w, http.StatusForbidden, "FORBIDDEN", "the Destination must be in the same workspace as the source")
		return route{}, false
	}
	return dst, true
}
