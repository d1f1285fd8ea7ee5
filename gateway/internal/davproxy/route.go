package davproxy

import (
	"net/url"
	"strings"
	"unicode/utf8"
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
	kind    routeKind
	agentID string // unescaped
	// rest is the path below the agent ("/projects/x/a b"), unescaped.
	rest    string
	scope   string // scopeProject / scopeGlobal for routeWorkspace
	project string // first segment under /projects, may be ""
	relPath string // path inside the workspace root, no leading slash
}

// maxAgentIDLen bounds the agent ID taken from a path (it ends up in
// messages, logs and audit records).
const maxAgentIDLen = 128

// pathError says why a path was refused; its text is safe for the client.
type pathError struct{ why string }

func (e *pathError) Error() string { return "invalid WebDAV path: " + e.why }

var (
	errDotSegment   = &pathError{"dot segment (. or ..)"}
	errEmptySegment = &pathError{"empty segment (//)"}
	errEncodedSep   = &pathError{"encoded separator (%2F or %5C) in a segment"}
	errBadEscape    = &pathError{"invalid percent-encoding"}
	errBadUTF8      = &pathError{"not valid UTF-8"}
	errControl      = &pathError{"control character"}
	errAgentID      = &pathError{"invalid agent ID"}
)

// parseRoute splits an escaped request path (or Destination path). It
// refuses, never normalises: dot segments (also percent-encoded), empty
// inner segments, an encoded / or \ inside a segment, bad escapes, invalid
// UTF-8 and control characters. Whatever the gateway checks and audits is
// then exactly what the sidecar acts on (the sidecar refuses them too).
func parseRoute(escaped string) (route, error) {
	if escaped != "/dav" && !strings.HasPrefix(escaped, "/dav/") {
		return route{kind: routeOutside}, nil
	}
	raw := strings.Split(strings.TrimPrefix(escaped, "/dav/"), "/")
	if escaped == "/dav" {
		raw = nil
	}
	segs := make([]string, 0, len(raw))
	for i, r := range raw {
		last := i == len(raw)-1
		if r == "" {
			if !last {
				return route{}, errEmptySegment
			}
			continue // one trailing slash: a collection
		}
		if l := strings.ToLower(r); strings.Contains(l, "%2f") || strings.Contains(l, "%5c") {
			return route{}, errEncodedSep
		}
		s, err := url.PathUnescape(r)
		switch {
		case err != nil:
			return route{}, errBadEscape
		case !utf8.ValidString(s):
			return route{}, errBadUTF8
		case s == "." || s == "..":
			return route{}, errDotSegment
		case strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f }):
			return route{}, errControl
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return route{kind: routeRoot}, nil
	}
	rt := route{agentID: segs[0]}
	if len(rt.agentID) > maxAgentIDLen || strings.Contains(rt.agentID, "\\") {
		return route{}, errAgentID
	}
	segs = segs[1:]
	if len(segs) == 0 {
		rt.kind = routeAgent
		return rt, nil
	}
	rt.rest = "/" + strings.Join(segs, "/")
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
