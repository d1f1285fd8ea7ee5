package davproxy

import (
	"github.com/agentworkspace/files/internal/davwire"
)

// route is a parsed /dav path (davwire's grammar, which the sidecar checks
// too).
type route = davwire.Route

const (
	routeOutside   = davwire.Outside
	routeRoot      = davwire.Root
	routeAgent     = davwire.Agent
	routeWorkspace = davwire.Workspace
	routeUnknown   = davwire.Unknown

	scopeProject = davwire.ScopeProject
	scopeGlobal  = davwire.ScopeGlobal
)

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
// UTF-8, control characters and an unsafe agent ID. Whatever the gateway
// checks and audits is then exactly what the sidecar acts on (the sidecar
// refuses them too). Of several faults in one segment it names the first of
// this list.
func parseRoute(escaped string) (route, error) {
	rt, f := davwire.ParseRoute(escaped)
	switch {
	case f == 0:
		return rt, nil
	case f&davwire.FaultEmpty != 0:
		return route{}, errEmptySegment
	case f&davwire.FaultEncodedSep != 0:
		return route{}, errEncodedSep
	case f&davwire.FaultEscape != 0:
		return route{}, errBadEscape
	case f&davwire.FaultUTF8 != 0:
		return route{}, errBadUTF8
	case f&davwire.FaultDot != 0:
		return route{}, errDotSegment
	case f&davwire.FaultControl != 0:
		return route{}, errControl
	default:
		return route{}, errAgentID
	}
}

// sameWorkspace reports whether two workspace routes are in one agent's one
// workspace (the same project, or both global).
func sameWorkspace(a, b route) bool { return davwire.SameWorkspace(a, b) }
