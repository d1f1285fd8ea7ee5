package davproxy

import (
	"net/http"
	"net/url"
	"strings"
)

// checkDestination vets the Destination of a COPY or MOVE and stores the
// sidecar form of it in the request state.
//
// Refusals (RFC 4918 §9.8.5, §9.9.4):
//   - another host (an absolute URI whose authority is not this request's
//     Host): 502 Bad Gateway, the status RFC 4918 gives for a destination on
//     another server;
//   - this host, but outside the source's workspace (another agent, global
//     vs project, another project, or not a workspace path at all): 403
//     Forbidden. Workspaces are isolation boundaries; the client may GET and
//     PUT instead where it is allowed to.
//   - missing or unparseable: 400.
func (h *handler) checkDestination(w *recorder, r *http.Request, src route) (route, bool) {
	st := stateOf(r.Context())
	raw := strings.TrimSpace(r.Header.Get("Destination"))
	if raw == "" {
		h.refuse(w, http.StatusBadRequest, "bad_destination", "a Destination header is required")
		return route{}, false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		h.refuse(w, http.StatusBadRequest, "bad_destination", "invalid Destination header")
		return route{}, false
	}
	if u.Host != "" && !strings.EqualFold(u.Host, r.Host) {
		h.refuse(w, http.StatusBadGateway, "destination_refused", "the Destination is on another server")
		return route{}, false
	}
	dst, err := parseRoute(u.EscapedPath())
	if err != nil {
		h.refuse(w, http.StatusBadRequest, "bad_destination", "invalid Destination path")
		return route{}, false
	}
	switch {
	case dst.kind != routeWorkspace:
		h.refuse(w, http.StatusForbidden, "destination_refused", "the Destination must be in the same workspace as the source")
		return route{}, false
	case dst.agentID != src.agentID:
		h.refuse(w, http.StatusForbidden, "destination_refused", "the Destination is in another agent's workspace")
		return route{}, false
	case !sameWorkspace(src, dst) || (dst.scope == scopeProject && (dst.project == "" || dst.relPath == "")):
		h.refuse(w, http.StatusForbidden, "destination_refused", "the Destination must be in the same workspace as the source")
		return route{}, false
	}
	st.destination = sidecarURL(st.target, dst.restEsc).EscapedPath()
	return dst, true
}
