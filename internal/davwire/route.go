package davwire

import "strings"

// Kind is where a gateway request path points.
type Kind uint8

const (
	Outside   Kind = iota // not under /dav
	Root                  // /dav or /dav/
	Agent                 // /dav/{agent} or /dav/{agent}/
	Workspace             // /dav/{agent}/projects[/...] or /dav/{agent}/global[/...]
	Unknown               // /dav/{agent}/anything-else
)

// The scopes of a Workspace route (the audit record's and the API's names).
const (
	ScopeProject = "PROJECT"
	ScopeGlobal  = "GLOBAL"
)

// RouteFaults are the faults ParseRoute refuses (a literal backslash only
// in the agent ID, as FaultAgentID).
const RouteFaults = FaultEmpty | FaultEscape | FaultEncodedSep | FaultDot | FaultUTF8 | FaultControl

// Route is a parsed /dav path; every part is decoded.
type Route struct {
	Kind  Kind
	Agent string
	// Rest is the path below the agent ("/projects/x/a b").
	Rest    string
	Scope   string // ScopeProject or ScopeGlobal for Workspace
	Project string // first segment under /projects, may be ""
	RelPath string // path inside the workspace root, no leading slash
}

// ParseRoute splits an escaped gateway request path (or Destination path)
// into agent, scope, project and the rest, refusing what RouteFaults names
// and an unsafe agent ID; f is 0 when it passed.
func ParseRoute(escaped string) (Route, Fault) {
	if escaped != "/dav" && !strings.HasPrefix(escaped, "/dav/") {
		return Route{Kind: Outside}, 0
	}
	segs, f := Split(strings.TrimPrefix(escaped, "/dav"), RouteFaults)
	if f != 0 {
		return Route{}, f
	}
	if len(segs) == 0 {
		return Route{Kind: Root}, 0
	}
	rt := Route{Agent: segs[0]}
	if len(rt.Agent) > MaxAgentIDLen || strings.Contains(rt.Agent, `\`) {
		return Route{}, FaultAgentID
	}
	segs = segs[1:]
	if len(segs) == 0 {
		rt.Kind = Agent
		return rt, 0
	}
	rt.Rest = "/" + strings.Join(segs, "/")
	switch segs[0] {
	case "projects":
		rt.Kind, rt.Scope = Workspace, ScopeProject
		if len(segs) > 1 {
			rt.Project = segs[1]
		}
		if len(segs) > 2 {
			rt.RelPath = strings.Join(segs[2:], "/")
		}
	case "global":
		rt.Kind, rt.Scope = Workspace, ScopeGlobal
		rt.RelPath = strings.Join(segs[1:], "/")
	default:
		rt.Kind = Unknown
	}
	return rt, 0
}

// SameWorkspace reports whether two Workspace routes are in one agent's one
// workspace (the same project, or both global).
func SameWorkspace(a, b Route) bool {
	if a.Kind != Workspace || b.Kind != Workspace || a.Agent != b.Agent || a.Scope != b.Scope {
		return false
	}
	return a.Scope == ScopeGlobal || a.Project == b.Project
}
