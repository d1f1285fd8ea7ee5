package davwire

import "testing"

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
