package davwire

import (
	"strings"
	"testing"
)

func TestValidPrefix(t *testing.T) {
	for p, want := range map[string]bool{
		"/dav/codex-a": true, "/dav/a.b_c-1": true,
		"": false, "/dav/": false, "/dav/codex-a/": false, "/dav/../x": false, "/dav/.x": false,
		"/dav/a/b": false, "/x/codex-a": false, "/dav/a b": false, "/dav/a%2fb": false, "/dav/<a>": false,
		"/dav/é": false,
	} {
		if got := ValidPrefix(p); got != want {
			t.Errorf("ValidPrefix(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestAllow(t *testing.T) {
	read := map[string]bool{}
	for _, m := range strings.Split(AllowRead, ", ") {
		if w, ok := Methods[m]; !ok || w {
			t.Errorf("AllowRead lists %q, which is not a read method of Methods", m)
		}
		read[m] = true
	}
	if Allow(false) != AllowRead || Allow(true) != AllowWrite {
		t.Errorf("Allow(false), Allow(true) = %q, %q", Allow(false), Allow(true))
	}
	if !strings.HasPrefix(AllowWrite, AllowRead+", ") {
		t.Errorf("AllowWrite %q does not start with AllowRead", AllowWrite)
	}
	for _, m := range strings.Split(AllowWrite, ", ") {
		if _, ok := Methods[m]; !ok || (!read[m] && !Methods[m]) {
			t.Errorf("AllowWrite lists %q, which is not a method of Methods", m)
		}
	}
}
