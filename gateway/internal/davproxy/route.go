package davproxy

import (
	"errors"
	"net/url"
	"strings"
)

// Where a request path points.
type routeKind int

const (
	routeOutside   routeKind = iota // not under /dav
	routeRoot                       // /dav or /dav/
	routeAgent                      // /dav/{agent} or /dav/{agent}/
	routeWorkspace                  // /dav/{agent}/projects[/...] or /dav/{agent}/global[/...]
	routeUnknown                    // /dav/{agent}/anything-else
)

const (
	scopeProject = "PROJECT"
	scopeGlobal  = "GLOBAL"
)

// route is a parsed /dav path.
type route struct {
	kind     routeKind
	agentID  string // unescaped
	agentEsc string // as it should appear in client-visible paths
	// rest is the sidecar path ("/projects/x/a b"), unescaped; restEsc its
	// escaped form, taken from the client's request so encoding survives.
	rest, restEsc string
	scope         string // scopeProject / scopeGlobal for routeWorkspace
	project       string // first segment under /projects, may be ""
	relPath       string // path inside the workspace root, no leading slash
}

var errBadPath = errors.New("bad path")

// maxAgentIDLen bounds the agent ID taken from a path (it ends up in
// messages, logs and audit records).
const maxAgentIDLen = 128

// parseRoute splits an escaped request path. It refuses "." and ".."
// segments and empty inner segments: the sidecar would clean them and could
// land in another workspace than the one checked and audited here.
func parseRoute(escaped string) (route, error) {
	var rt route
	if escaped != "/dav" && !strings.HasPrefix(escaped, "/dav/") {
		return route{kind: routeOutside}, nil
	}
	after := strings.TrimPrefix(strings.TrimPrefix(escaped, "/dav"), "/")
	if after == "" {
		return route{kind: routeRoot}, nil
	}
	agentEsc, restEsc, _ := strings.Cut(after, "/")
	agentID, err := url.PathUnescape(agentEsc)
	if err != nil || agentID == "" || len(agentID) > maxAgentIDLen || strings.ContainsAny(agentID, "/\x00") {
		return rt, errBadPath
	}
	rt.agentID = agentID
	rt.agentEsc = url.PathEscape(agentID)
	if restEsc == "" {
		rt.kind = routeAgent
		return rt, nil
	}
	rt.restEsc = "/" + restEsc
	rest, err := url.PathUnescape(rt.restEsc)
	if err != nil || strings.ContainsRune(rest, 0) {
		return rt, errBadPath
	}
	rt.rest = rest
	segs := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	for i, s := range segs {
		if s == "." || s == ".." || (s == "" && i != len(segs)-1) {
			return rt, errBadPath
		}
	}
	switch segs[0] {
	case "projects":
		rt.kind, rt.scope = routeWorkspace, scopeProject
		if len(segs) > 1 {
			rt.project = segs[1]
		}
		if len(segs) > 2 {
			rt.relPath = strings.Join(segs[2:], "/")
		}
	case "global":
		rt.kind, rt.scope = routeWorkspace, scopeGlobal
		rt.relPath = strings.Join(segs[1:], "/")
	default:
		rt.kind = routeUnknown
	}
	rt.relPath = strings.TrimSuffix(rt.relPath, "/")
	return rt, nil
}

// sameWorkspace reports whether two workspace routes are in one agent's one
// workspace (the same project, or both global).
func sameWorkspace(a, b route) bool {
	if a.kind != routeWorkspace || b.kind != routeWorkspace || a.agentID != b.agentID || a.scope != b.scope {
		return false
	}
	return a.scope == scopeGlobal || a.project == b.project
}

// auditPath is relPath as the audit log may show it: GLOBAL paths outside
// skills/ and AGENTS.md are redacted (they name CODEX_HOME files).
func (rt route) auditPath() string {
	if rt.scope != scopeGlobal || rt.relPath == "" {
		return rt.relPath
	}
	if rt.relPath == "AGENTS.md" || rt.relPath == "skills" || strings.HasPrefix(rt.relPath, "skills/") {
		return rt.relPath
	}
	return Redacted
}

// clientPath maps a sidecar path (escaped, "/projects/...") to the path the
// client sees ("/dav/{agent}/projects/...").
func (rt route) clientPath(sidecarEsc string) string {
	if !strings.HasPrefix(sidecarEsc, "/") {
		sidecarEsc = "/" + sidecarEsc
	}
	return "/dav/" + rt.agentEsc + sidecarEsc
}
