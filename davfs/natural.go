package davfs

import "strings"

// NaturalCompare is the order of names in listings (entries and projects):
// runs of ASCII digits compare as numbers (burst-1, burst-2, burst-10,
// burst-100), other bytes with ASCII letters folded to lower case, and
// names equal that way by their bytes, so that the order is total (a
// cursor names one place in it). The portal sorts the same way (its
// collator also orders non-ASCII letters by language; pages it has loaded
// agree).
func NaturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			ea, eb := digitsEnd(a, i), digitsEnd(b, j)
			if c := compareNumbers(a[i:ea], b[j:eb]); c != 0 {
				return c
			}
			i, j = ea, eb
			continue
		}
		if la, lb := lower(ca), lower(cb); la != lb {
			if la < lb {
				return -1
			}
			return 1
		}
		i, j = i+1, j+1
	}
	switch {
	case len(a)-i < len(b)-j:
		return -1
	case len(a)-i > len(b)-j:
		return 1
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// compareNumbers compares two runs of digits by value (leading zeros
// ignored; equal values are told apart by the final byte comparison).
func compareNumbers(x, y string) int {
	x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
	if len(x) != len(y) {
		if len(x) < len(y) {
			return -1
		}
		return 1
	}
	return strings.Compare(x, y)
}
