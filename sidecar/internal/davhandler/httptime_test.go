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
	for c := range 256 {
		for _, s := range []string{string(rune(c)), string([]byte{byte(c)}), "ab" + string([]byte{byte(c)}) + "cd"} {
			if got, want := string(appendEscaped(nil, s)), string(appendEscapedSlow(nil, s)); got != want {
				t.Fatalf("appendEscaped(%q) = %q, want %q", s, got, want)
			}
		}
	}
}
