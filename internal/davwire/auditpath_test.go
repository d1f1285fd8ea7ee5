package davwire

import "testing"

func TestRedactGlobal(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "",
		"AGENTS.md":           "AGENTS.md",
		"skills":              "skills",
		"skills/":             "skills/",
		"skills/a/b.md":       "skills/a/b.md",
		"auth.json":           Redacted,
		"config.toml":         Redacted,
		"sessions/x.jsonl":    Redacted,
		"skillsX/a":           Redacted,
		"AGENTS.md.bak":       Redacted,
		"skills/../auth.json": Redacted,
		"/skills/x":           "/skills/x",
	} {
		if got := RedactGlobal(in); got != want {
			t.Errorf("RedactGlobal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAuditPath(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/dav/codex-a/projects/demo/auth.json", "auth.json"},
		{"/dav/codex-a/global/auth.json", Redacted},
		{"/dav/codex-a/global/skills/x/SKILL.md", "skills/x/SKILL.md"},
		{"/dav/codex-a/global/AGENTS.md", "AGENTS.md"},
	} {
		rt, f := ParseRoute(c.path)
		if f != 0 || rt.AuditPath() != c.want {
			t.Errorf("%s: audit path %q (fault %v), want %q", c.path, rt.AuditPath(), f, c.want)
		}
	}
}
