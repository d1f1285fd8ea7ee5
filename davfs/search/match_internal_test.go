package search

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// The rare-byte literal search finds exactly what bytes.Index finds.
func TestLiteralIndexMatchesBytesIndex(t *testing.T) {
	hay := []string{"", "a", "needle", "xx needle", "needl", "eedle needle", "ne\nedle needle\n", "zzzq_qq_q_", strings.Repeat("ab", 100) + "q_x"}
	needles := []string{"needle", "q_", "_x", "a", "e", "ab", "le n", "q_x"}
	for _, n := range needles {
		m := &matcher{lit: []byte(n), rare: rarest([]byte(n))}
		for _, h := range hay {
			if got, want := m.index([]byte(h)), bytes.Index([]byte(h), []byte(n)); got != want {
				t.Errorf("index(%q, %q) = %d, want %d", h, n, got, want)
			}
		}
	}
}

func TestPreview(t *testing.T) {
	cases := []struct {
		name       string
		line       string
		s, e, max  int
		want       string
		matchStart int
	}{
		{"short", "a TODO b", 2, 6, 200, "a TODO b", 2},
		{"carriage return", "TODO\r", 0, 4, 200, "TODO", 0},
		{"cut around", strings.Repeat("x", 50) + "TODO" + strings.Repeat("y", 50), 50, 54, 14, "xxxxxTODOyyyyy", 5},
		{"invalid byte", "\xffTODO", 1, 5, 200, "\uFFFDTODO", 3},
		{"multi-byte cut", strings.Repeat("é", 10) + "TODO", 20, 24, 9, "éTODO", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ps, pe := preview([]byte(c.line), c.s, c.e, c.max)
			if got != c.want || ps != c.matchStart || got[ps:pe] != "TODO" || !utf8.ValidString(got) {
				t.Fatalf("preview = %q [%d,%d), want %q at %d", got, ps, pe, c.want, c.matchStart)
			}
		})
	}
}

func TestFuzzyScore(t *testing.T) {
	cases := []struct {
		q, better, worse string
	}{
		{"util", "src/util.go", "src/unrelated_til.go"},
		{"main", "main.go", "domain/x.go"},
		{"rd", "README.md", "src/ordinary.txt"},
		{"ab", "x/ab.txt", "a/b.txt"},
	}
	for _, c := range cases {
		b, ok1 := fuzzyScore(c.q, c.better)
		w, ok2 := fuzzyScore(c.q, c.worse)
		if !ok1 || !ok2 || b <= w {
			t.Errorf("%q: %s=%d (%v) should beat %s=%d (%v)", c.q, c.better, b, ok1, c.worse, w, ok2)
		}
	}
	if _, ok := fuzzyScore("zz", "src/util.go"); ok {
		t.Error("zz matched src/util.go")
	}
}

func TestGlobs(t *testing.T) {
	cases := []struct {
		include, exclude []string
		rel              string
		keep             bool
	}{
		{nil, nil, "a/b.go", true},
		{[]string{"*.go"}, nil, "a/b.go", true},
		{[]string{"*.go"}, nil, "a/b.txt", false},
		{[]string{"a/**"}, nil, "a/b/c.txt", true},
		{[]string{"a/**"}, nil, "b/a/c.txt", false},
		{nil, []string{"*_test.go"}, "x/y_test.go", false},
		{[]string{"*.{go,md}"}, nil, "README.md", true},
	}
	for _, c := range cases {
		g, err := newGlobs(c.include, c.exclude)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.keep(c.rel); got != c.keep {
			t.Errorf("include %v exclude %v: keep(%s) = %v", c.include, c.exclude, c.rel, got)
		}
	}
}

// A preview is valid UTF-8, at most max bytes of the line plus what
// U+FFFD adds for invalid bytes, with the match inside it.
func FuzzPreview(f *testing.F) {
	f.Add([]byte("a TODO b"), 2, 6, 200)
	f.Add([]byte("\xff\xfeé\r"), 0, 3, 2)
	f.Fuzz(func(t *testing.T, line []byte, s, e, max int) {
		if s < 0 || e < s || e > len(line) || max < 1 || max > 4096 {
			return
		}
		got, ps, pe := preview(line, s, e, max)
		if !utf8.ValidString(got) || ps < 0 || pe < ps || pe > len(got) || len(got) > 3*max+3*(e-s) {
			t.Fatalf("preview(%q, %d, %d, %d) = %q [%d,%d)", line, s, e, max, got, ps, pe)
		}
	})
}
