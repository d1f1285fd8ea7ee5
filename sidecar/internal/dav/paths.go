package dav

import (
	"strings"

	"github.com/agentworkspace/files/internal/davwire"
)

// pathFaults are the faults of davwire's grammar the sidecar refuses: the
// gateway's (davwire.RouteFaults) and a literal backslash in any segment.
const pathFaults = davwire.RouteFaults | davwire.FaultBackslash

// checkPath reports why an escaped URL path may not reach the library, or
// "" when it may. It never cleans: a path is accepted exactly as sent or
// refused, so what is logged and audited is what is acted on. Refused: no
// leading "/", an empty segment ("//"; one trailing "/" is allowed), "."
// or "..", an encoded "/" or "\" or a "\" inside a segment, NUL or another
// control character, a malformed escape, invalid UTF-8 (of several faults
// in one segment, the first of this order is named).
func checkPath(escaped string) string {
	if escaped == "" || escaped[0] != '/' {
		return "the path must start with /"
	}
	f := davwire.Check(escaped, pathFaults)
	switch {
	case f == 0:
		return ""
	case f&davwire.FaultEmpty != 0:
		return "the path must not contain empty segments"
	case f&davwire.FaultEscape != 0:
		return "the path holds a malformed escape"
	case f&davwire.FaultDot != 0:
		return "the path must not contain . or .. segments"
	case f&(davwire.FaultEncodedSep|davwire.FaultBackslash) != 0:
		return "a path segment must not contain an encoded separator"
	case f&davwire.FaultUTF8 != 0:
		return "the path must be valid UTF-8"
	default:
		return "the path must not contain control characters"
	}
}

// underPrefix strips prefix from an escaped path: ok is false when the path
// is not the prefix or below it.
func underPrefix(escaped, prefix string) (rest string, ok bool) {
	if prefix == "" {
		return escaped, true
	}
	if escaped == prefix {
		return "/", true
	}
	if strings.HasPrefix(escaped, prefix+"/") {
		return escaped[len(prefix):], true
	}
	return "", false
}

// ifResourceTags returns the resource tags (the <URL>s outside parentheses)
// of an If header, so their paths are checked like the request's. ok is
// false when the header is unbalanced; x/net parses it again and answers
// 400 for anything else malformed.
func ifResourceTags(h string) (tags []string, ok bool) {
	depth := 0
	for i := 0; i < len(h); i++ {
		switch h[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, false
			}
		case '<':
			end := strings.IndexByte(h[i:], '>')
			if end < 0 {
				return nil, false
			}
			if depth == 0 {
				tags = append(tags, h[i+1:i+end])
			}
			i += end
		}
	}
	return tags, depth == 0
}

// unquoteETag returns the value of a strong entity tag ("abc" → abc); ok is
// false for a weak or malformed one.
func unquoteETag(t string) (string, bool) {
	t = strings.TrimSpace(t)
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return "", false
	}
	return t[1 : len(t)-1], true
}

// splitList splits a comma-separated header list.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
