package davproxy

import (
	"strings"
	"testing"

	"github.com/agentworkspace/files/internal/davwire"
)

func TestParseRoute(t *testing.T) {
	cases := []struct {
		path                             string
		kind                             davwire.Kind
		agent, scope, project, rel, rest string
		audit                            string
		bad                              string // the refusal's reason, in its message
	}{
		{path: "/elsewhere", kind: routeOutside},
		{path: "/dav", kind: routeRoot},
		{path: "/dav/", kind: routeRoot},
		{path: "/dav/codex-a", kind: routeAgent, agent: "codex-a"},
		{path: "/dav/codex-a/", kind: routeAgent, agent: "codex-a"},
		{path: "/dav/codex-a/projects", kind: routeWorkspace, agent: "codex-a", scope: "PROJECT", rest: "/projects"},
		{path: "/dav/codex-a/projects/demo/", kind: routeWorkspace, agent: "codex-a", scope: "PROJECT", project: "demo", rest: "/projects/demo"},
		{path: "/dav/codex-a/projects/demo/src/a%20b.go", kind: routeWorkspace, agent: "codex-a", scope: "PROJECT", project: "demo", rel: "src/a b.go", audit: "src/a b.go", rest: "/projects/demo/src/a b.go"},
		{path: "/dav/codex-a/projects/demo/%C3%A9t%C3%A9", kind: routeWorkspace, agent: "codex-a", scope: "PROJECT", project: "demo", rel: "été", audit: "été", rest: "/projects/demo/été"},
		{path: "/dav/codex-a/global/skills/x/SKILL.md", kind: routeWorkspace, agent: "codex-a", scope: "GLOBAL", rel: "skills/x/SKILL.md", audit: "skills/x/SKILL.md", rest: "/global/skills/x/SKILL.md"},
		{path: "/dav/codex-a/global/AGENTS.md", kind: routeWorkspace, agent: "codex-a", scope: "GLOBAL", rel: "AGENTS.md", audit: "AGENTS.md", rest: "/global/AGENTS.md"},
		{path: "/dav/codex-a/global/auth.json", kind: routeWorkspace, agent: "codex-a", scope: "GLOBAL", rel: "auth.json", audit: Redacted, rest: "/global/auth.json"},
		{path: "/dav/codex-a/global/skillsx", kind: routeWorkspace, agent: "codex-a", scope: "GLOBAL", rel: "skillsx", audit: Redacted, rest: "/global/skillsx"},
		{path: "/dav/codex-a/other", kind: routeUnknown, agent: "codex-a", rest: "/other"},
		{path: "/dav/codex-a/projects/../global/x", bad: "dot segment"},
		{path: "/dav/codex-a/projects/%2E%2E/global/x", bad: "dot segment"},
		{path: "/dav/codex-a/projects/demo/./x", bad: "dot segment"},
		{path: "/dav/codex-a/projects/demo/%2e", bad: "dot segment"},
		{path: "/dav/codex-a/projects//x", bad: "empty segment"},
		{path: "/dav//codex-a/projects/x", bad: "empty segment"},
		{path: "/dav/codex-a/projects/demo//", bad: "empty segment"},
		{path: "/dav/codex-a/projects/x%00y", bad: "control character"},
		{path: "/dav/codex-a/projects/x%0Ay", bad: "control character"},
		{path: "/dav/a%2Fb/projects/", bad: "encoded separator"},
		{path: "/dav/codex-a/projects/demo%2fsrc", bad: "encoded separator"},
		{path: "/dav/codex-a/projects/demo%5Csrc", bad: "encoded separator"},
		{path: "/dav/codex-a/projects/%ff", bad: "UTF-8"},
		{path: "/dav/codex-a/projects/%C3", bad: "UTF-8"},
		{path: "/dav/%zz/", bad: "percent-encoding"},
		{path: "/dav/" + strings.Repeat("x", 129) + "/projects/", bad: "agent ID"},
	}
	for _, c := range cases {
		rt, err := parseRoute(c.path)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: got %+v, %v; want refused for %q", c.path, rt, err, c.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if rt.Kind != c.kind || rt.Agent != c.agent || rt.Scope != c.scope || rt.Project != c.project || rt.RelPath != c.rel || rt.Rest != c.rest || rt.AuditPath() != c.audit {
			t.Errorf("%s: got %+v (audit %q)", c.path, rt, rt.AuditPath())
		}
	}
}
