package davfs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortListedMatchesListedLess(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 2000 {
		var items []listed
		m := r.IntN(120)
		if n%200 == 0 {
			m = 5000
		}
		seen := map[listed]bool{}
		for range m {
			b := make([]byte, r.IntN(7))
			for i := range b {
				b[i] = "ab\xffc.\x01"[r.IntN(6)]
			}
			it := listed{name: "x" + string(b), dir: r.IntN(4) == 0}
			if !seen[it] {
				seen[it] = true
				items = append(items, it)
			}
		}
		for i := range r.IntN(300) {
			items = append(items, listed{name: fmt.Sprintf("f%05d.txt", i), dir: i%7 == 0})
		}
		r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		got := slices.Clone(items)
		sortListed(got)
		slices.SortFunc(items, listedLess)
		if !slices.Equal(got, items) {
			t.Fatalf("case %d: sortListed disagrees with listedLess", n)
		}
	}
}

func TestSortNamesBudgetFallback(t *testing.T) {
	var items []listed
	for i := range 500 {
		items = append(items, listed{name: fmt.Sprintf("p%03d", (i*7919)%500)})
	}
	want := slices.Clone(items)
	slices.SortFunc(want, listedLess)
	for _, budget := range []int{0, 1, 3} {
		got := slices.Clone(items)
		sortNames(got, 0, budget)
		if !slices.Equal(got, want) {
			t.Fatalf("budget %d: wrong order", budget)
		}
	}
}

func BenchmarkSortListed(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]listed, 10000)
	for i := range src {
		src[i] = listed{name: fmt.Sprintf("file-%05d.txt", i), dir: i%50 == 0}
	}
	r.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
	w := make([]listed, len(src))
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			copy(w, src)
			sortListed(w)
		}
	})
	b.Run("SortFunc", func(b *testing.B) {
		for b.Loop() {
			copy(w, src)
			slices.SortFunc(w, listedLess)
		}
	})
}
