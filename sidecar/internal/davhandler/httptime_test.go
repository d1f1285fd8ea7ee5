package davhandler

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

func TestAppendHTTPTimeMatchesStdlib(t *testing.T) {
	check := func(tm time.Time) {
		t.Helper()
		want := tm.UTC().Format(http.TimeFormat)
		if got := string(appendHTTPTime(nil, tm)); got != want {
			t.Fatalf("appendHTTPTime(%v) = %q, want %q", tm, got, want)
		}
	}
	for _, tm := range []time.Time{
		time.Unix(0, 0), time.Unix(-1, 0), time.Unix(-86400, 0), time.Unix(86399, 999999999),
		time.Date(2000, 2, 29, 23, 59, 59, 0, time.UTC), time.Date(1900, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 12, 31, 12, 0, 0, 0, time.FixedZone("x", 13*3600)),
		{},
	} {
		check(tm)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		check(time.Unix(r.Int64N(400*366*86400)-200*366*86400, r.Int64N(1e9)))
	}
	for range 20000 {
		check(time.Unix(r.Int64N(1<<38)-(1<<37), 0))
	}
}

func TestAppendEscapedFastPathAgreesWithSlowPath(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := string(appendEscaped(nil, s)), string(appendEscapedSlow(nil, s)); got != want {
			t.Fatalf("appendEscaped(%q) = %q, want %q", s, got, want)
		}
	}
	for c := range 256 {
		check(string(rune(c)))
		// Every byte at every position of a word, and in the tail.
		for pos := range 19 {
			b := []byte("0123456789abcdefghi")
			b[pos] = byte(c)
			check(string(b))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x60))
			if r.IntN(30) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		check(string(b))
	}
}

// TestXMLPlain8: the 8-bytes-at-a-time check agrees with the byte table for
// every byte value at every position.
func TestXMLPlain8(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			if got, want := xmlPlain8(load8(string(b), 0)), xmlPlain[c]; got != want {
				t.Fatalf("byte %#x at %d: xmlPlain8 %v, table %v", c, pos, got, want)
			}
		}
	}
}
