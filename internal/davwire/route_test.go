package davwire

import (
	"strings"
	"testing"
)

func TestParseRoute(t *testing.T) {
	cases := []struct {
		path string
		want Route
		f    Fault
	}{
		{path: "/elsewhere", want: Route{Kind: Outside}},
		{path: "/davx/a", want: Route{Kind: Outside}},
		{path: "/dav", want: Route{Kind: Root}},
		{path: "/dav/", want: Route{Kind: Root}},
		{path: "/dav/codex-a", want: Route{Kind: Agent, Agent: "codex-a"}},
		{path: "/dav/codex-a/", want: Route{Kind: Agent, Agent: "codex-a"}},
		{path: "/dav/codex-a/projects", want: Route{Kind: Workspace, Agent: "codex-a", Scope: ScopeProject, Rest: "/projects"}},
		{path: "/dav/codex-a/projects/demo/", want: Route{Kind: Workspace, Agent: "codex-a", Scope: ScopeProject, Project: "demo", Rest: "/projects/demo"}},
		{path: "/dav/codex-a/projects/demo/src/a%20b.go", want: Route{Kind: Workspace, Agent: "codex-a", Scope: ScopeProject, Project: "demo", RelPath: "src/a b.go", Rest: "/projects/demo/src/a b.go"}},
		{path: "/dav/codex-a/global", want: Route{Kind: Workspace, Agent: "codex-a", Scope: ScopeGlobal, Rest: "/global"}},
		{path: "/dav/codex-a/global/skills/x/SKILL.md", want: Route{Kind: Workspace, Agent: "codex-a", Scope: ScopeGlobal, RelPath: "skills/x/SKILL.md", Rest: "/global/skills/x/SKILL.md"}},
		{path: "/dav/codex-a/other", want: Route{Kind: Unknown, Agent: "codex-a", Rest: "/other"}},
		{path: `/dav/codex-a/projects/a\b`, want: Route{Kind: Workspace, Agent: "codex-a", Scope: ScopeProject, Project: `a\b`, Rest: `/projects/a\b`}},
		{path: "/dav/codex-a/projects/../global/x", f: FaultDot},
		{path: "/dav//codex-a/projects/x", f: FaultEmpty},
		{path: "/dav/a%2Fb/projects/", f: FaultEncodedSep},
		{path: "/dav/%zz/", f: FaultEscape},
		{path: `/dav/a\b/projects`, f: FaultAgentID},
		{path: "/dav/" + strings.Repeat("x", 129) + "/projects/", f: FaultAgentID},
		{path: "/dav/" + strings.Repeat("x", 128), want: Route{Kind: Agent, Agent: strings.Repeat("x", 128)}},
	}
	for _, c := range cases {
		if got, f := ParseRoute(c.path); got != c.want || f != c.f {
			t.Errorf("ParseRoute(%q) = %+v, %b; want %+v, %b", c.path, got, f, c.want, c.f)
		}
	}
}

func TestSameWorkspace(t *testing.T) {
	p := func(s string) Route {
		rt, f := ParseRoute(s)
		if f != 0 {
			t.Fatalf("ParseRoute(%q): %b", s, f)
		}
		return rt
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"/dav/a/projects/demo/x", "/dav/a/projects/demo/y/z", true},
		{"/dav/a/projects/demo/x", "/dav/a/projects/other/x", false},
		{"/dav/a/projects/demo/x", "/dav/b/projects/demo/x", false},
		{"/dav/a/global/x", "/dav/a/global/skills/y", true},
		{"/dav/a/global/x", "/dav/a/projects/global/x", false},
		{"/dav/a/projects", "/dav/a/projects", true},
		{"/dav/a/other", "/dav/a/other", false},
		{"/dav/a", "/dav/a", false},
		{"/elsewhere", "/elsewhere", false},
	} {
		if got := SameWorkspace(p(c.a), p(c.b)); got != c.want {
			t.Errorf("SameWorkspace(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// Locate is the one grammar of a name below an agent; Workspace names
// the workspace a Place is in.
func TestLocate(t *testing.T) {
	for _, c := range []struct {
		name string
		want Place
		ws   string
	}{
		{"", Place{}, ""},
		{"projects", Place{Scope: ScopeProject}, ""},
		{"projects/p", Place{Scope: ScopeProject, Project: "p"}, "/projects/p"},
		{"projects/p/a/b", Place{Scope: ScopeProject, Project: "p", RelPath: "a/b"}, "/projects/p"},
		{"global", Place{Scope: ScopeGlobal}, "/global"},
		{"global/skills/s", Place{Scope: ScopeGlobal, RelPath: "skills/s"}, "/global"},
		{"other/x", Place{}, ""},
	} {
		var segs []string
		if c.name != "" {
			segs = strings.Split(c.name, "/")
		}
		got := Locate(segs)
		if got != c.want || got.Workspace() != c.ws {
			t.Errorf("Locate(%q) = %+v (workspace %q); want %+v (%q)", c.name, got, got.Workspace(), c.want, c.ws)
		}
	}
}
