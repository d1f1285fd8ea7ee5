package davwire

import "strings"

// Redacted stands in an audit record for a GLOBAL path it may not show.
const Redacted = "[redacted]"

// RedactGlobal keeps a GLOBAL-scope path only when it names the global
// root, skills/ or something below it, or AGENTS.md; anything else (a
// CODEX_HOME file: auth.json, config.toml, sessions) becomes Redacted.
// Paths are workspace-relative ("skills/x", "AGENTS.md"). The gateway's
// audit log applies it to every GLOBAL record, REST and WebDAV alike.
func RedactGlobal(p string) string {
	q := strings.TrimPrefix(p, "/")
	switch {
	case q == "", q == "AGENTS.md", q == "skills", q == "skills/":
		return p
	case strings.HasPrefix(q, "skills/") && !strings.Contains(q, ".."):
		return p
	}
	return Redacted
}

// AuditPath is r.RelPath as an audit record may show it (RedactGlobal for
// the global workspace).
func (r Route) AuditPath() string {
	if r.Scope != ScopeGlobal {
		return r.RelPath
	}
	return RedactGlobal(r.RelPath)
}
