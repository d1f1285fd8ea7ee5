package davhandler

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func TestParseIf(t *testing.T) {
	cases := []struct {
		in    string
		lists int
		err   bool
	}{
		{`(<opaquelocktoken:a> ["e1"])`, 1, false},
		{`(<opaquelocktoken:a>) (Not <DAV:no-lock>)`, 2, false},
		{`<http://h/p/x> (<opaquelocktoken:a>) <http://h/q> (["x"] Not ["y"])`, 2, false},
		{`(Not <DAV:no-lock> [W/"bad"])`, 1, false},
		{``, 0, true},
		{`(`, 0, true},
		{`()`, 0, true},
		{`(Not)`, 0, true},
		{`junk`, 0, true},
		{`(<a> [unterminated)`, 0, true},
	}
	for _, c := range cases {
		l, err := parseIf(c.in)
		if (err != nil) != c.err || len(l) != c.lists {
			t.Errorf("parseIf(%q) = %d lists, %v", c.in, len(l), err)
		}
	}
	l, _ := parseIf(`<http://h/p/x> (<t1> ["e"]) (Not <t2>)`)
	if l[0].resource != "/p/x" || l[1].resource != "/p/x" || !l[1].conds[0].not || l[0].conds[1].etag != `"e"` {
		t.Errorf("parsed %+v", l)
	}
	if toks := ifTokens(l); !toks["t1"] || toks["t2"] {
		t.Errorf("tokens %v", toks)
	}
}

func TestLockManager(t *testing.T) {
	now := time.Unix(1000, 0)
	m := newLockManager(func() time.Time { return now })
	coll, err := m.create("/p/c", false, false, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.create("/p/c/x", true, false, "", time.Minute); err != errLocked {
		t.Fatalf("lock under an infinite lock: %v", err)
	}
	if _, err := m.create("/p", false, true, "", time.Minute); err != errLocked {
		t.Fatalf("infinite lock over a locked member: %v", err)
	}
	if !m.valid(coll.token, "/p/c/x/y") || m.valid(coll.token, "/p/other") {
		t.Fatal("coverage")
	}
	if m.permits([]lockReq{{name: "/p/c/x"}}, nil) || !m.permits([]lockReq{{name: "/p/c/x"}}, map[string]bool{coll.token: true}) {
		t.Fatal("permits")
	}
	if m.permits([]lockReq{{name: "/p", recursive: true}}, nil) {
		t.Fatal("recursive delete of an ancestor must need the token")
	}
	if !m.permits([]lockReq{{name: "/p/d"}}, nil) {
		t.Fatal("unrelated resource")
	}
	s1, err := m.create("/p/s", true, true, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.create("/p/s", true, true, "", time.Minute); err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
	if _, err := m.create("/p/s", true, false, "", time.Minute); err != errLocked {
		t.Fatal("exclusive over shared")
	}
	if !m.permits([]lockReq{{name: "/p/s"}}, map[string]bool{s1.token: true}) {
		t.Fatal("one shared token suffices")
	}
	// Depth 0 lock on a collection protects its membership.
	d0, _ := m.create("/p/z", true, false, "", time.Minute)
	if m.permits([]lockReq{{name: "/p/z/new", member: true}}, nil) || !m.permits([]lockReq{{name: "/p/z/new/deeper", member: true}}, nil) {
		t.Fatal("depth-0 membership")
	}
	if err := m.unlock(d0.token, "/p/other"); err != errNoSuchLock {
		t.Fatal("unlock from a URL the lock does not cover")
	}
	now = now.Add(2 * time.Minute)
	if !m.permits([]lockReq{{name: "/p/c/x"}}, nil) || len(m.discover("/p/s")) != 0 {
		t.Fatal("locks did not expire")
	}
}

func TestEscapeAndHref(t *testing.T) {
	if got := string(appendEscaped(nil, "a<b>&\"c'\x01\xff")); got != "a&lt;b&gt;&amp;&quot;c&apos;\uFFFD\uFFFD" {
		t.Errorf("escaped %q", got)
	}
	if got := escapeHref("/projects/a b/c#d", true); got != "/projects/a%20b/c%23d/" {
		t.Errorf("href %q", got)
	}
	for in, want := range map[string]target{
		"/":                      {kind: kindRoot, href: "/"},
		"/projects/":             {kind: kindProjects, href: "/projects"},
		"/projects/x/../../etc/": {kind: kindNone, href: "/etc"},
		"/global/skills/a":       {kind: kindEntry, rel: "skills/a", href: "/global/skills/a"},
	} {
		got := resolve(in)
		if got.kind != want.kind || got.rel != want.rel || got.href != want.href {
			t.Errorf("resolve(%q) = %+v", in, got)
		}
	}
}

func TestParsePropfind(t *testing.T) {
	pf, err := parsePropfind(strings.NewReader(""))
	if err != nil || !pf.allprop {
		t.Fatal("empty body is allprop")
	}
	pf, err = parsePropfind(strings.NewReader(`<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><x:y xmlns:x="urn:x"/></D:prop></D:propfind>`))
	if err != nil || len(pf.names) != 2 || pf.names[1] != (xml.Name{Space: "urn:x", Local: "y"}) {
		t.Fatalf("%+v %v", pf, err)
	}
	for _, bad := range []string{`<propfind/>`, `<D:propfind xmlns:D="DAV:" xmlns:bad=""><D:allprop/></D:propfind>`, `<D:propfind xmlns:D="DAV:">`} {
		if _, err := parsePropfind(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
