package davhandler

import (
	"errors"
	"net/url"
	"strings"
)

// ifCondition is one condition of an If: header list (RFC 4918 §10.4).
type ifCondition struct {
	not   bool
	token string // state token (Coded-URL content), or ""
	etag  string // entity tag as sent (quotes kept), or ""
}

// ifList is one parenthesised list, optionally tagged with a resource.
type ifList struct {
	resource string // URL path of the tagged resource, "" = request URI
	conds    []ifCondition
}

var errBadIf = errors.New("davhandler: malformed If header")

// parseIf parses an If: header value. x/net/webdav parses the same grammar
// but its lock system ignores entity tags and Not; evaluation is ours.
func parseIf(s string) ([]ifList, error) {
	var lists []ifList
	var tag string
	tagged := false
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errBadIf
	}
	for len(s) > 0 {
		switch s[0] {
		case ' ', '\t', '\r', '\n':
			s = s[1:]
		case '<':
			end := strings.IndexByte(s, '>')
			if end < 0 {
				return nil, errBadIf
			}
			u, err := url.Parse(s[1:end])
			if err != nil {
				return nil, errBadIf
			}
			tag, tagged = u.Path, true
			if tag == "" {
				tag = "/"
			}
			s = s[end+1:]
		case '(':
			end := strings.IndexByte(s, ')')
			if end < 0 {
				return nil, errBadIf
			}
			conds, err := parseConds(s[1:end])
			if err != nil {
				return nil, err
			}
			l := ifList{conds: conds}
			if tagged {
				l.resource = tag
			}
			lists = append(lists, l)
			s = s[end+1:]
		default:
			return nil, errBadIf
		}
	}
	if len(lists) == 0 {
		return nil, errBadIf
	}
	return lists, nil
}

func parseConds(s string) ([]ifCondition, error) {
	var out []ifCondition
	not := false
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			break
		}
		switch {
		case len(s) >= 3 && strings.EqualFold(s[:3], "not"):
			if not {
				return nil, errBadIf
			}
			not = true
			s = s[3:]
			continue
		case s[0] == '<':
			end := strings.IndexByte(s, '>')
			if end < 0 {
				return nil, errBadIf
			}
			out = append(out, ifCondition{not: not, token: s[1:end]})
			s = s[end+1:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, errBadIf
			}
			out = append(out, ifCondition{not: not, etag: strings.TrimSpace(s[1:end])})
			s = s[end+1:]
		default:
			return nil, errBadIf
		}
		not = false
	}
	if len(out) == 0 || not {
		return nil, errBadIf
	}
	return out, nil
}

// tokens returns every state token in the header: RFC 4918 §10.4.1 counts a
// lock token as submitted when it appears in the header at all.
func ifTokens(lists []ifList) map[string]bool {
	m := make(map[string]bool)
	for _, l := range lists {
		for _, c := range l.conds {
			if c.token != "" && !c.not {
				m[c.token] = true
			}
		}
	}
	return m
}
