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
	if encodedSep(raw) {
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

// encodedSep reports whether raw holds %2F or %5C, in either case.
func encodedSep(raw string) bool {
	for i := 0; i+2 < len(raw); i++ {
		if raw[i] != '%' {
			continue
		}
		switch h, l := raw[i+1], raw[i+2]|0x20; { // |0x20: lower case of a letter
		case h == '2' && l == 'f', h == '5' && l == 'c':
			return true
		}
	}
	return false
}

// Split splits escaped ("" or starting with "/") into its decoded segments;
// one trailing slash is allowed and dropped. It stops at the first segment
// with a fault in refuse and returns that segment's faults (every one, for
// the caller to name in its order); f is 0 when the path passed.
func Split(escaped string, refuse Fault) (segs []string, f Fault) {
	if escaped == "" {
		return nil, 0
	}
	segs = make([]string, 0, strings.Count(escaped, "/"))
	if f = walk(escaped, refuse, func(s string) { segs = append(segs, s) }); f != 0 {
		return nil, f
	}
	return segs, 0
}

// Check is Split without the segments: the faults of the first segment
// with a fault in refuse, 0 when the path passed. It allocates nothing
// for a path without escapes.
func Check(escaped string, refuse Fault) Fault {
	return walk(escaped, refuse, nil)
}

// walk is Split's loop: it hands each decoded segment to seg (nil: none).
func walk(escaped string, refuse Fault, seg func(string)) Fault {
	if escaped == "" {
		return 0
	}
	rest, more := escaped[1:], true
	for more {
		var r string
		r, rest, more = strings.Cut(rest, "/")
		if r == "" {
			if !more {
				break // one trailing slash: a collection
			}
			if refuse&FaultEmpty != 0 {
				return FaultEmpty
			}
			continue
		}
		s, sf := Segment(r)
		if sf&refuse != 0 {
			return sf
		}
		if seg != nil {
			seg(s)
		}
	}
	return 0
}
