package search_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/search"
	"github.com/agentworkspace/files/internal/testtree"
)

// tree is a temp volume: projects/demo and CODEX_HOME, with canaries
// beside them that a search must never read.
type tree struct {
	dir, projects, codex string
	fs                   *davfs.FS
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newTree(t *testing.T, openat2 bool) *tree {
	t.Helper()
	d := t.TempDir()
	tr := &tree{dir: d, projects: filepath.Join(d, "projects"), codex: filepath.Join(d, "codex")}
	demo := filepath.Join(tr.projects, "demo")
	write(t, filepath.Join(d, "canary.txt"), "TODO canary outside\n")
	write(t, filepath.Join(d, "canarydir", "c.txt"), "TODO canary dir\n")
	write(t, filepath.Join(demo, "main.go"), "package main\n\nfunc Hello() {}\n// TODO fix this\n")
	write(t, filepath.Join(demo, "src", "util.go"), "package src\n// todo lower\nvar X = 1 // TODO later\n")
	write(t, filepath.Join(demo, "docs", "notes.md"), "TODO in docs\n")
	write(t, filepath.Join(demo, ".git", "config"), "TODO denied git\n")
	write(t, filepath.Join(demo, "secret", "key.txt"), "TODO denied secret\n")
	write(t, filepath.Join(demo, "bin.dat"), "TODO\x00binary\n")
	big := strings.Repeat("filler line\n", (2<<20)/12) + "TODO beyond the per-file bound\n"
	write(t, filepath.Join(demo, "big.txt"), big)
	for _, l := range [][2]string{{"../../canary.txt", "link.txt"}, {"../../canarydir", "linkdir"}} {
		if err := os.Symlink(l[0], filepath.Join(demo, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(d, "canary.txt"), filepath.Join(demo, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	// A FIFO named like a text file: opening it to read would hang.
	if err := unix.Mkfifo(filepath.Join(demo, "pipe.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tr.codex, "skills", "a", "SKILL.md"), "TODO skill\n")
	write(t, filepath.Join(tr.codex, "AGENTS.md"), "TODO agents\n")
	write(t, filepath.Join(tr.codex, "auth.json"), "TODO secret token\n")
	fs, err := davfs.Open(davfs.Config{ProjectsRoot: tr.projects, CodexHome: tr.codex,
		DeniedNames: append(davfs.DefaultDeniedNames(), "secret"), DisableOpenat2: !openat2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	tr.fs = fs
	return tr
}

var demo = davfs.Workspace{Scope: davfs.ScopeProject, Project: "demo"}
var global = davfs.Workspace{Scope: davfs.ScopeGlobal}

func run(t *testing.T, fs *davfs.FS, ctx context.Context, ws davfs.Workspace, dir string, o search.Options) ([]search.Result, search.Summary, error) {
	t.Helper()
	do, err := search.Search(ctx, fs, ws, dir, o)
	if err != nil {
		return nil, search.Summary{}, err
	}
	var out []search.Result
	sum, err := do(func(r search.Result) error { out = append(out, r); return nil })
	return out, sum, err
}

func hits(rs []search.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path+":"+strconv.Itoa(r.Line))
	}
	slices.Sort(out)
	return out
}

func TestContentSearch(t *testing.T) {
	for _, openat2 := range []bool{true, false} {
		tr := newTree(t, openat2)
		before := testtree.Snap(t, tr.dir)
		cases := []struct {
			name string
			ws   davfs.Workspace
			dir  string
			o    search.Options
			want []string
		}{
			{"literal case-sensitive", demo, "", search.Options{Query: "TODO", CaseSensitive: true},
				[]string{"docs/notes.md:1", "main.go:4", "src/util.go:3"}},
			{"literal folded", demo, "", search.Options{Query: "todo"},
				[]string{"docs/notes.md:1", "main.go:4", "src/util.go:2", "src/util.go:3"}},
			{"regex", demo, "", search.Options{Query: `^func \w+\(`, Regex: true, CaseSensitive: true},
				[]string{"main.go:3"}},
			{"regex folded", demo, "", search.Options{Query: `todo (fix|later)`, Regex: true},
				[]string{"main.go:4", "src/util.go:3"}},
			{"include", demo, "", search.Options{Query: "TODO", CaseSensitive: true, Include: []string{"*.go"}},
				[]string{"main.go:4", "src/util.go:3"}},
			{"include by path", demo, "", search.Options{Query: "TODO", CaseSensitive: true, Include: []string{"src/**"}},
				[]string{"src/util.go:3"}},
			{"exclude a directory", demo, "", search.Options{Query: "TODO", CaseSensitive: true, Exclude: []string{"docs"}},
				[]string{"main.go:4", "src/util.go:3"}},
			{"a subdirectory", demo, "src", search.Options{Query: "TODO", CaseSensitive: true},
				[]string{"src/util.go:3"}},
			{"one file", demo, "main.go", search.Options{Query: "TODO", CaseSensitive: true},
				[]string{"main.go:4"}},
			{"global: skills and AGENTS.md only", global, "", search.Options{Query: "TODO", CaseSensitive: true},
				[]string{"AGENTS.md:1", "skills/a/SKILL.md:1"}},
			{"no match", demo, "", search.Options{Query: "nowhere"}, nil},
		}
		for _, c := range cases {
			t.Run(c.name+"/openat2="+strconv.FormatBool(openat2), func(t *testing.T) {
				c.o.MaxFileBytes = 1 << 20 // big.txt's TODO is past it
				rs, sum, err := run(t, tr.fs, context.Background(), c.ws, c.dir, c.o)
				if err != nil {
					t.Fatal(err)
				}
				if got := hits(rs); !slices.Equal(got, c.want) {
					t.Fatalf("hits %v, want %v", got, c.want)
				}
				if sum.Results != len(c.want) || sum.Truncated != "" {
					t.Fatalf("summary %+v", sum)
				}
				for _, r := range rs {
					if strings.Contains(r.Preview, "canary") || strings.Contains(r.Preview, "denied") || strings.Contains(r.Preview, "secret") {
						t.Fatalf("result from outside: %+v", r)
					}
				}
			})
		}
		testtree.MustSame(t, "the tree after searching", before, testtree.Snap(t, tr.dir))
	}
}

func TestSkipsBinaryAndBoundsPerFile(t *testing.T) {
	tr := newTree(t, true)
	rs, sum, err := run(t, tr.fs, context.Background(), demo, "", search.Options{Query: "TODO", CaseSensitive: true, MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Path == "bin.dat" || r.Path == "big.txt" || r.Path == "hard.txt" {
			t.Fatalf("%s searched: %+v", r.Path, r)
		}
	}
	if sum.BinarySkipped != 1 || sum.FileTruncated != 1 || sum.BytesRead > 1<<20+4096 {
		t.Fatalf("summary %+v: want one binary, one file cut, at most 1 MiB and a bit read", sum)
	}
	// Without the per-file bound the end of big.txt is found.
	rs, _, err = run(t, tr.fs, context.Background(), demo, "big.txt", search.Options{Query: "TODO", CaseSensitive: true})
	if err != nil || len(rs) != 1 || rs[0].Line != (2<<20)/12+1 {
		t.Fatalf("big.txt: %v %+v", err, rs)
	}
}

func TestBounds(t *testing.T) {
	tr := newTree(t, true)
	cases := []struct {
		name      string
		o         search.Options
		truncated string
		most      int
	}{
		{"max results", search.Options{Query: "TODO", MaxResults: 2}, search.BoundResults, 2},
		{"max bytes", search.Options{Query: "TODO", MaxBytes: 1 << 20}, search.BoundBytes, 4},
		{"time limit", search.Options{Query: "TODO", Timeout: time.Nanosecond}, search.BoundTimeout, 4},
		{"name results", search.Options{Mode: search.ModeName, Query: "o", MaxResults: 1}, search.BoundResults, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, sum, err := run(t, tr.fs, context.Background(), demo, "", c.o)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Truncated != c.truncated || len(rs) > c.most || sum.Results != len(rs) {
				t.Fatalf("summary %+v with %d results, want truncated %q, at most %d", sum, len(rs), c.truncated, c.most)
			}
			if c.o.MaxBytes > 0 && sum.BytesRead > c.o.MaxBytes {
				t.Fatalf("read %d bytes, bound %d", sum.BytesRead, c.o.MaxBytes)
			}
		})
	}
}

func TestCanceled(t *testing.T) {
	tr := newTree(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err := run(t, tr.fs, ctx, demo, "", search.Options{Query: "TODO"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// The client went away during the search: its first emit sees it.
	ctx, cancel = context.WithCancel(context.Background())
	do, err := search.Search(ctx, tr.fs, demo, "", search.Options{Query: "TODO"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	_, err = do(func(search.Result) error { n++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("err %v after %d results, want canceled after 1", err, n)
	}
	// An emit error ends it with that error.
	boom := errors.New("client gone")
	do, _ = search.Search(context.Background(), tr.fs, demo, "", search.Options{Query: "TODO"})
	if _, err := do(func(search.Result) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the emit's", err)
	}
}

func TestBadInput(t *testing.T) {
	tr := newTree(t, true)
	cases := []struct {
		name   string
		ws     davfs.Workspace
		dir    string
		o      search.Options
		reason davfs.Reason
	}{
		{"empty query", demo, "", search.Options{}, davfs.ReasonInvalidArgument},
		{"bad regex", demo, "", search.Options{Query: "(unclosed", Regex: true}, davfs.ReasonInvalidArgument},
		{"bad glob", demo, "", search.Options{Query: "x", Include: []string{"[a"}}, davfs.ReasonInvalidArgument},
		{"long query", demo, "", search.Options{Query: strings.Repeat("x", 1001)}, davfs.ReasonInvalidArgument},
		{"dot segment", demo, "src/../..", search.Options{Query: "x"}, davfs.ReasonInvalidPath},
		{"empty segment", demo, "src//x", search.Options{Query: "x"}, davfs.ReasonInvalidPath},
		{"denied", demo, ".git", search.Options{Query: "x"}, davfs.ReasonDenylisted},
		{"outside global", global, "auth.json", search.Options{Query: "x"}, davfs.ReasonOutsideGlobal},
		{"missing project", davfs.Workspace{Scope: davfs.ScopeProject, Project: "nope"}, "", search.Options{Query: "x"}, davfs.ReasonProjectNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := search.Search(context.Background(), tr.fs, c.ws, c.dir, c.o)
			if davfs.ReasonOf(err) != c.reason {
				t.Fatalf("err %v (%s), want %s", err, davfs.ReasonOf(err), c.reason)
			}
		})
	}
	// A symlink named as the target is refused, not followed.
	if _, _, err := run(t, tr.fs, context.Background(), demo, "linkdir", search.Options{Query: "TODO"}); err == nil {
		t.Fatal("searching through linkdir succeeded")
	}
}

func TestNameSearch(t *testing.T) {
	tr := newTree(t, true)
	write(t, filepath.Join(tr.projects, "demo", "src", "deep", "unrelated_til.go"), "x")
	cases := []struct {
		q     string
		first string
		none  []string
	}{
		{"util", "src/util.go", []string{"link.txt", "hard.txt", ".git/config", "secret/key.txt"}},
		{"main", "main.go", nil},
		{"notes", "docs/notes.md", nil},
		{"sugo", "src/util.go", nil}, // s(rc/)u(til.)go across segments
		{"key", "", []string{"secret/key.txt"}},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			rs, _, err := run(t, tr.fs, context.Background(), demo, "", search.Options{Mode: search.ModeName, Query: c.q})
			if err != nil {
				t.Fatal(err)
			}
			if c.first == "" && len(rs) != 0 || c.first != "" && (len(rs) == 0 || rs[0].Path != c.first) {
				t.Fatalf("results %+v, want %q first", rs, c.first)
			}
			for _, r := range rs {
				if slices.Contains(c.none, r.Path) {
					t.Fatalf("%s listed", r.Path)
				}
				if r.Line != 0 || r.Preview != r.Path {
					t.Fatalf("name result %+v", r)
				}
			}
		})
	}
	rs, _, err := run(t, tr.fs, context.Background(), global, "", search.Options{Mode: search.ModeName, Query: "md"})
	if err != nil || !slices.Equal(hits(rs), []string{"AGENTS.md:0", "skills/a/SKILL.md:0"}) {
		t.Fatalf("global names: %v %v", err, hits(rs))
	}
}

func TestPreviewBounded(t *testing.T) {
	tr := newTree(t, true)
	long := strings.Repeat("é", 600) + "NEEDLE" + strings.Repeat("ü", 600) + "\xff\n"
	write(t, filepath.Join(tr.projects, "demo", "long.txt"), long)
	rs, _, err := run(t, tr.fs, context.Background(), demo, "long.txt", search.Options{Query: "NEEDLE", CaseSensitive: true, MaxPreview: 101})
	if err != nil || len(rs) != 1 {
		t.Fatalf("%v %+v", err, rs)
	}
	r := rs[0]
	if !utf8.ValidString(r.Preview) || len(r.Preview) > 101 || r.Preview[r.MatchStart:r.MatchEnd] != "NEEDLE" {
		t.Fatalf("preview %q [%d,%d)", r.Preview, r.MatchStart, r.MatchEnd)
	}
}

// Files are read in chunks: every matching line is found with its number,
// whether it straddles a chunk boundary or sits in a line longer than the
// buffer; the same as a plain split into lines.
func TestChunkBoundaries(t *testing.T) {
	tr := newTree(t, true)
	var b strings.Builder
	var want []string
	for i := 1; b.Len() < 3<<20; i++ {
		l := strings.Repeat("x", i%300)
		switch {
		case i == 5000:
			l = "NEEDLE" + strings.Repeat("y", 1500<<10) // longer than the buffer's carry
		case i%997 == 0 || i%1013 == 0:
			l = strings.Repeat("z", i%250) + "NEEDLE" + l
		}
		if strings.Contains(l, "NEEDLE") {
			want = append(want, "chunks.txt:"+strconv.Itoa(i))
		}
		b.WriteString(l + "\n")
	}
	write(t, filepath.Join(tr.projects, "demo", "chunks.txt"), b.String())
	rs, _, err := run(t, tr.fs, context.Background(), demo, "chunks.txt", search.Options{Query: "NEEDLE", CaseSensitive: true, MaxResults: 10000})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if got := hits(rs); !slices.Equal(got, want) {
		t.Fatalf("%d hits, want %d; first differences: %v", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []string) []string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return []string{a[i], b[i]}
		}
	}
	return nil
}
