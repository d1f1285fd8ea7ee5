package davfs_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentworkspace/files/davfs"
)

func TestNaturalCompareOrder(t *testing.T) {
	want := []string{
		"a", "A1", "a2", "a010", "a10", "a100", "b", "burst-1", "burst-2", "burst-10", "burst-100",
		"File", "file", "file1.txt", "file2.txt", "file10.txt", "x9y", "x10", "zz",
	}
	got := slices.Clone(want)
	rand.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
	slices.SortFunc(got, davfs.NaturalCompare)
	if !slices.Equal(got, want) {
		t.Fatalf("natural order:\n got %q\nwant %q", got, want)
	}
}

// A total order: antisymmetric, 0 only for equal names, transitive on a
// sample of names made of digits, letters of both cases and punctuation.
func TestNaturalCompareIsTotal(t *testing.T) {
	alphabet := "0019aAbB-._"
	r := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 300)
	for i := range names {
		b := make([]byte, 1+r.IntN(6))
		for k := range b {
			b[k] = alphabet[r.IntN(len(alphabet))]
		}
		names[i] = string(b)
	}
	for _, x := range names {
		for _, y := range names {
			c := davfs.NaturalCompare(x, y)
			if c != -davfs.NaturalCompare(y, x) || (c == 0) != (x == y) {
				t.Fatalf("compare(%q, %q) = %d, reverse %d", x, y, c, davfs.NaturalCompare(y, x))
			}
		}
	}
	sorted := slices.Clone(names)
	slices.SortFunc(sorted, davfs.NaturalCompare)
	for i := 1; i < len(sorted); i++ {
		for j := i; j < len(sorted); j++ {
			if davfs.NaturalCompare(sorted[i-1], sorted[j]) > 0 {
				t.Fatalf("not transitive: %q sorts before %q but compares after it", sorted[i-1], sorted[j])
			}
		}
	}
}
