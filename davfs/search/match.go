package search

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// matcher finds the first match in a run of lines: a case-sensitive
// literal by bytes.Index (the common case, and the fast one), anything
// else by Go's RE2 regexp in multi-line mode (^ and $ at line ends).
type matcher struct {
	lit []byte
	// rare is the index in lit of its least common byte (by commonRank):
	// the byte memchr looks for, as ripgrep's literal search does.
	rare int
	re   *regexp.Regexp
	// name is the folded query of a name search.
	name string
}

func newMatcher(o Options) (*matcher, error) {
	q := o.Query
	switch {
	case q == "":
		return nil, invalid("query is empty")
	case len(q) > MaxQuery:
		return nil, invalid("query is longer than 1000 bytes")
	case !utf8.ValidString(q):
		return nil, invalid("query is not valid UTF-8")
	}
	if o.Mode == ModeName {
		return &matcher{name: strings.ToLower(q)}, nil
	}
	if !o.Regex && o.CaseSensitive {
		return &matcher{lit: []byte(q), rare: rarest([]byte(q))}, nil
	}
	expr := q
	if !o.Regex {
		expr = regexp.QuoteMeta(q)
	}
	flags := "(?m)"
	if !o.CaseSensitive {
		flags = "(?mi)"
	}
	re, err := regexp.Compile(flags + expr)
	if err != nil {
		return nil, invalid("query is not a valid RE2 regular expression: " + reError(err))
	}
	return &matcher{re: re}, nil
}

// reError is regexp's message without its "error parsing regexp: " lead,
// cut short (it quotes the query).
func reError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
	if len(msg) > 200 {
		msg = strings.ToValidUTF8(msg[:200], "") + "..."
	}
	return msg
}

// find is the first match's [start, end) in b, (-1, -1) if none.
func (m *matcher) find(b []byte) (int, int) {
	if m.lit != nil {
		i := m.index(b)
		if i < 0 {
			return -1, -1
		}
		return i, i + len(m.lit)
	}
	loc := m.re.FindIndex(b)
	if loc == nil {
		return -1, -1
	}
	return loc[0], loc[1]
}

// index is bytes.Index(b, m.lit), looking for the literal's rarest byte
// first: in text, a common first byte (a letter) stops memchr on nearly
// every line, a rare one almost never.
func (m *matcher) index(b []byte) int {
	if m.rare == 0 {
		return bytes.Index(b, m.lit)
	}
	c, off, n := m.lit[m.rare], m.rare, len(m.lit)
	for pos := off; pos < len(b); {
		i := bytes.IndexByte(b[pos:], c)
		if i < 0 {
			return -1
		}
		start := pos + i - off
		if start+n <= len(b) && bytes.Equal(b[start:start+n], m.lit) {
			return start
		}
		pos += i + 1
	}
	return -1
}

// commonBytes are the bytes of source code and prose, most common first
// (a rough ranking; any byte not listed counts as rare).
const commonBytes = " etaoinsrhldcum\nfpgwybv,.k_()=;:/-\"'{}\tEATSIORNLCDMPxjqz0123456789"

// rarest is the index of lit's least common byte (the first among equals).
func rarest(lit []byte) int {
	best, rank := 0, -1
	for i, c := range lit {
		r := strings.IndexByte(commonBytes, c)
		if r < 0 {
			r = len(commonBytes)
		}
		if r > rank {
			best, rank = i, r
		}
	}
	return best
}

// preview cuts line (without its newline) to at most max bytes around the
// match [s, e), on rune boundaries, and makes each part valid UTF-8 (an
// invalid byte becomes U+FFFD), returning the match's offsets in it.
func preview(line []byte, s, e, max int) (string, int, int) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	e = min(e, len(line))
	s = min(s, e)
	start, end := 0, len(line)
	if len(line) > max {
		start = max0(s - (max-min(e-s, max))/2)
		end = min(len(line), start+max)
		e = min(e, end)
	}
	for start < s && !utf8.RuneStart(line[start]) {
		start++
	}
	for end < len(line) && end > e && !utf8.RuneStart(line[end]) {
		end--
	}
	a := strings.ToValidUTF8(string(line[start:s]), "\uFFFD")
	m := strings.ToValidUTF8(string(line[s:e]), "\uFFFD")
	z := strings.ToValidUTF8(string(line[e:end]), "\uFFFD")
	return a + m + z, len(a), len(a) + len(m)
}

func max0(v int) int { return max(v, 0) }

// globs are the include and exclude patterns (doublestar syntax); a
// pattern without "/" is matched against the last segment alone.
type globs struct{ include, exclude []string }

func newGlobs(include, exclude []string) (globs, error) {
	for _, set := range [][]string{include, exclude} {
		if len(set) > MaxGlobs {
			return globs{}, invalid("more than 32 include or exclude globs")
		}
		for _, p := range set {
			if p == "" || len(p) > 256 || !utf8.ValidString(p) || !doublestar.ValidatePattern(p) {
				return globs{}, invalid("not a valid glob: " + strings.ToValidUTF8(p[:min(len(p), 64)], "?"))
			}
		}
	}
	return globs{include: include, exclude: exclude}, nil
}

func globMatch(pat, rel string) bool {
	name := rel
	if !strings.Contains(pat, "/") {
		name = rel[strings.LastIndexByte(rel, '/')+1:]
	}
	ok, _ := doublestar.Match(pat, name)
	return ok
}

func anyMatch(pats []string, rel string) bool {
	for _, p := range pats {
		if globMatch(p, rel) {
			return true
		}
	}
	return false
}

// keep reports whether the file rel is searched.
func (g globs) keep(rel string) bool {
	return !anyMatch(g.exclude, rel) && (len(g.include) == 0 || anyMatch(g.include, rel))
}

// prune reports whether the directory rel is excluded (with all below it).
func (g globs) prune(rel string) bool { return anyMatch(g.exclude, rel) }
