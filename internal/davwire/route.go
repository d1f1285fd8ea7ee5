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
	pl := Locate(segs)
	rt.Kind, rt.Scope, rt.Project, rt.RelPath = Workspace, pl.Scope, pl.Project, pl.RelPath
	if pl.Scope == "" {
		rt.Kind = Unknown
	}
	return rt, 0
}

// Place is where a name below an agent points: the scope and project of
// its workspace and the path inside it. Scope is "" for "/" and for names
// outside both namespaces.
type Place struct {
	Scope   string // ScopeProject or ScopeGlobal
	Project string // first segment under /projects, "" for /projects itself
	RelPath string // path inside the workspace root, no leading slash
}

// Locate maps the decoded segments of a name below an agent ("projects",
// "p", "a") to its Place: the one grammar of /projects/{project}/{path}
// and /global/{path}. It checks nothing; callers refuse faults first.
func Locate(segs []string) Place {
	if len(segs) == 0 {
		return Place{}
	}
	switch segs[0] {
	case "projects":
		pl := Place{Scope: ScopeProject}
		if len(segs) > 1 {
			pl.Project = segs[1]
		}
		if len(segs) > 2 {
			pl.RelPath = strings.Join(segs[2:], "/")
		}
		return pl
	case "global":
		return Place{Scope: ScopeGlobal, RelPath: strings.Join(segs[1:], "/")}
	}
	return Place{}
}

// Workspace is the name of pl's workspace below the agent:
// "/projects/{project}" or "/global"; "" for the levels above and names
// outside both namespaces ("/projects" itself included).
func (pl Place) Workspace() string {
	switch {
	case pl.Scope == ScopeGlobal:
		return "/global"
	case pl.Scope == ScopeProject && pl.Project != "":
		return "/projects/" + pl.Project
	}
	return ""
}

// SameWorkspace reports whether two Workspace routes are in one agent's one
// workspace (the same project, or both global).
func SameWorkspace(a, b Route) bool {
	if a.Kind != Workspace || b.Kind != Workspace || a.Agent != b.Agent || a.Scope != b.Scope {
		return false
	}
	return a.Scope == ScopeGlobal || a.Project == b.Project
}
