package davfs

import (
	"math/bits"
	"slices"
	"strings"
)

// sortListed orders items as listedLess does (directories first, then
// byte-wise by name) by multikey (three-way radix) quicksort on the names:
// a big directory's names share long prefixes, which a comparison sort
// re-compares on every step. Names in one listing are distinct.
func sortListed(items []listed) {
	k := 0
	for i := range items {
		if items[i].dir {
			items[i], items[k] = items[k], items[i]
			k++
		}
	}
	sortNames(items[:k], 0, sortBudget(k))
	sortNames(items[k:], 0, sortBudget(len(items)-k))
}

// byteAt is s[d], or -1 past the end of s (a shorter name sorts first).
func byteAt(s string, d int) int {
	if d < len(s) {
		return int(s[d])
	}
	return -1
}

// sortBudget bounds the nesting of uneven partitions (as introsort does)
// so that names crafted against the median-of-three pivot cannot make a
// listing quadratic: past it, a comparison sort finishes the part.
func sortBudget(n int) int { return 2*bits.Len(uint(n)) + 16 }

// sortNames sorts a, whose names share their first d bytes, by name.
func sortNames(a []listed, d, budget int) {
	for len(a) > 12 {
		if budget <= 0 {
			slices.SortFunc(a, func(x, y listed) int { return strings.Compare(x.name[d:], y.name[d:]) })
			return
		}
		x, y, z := byteAt(a[0].name, d), byteAt(a[len(a)/2].name, d), byteAt(a[len(a)-1].name, d)
		p := max(min(x, y), min(max(x, y), z)) // median of three
		lt, i, gt := 0, 0, len(a)
		for i < gt {
			switch c := byteAt(a[i].name, d); {
			case c < p:
				a[lt], a[i] = a[i], a[lt]
				lt++
				i++
			case c > p:
				gt--
				a[gt], a[i] = a[i], a[gt]
			default:
				i++
			}
		}
		if lt > 0 || gt < len(a) {
			budget--
		}
		sortNames(a[:lt], d, budget)
		sortNames(a[gt:], d, budget)
		if p < 0 { // a[lt:gt] all end at d: equal names
			return
		}
		a, d = a[lt:gt], d+1
	}
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].name[d:] < a[j-1].name[d:]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
