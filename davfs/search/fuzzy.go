package search

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name search (quick open): a path is a candidate when the folded query is
// a subsequence of it; candidates are ranked by fuzzyScore and only the
// best MaxResults are kept while walking (memory stays bounded however
// large the tree).

// fuzzyScore scores the folded query q against path p: higher is better,
// ok false when q is not a subsequence of p. The query is first tried
// inside the last segment (a hit there is worth much more), then over the
// whole path. Each matched rune scores; runs of consecutive runes and
// runes at a word start (after / _ - . or space, or a lower-to-upper
// change) score more; long paths score a little less.
func fuzzyScore(q, p string) (int, bool) {
	base := strings.LastIndexByte(p, '/') + 1
	if sc, ok := subseq(q, p[base:]); ok {
		sc += 100
		lb := strings.ToLower(p[base:])
		if strings.HasPrefix(lb, q) {
			sc += 50
		}
		if stem, _, _ := strings.Cut(lb, "."); stem == q || lb == q {
			sc += 50
		}
		return sc - len(p)/8, true
	}
	sc, ok := subseq(q, p)
	return sc - len(p)/8, ok
}

// subseq matches q's runes in s from left to right (folding case).
func subseq(q, s string) (int, bool) {
	score, prevMatch := 0, false
	var prev rune = '/'
	qi := 0
	for _, r := range s {
		if qi >= len(q) {
			break
		}
		qr, n := utf8.DecodeRuneInString(q[qi:])
		if unicode.ToLower(r) == qr {
			score++
			if prevMatch {
				score += 5
			}
			if strings.ContainsRune("/_-. ", prev) || (unicode.IsLower(prev) && unicode.IsUpper(r)) {
				score += 8
			}
			qi += n
			prevMatch = true
		} else {
			prevMatch = false
		}
		prev = r
	}
	return score, qi >= len(q)
}

// name records the file rel as a candidate of a name search.
func (r *run) name(rel string) {
	r.files.Add(1)
	sc, ok := fuzzyScore(r.m.name, rel)
	if !ok {
		return
	}
	r.names = append(r.names, Result{Path: rel, Score: sc})
	if len(r.names) >= 2*r.o.MaxResults {
		r.rank()
		r.names = r.names[:r.o.MaxResults]
		r.namesCut = true
	}
}

func (r *run) rank() {
	slices.SortFunc(r.names, func(a, b Result) int {
		if a.Score != b.Score {
			return b.Score - a.Score
		}
		if len(a.Path) != len(b.Path) {
			return len(a.Path) - len(b.Path)
		}
		return strings.Compare(a.Path, b.Path)
	})
}

// emitNames emits the best candidates, best first.
func (r *run) emitNames(s *Summary) error {
	r.rank()
	if len(r.names) > r.o.MaxResults {
		r.names, r.namesCut = r.names[:r.o.MaxResults], true
	}
	if r.namesCut && s.Truncated == "" {
		s.Truncated = BoundResults
	}
	for _, res := range r.names {
		res.Preview = res.Path
		if err := r.emit(res); err != nil {
			return err
		}
		r.results.Add(1)
	}
	return nil
}
