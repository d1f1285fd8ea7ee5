package davwire

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// Fault is what is wrong with one segment of an escaped WebDAV path. A path
// is refused, never normalised, so what is checked and audited is exactly
// what is acted on; the gateway and the sidecar each check every path with
// this grammar and each name a fault in their own words.
type Fault uint16

const (
	FaultEmpty      Fault = 1 << iota // an empty segment other than one trailing slash
	FaultEscape                       // a malformed percent-escape
	FaultEncodedSep                   // an encoded separator, %2F or %5C (either case)
	FaultBackslash                    // a literal backslash
	FaultDot                          // "." or "..", also percent-encoded (decoded)
	FaultUTF8                         // not valid UTF-8 once decoded
	FaultControl                      // a control character once decoded
	FaultAgentID                      // an agent ID too long or holding a backslash (ParseRoute)
)

// MaxAgentIDLen bounds the agent ID ParseRoute takes from a path (it ends
// up in messages, logs and audit records).
const MaxAgentIDLen = 128

// Segment decodes one non-empty escaped segment and returns all its faults.
// FaultDot, FaultUTF8 and FaultControl are only looked for when the escape
// is well formed.
func Segment(raw string) (string, Fault) {
	var f Fault
	if l := strings.ToLower(raw); strings.Contains(l, "%2f") || strings.Contains(l, "%5c") {
		f |= FaultEncodedSep
	}
	if strings.Contains(raw, `\`) {
		f |= FaultBackslash
	}
	s, err := url.PathUnescape(raw)
	if err != nil {
		return "", f | FaultEscape
	}
	if s == "." || s == ".." {
		f |= FaultDot
	}
	if !utf8.ValidString(s) {
		f |= FaultUTF8
	}
	if strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		f |= FaultControl
	}
	return s, f
}

// Split splits escaped ("" or starting with "/") into its decoded segments;
// one trailing slash is allowed and dropped. It stops at the first segment
// with a fault in refuse and returns that segment's faults (every one, for
// the caller to name in its order); f is 0 when the path passed.
func Split(escaped string, refuse Fault) (segs []string, f Fault) {
	if escaped == "" {
		return nil, 0
	}
	raw := strings.Split(escaped[1:], "/")
	segs = make([]string, 0, len(raw))
	for i, r := range raw {
		if r == "" {
			if i == len(raw)-1 {
				break // one trailing slash: a collection
			}
			if refuse&FaultEmpty != 0 {
				return nil, FaultEmpty
			}
			continue
		}
		s, sf := Segment(r)
		if sf&refuse != 0 {
			return nil, sf
		}
		segs = append(segs, s)
	}
	return segs, 0
}
