package testtree

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.failed = append(r.failed, fmt.Sprintf(f, a...)) }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...) }

func sample(t *testing.T) *Tree {
	tr := New(t)
	tr.Write("a/file.txt", "one")
	tr.Write("b.txt", "two")
	tr.Symlink("b.txt", "a/link")
	tr.Mkdir("a/empty")
	return tr
}

// Every kind of change Snap records makes Same fail, naming the name.
func TestSnapshotDetectsChanges(t *testing.T) {
	cases := map[string]func(tr *Tree){
		"a/file.txt": func(tr *Tree) { tr.Write("a/file.txt", "One") },
		"b.txt":      func(tr *Tree) { tr.must(os.Remove(tr.Path("b.txt"))) },
		"a/new":      func(tr *Tree) { tr.Write("a/new", "") },
		"a/link": func(tr *Tree) {
			tr.must(os.Remove(tr.Path("a/link")))
			tr.Symlink("a/file.txt", "a/link")
		},
		"a/empty": func(tr *Tree) { tr.must(os.Chmod(tr.Path("a/empty"), 0o700)) },
		"b.txt ": func(tr *Tree) {
			tr.must(os.Chtimes(tr.Path("b.txt"), time.Unix(1, 0), time.Unix(1, 0)))
		},
		"a/empty ":    func(tr *Tree) { tr.Write("a/empty/x", ""); tr.must(os.Remove(tr.Path("a/empty/x"))) },
		"a/file.txt ": func(tr *Tree) { tr.must(os.Lchown(tr.Path("a/file.txt"), 1000, 1000)) },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			tr := sample(t)
			opts := []Option{Modes(), AllMTimes(), Owners()}
			before := Snap(t, tr.Dir, opts...)
			change(tr)
			r := &recorder{TB: t}
			Same(r, "after "+name, before, Snap(t, tr.Dir, opts...))
			if len(r.failed) != 1 || !strings.Contains(r.failed[0], strings.TrimSpace(name)) {
				t.Fatalf("Same reported %q, want one failure naming %s", r.failed, name)
			}
		})
	}
}

// An unchanged tree passes; what is skipped or not asked for is not compared.
func TestSnapshotOptions(t *testing.T) {
	tr := sample(t)
	before := Snap(t, tr.Dir, SkipTop("a"))
	tr.Write("a/file.txt", "changed")
	tr.must(os.Chmod(tr.Path("b.txt"), 0o600))
	r := &recorder{TB: t}
	Same(r, "unchanged", before, Snap(t, tr.Dir, SkipTop("a")))
	if len(r.failed) != 0 {
		t.Fatalf("Same failed on what it was told to skip: %q", r.failed)
	}
	if _, ok := before["a"]; ok {
		t.Fatal("SkipTop kept the skipped directory")
	}
	if _, ok := Snap(t, tr.Dir, WithoutRoot())["."]; ok {
		t.Fatal("WithoutRoot kept the root")
	}
	if e := Snap(t, tr.Dir)["a/link"]; e.Type != "symlink" || e.Link != tr.Path("b.txt") {
		t.Fatalf("link recorded as %v", e)
	}
}

// A tree made by Of compares equal to one written the same way, and not
// to one with other content.
func TestSnapshotOf(t *testing.T) {
	files := map[string]string{"x.txt": "x", "d/y.txt": "y"}
	got := New(t)
	got.Write("d/y.txt", "y")
	got.Write("x.txt", "x")
	if d := Diff(Of(t, files).Snap(WithoutRoot()), got.Snap(WithoutRoot())); len(d) != 0 {
		t.Fatalf("same files differ: %q", d)
	}
	got.Write("x.txt", "X")
	if d := Diff(Of(t, files).Snap(WithoutRoot()), got.Snap(WithoutRoot())); len(d) != 1 {
		t.Fatalf("changed content: %q", d)
	}
}

// Without drops names from a snapshot, leaving its argument as it was, so
// a change to a dropped name passes and one to any other still fails.
func TestWithout(t *testing.T) {
	tr := sample(t)
	before := tr.Snap()
	tr.Write("a/file.txt", "One")
	tr.Write("b.txt", "Two")
	after := tr.Snap()
	drop := func(rel string) bool { return rel == "b.txt" }
	d := Diff(Without(before, drop), Without(after, drop))
	if len(d) != 1 || !strings.HasPrefix(d[0], "changed a/file.txt") {
		t.Fatalf("diff without b.txt: %q", d)
	}
	if _, ok := before["b.txt"]; !ok || len(Without(before, nil)) != len(before) {
		t.Fatal("Without changed its argument, or nil dropped something")
	}
}
