package davfs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPageAfter: the selection-based page equals the page of a full sort,
// for every page size and cursor position.
func TestPageAfter(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for round := range 200 {
		var all []listed
		seen := map[listed]bool{}
		for range r.IntN(60) {
			it := listed{name: fmt.Sprintf("%c%d", 'a'+r.IntN(5), r.IntN(30)), dir: r.IntN(3) == 0}
			if !seen[it] {
				seen[it] = true
				all = append(all, it)
			}
		}
		sorted := slices.Clone(all)
		slices.SortFunc(sorted, listedLess)
		for _, n := range []int{1, 2, 7, 100} {
			// Walk all pages.
			var got []listed
			var after *listed
			for pages := 0; ; pages++ {
				page, more := pageAfter(slices.Clone(all), after, n)
				got = append(got, page...)
				if !more {
					break
				}
				last := page[len(page)-1]
				after = &last
				if pages > 100 {
					t.Fatal("no progress")
				}
			}
			if !slices.Equal(got, sorted) {
				t.Fatalf("round %d n %d: got %v want %v", round, n, got, sorted)
			}
		}
	}
}
