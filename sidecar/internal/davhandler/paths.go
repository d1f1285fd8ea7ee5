package davhandler

import (
	"net/url"
	"path"
	"strings"

	"github.com/agentworkspace/files/davfs"
)

// kind says where a URL path sits in the WebDAV namespace.
type kind int

const (
	kindNone     kind = iota // outside every namespace: 404
	kindRoot                 // "/": lists projects/ and global/
	kindProjects             // "/projects/": read-only list of projects
	kindEntry                // inside a workspace (its root when rel == "")
)

// target is a resolved request URL path. davfs does all real path
// validation; this only splits the namespace prefix off.
type target struct {
	kind kind
	ws   davfs.Workspace
	rel  string // path inside the workspace, "" for its root
	href string // cleaned URL path without trailing slash ("/" for the root)
}

// resolve maps a URL path onto the namespace.
func resolve(p string) target {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	p = path.Clean(p)
	if p == "/" {
		return target{kind: kindRoot, href: "/"}
	}
	rest := p[1:]
	first, rel, _ := strings.Cut(rest, "/")
	switch first {
	case "projects":
		if rel == "" {
			return target{kind: kindProjects, href: p}
		}
		project, sub, _ := strings.Cut(rel, "/")
		return target{kind: kindEntry, ws: davfs.Workspace{Scope: davfs.ScopeProject, Project: project}, rel: sub, href: p}
	case "global":
		return target{kind: kindEntry, ws: davfs.Workspace{Scope: davfs.ScopeGlobal}, rel: rel, href: p}
	}
	return target{kind: kindNone, href: p}
}

// isWorkspaceRoot reports whether t is a project's or Global's root.
func (t target) isWorkspaceRoot() bool { return t.kind == kindEntry && t.rel == "" }

// parent returns the target's parent directory inside its workspace.
func (t target) parentRel() (dir, name string) {
	i := strings.LastIndexByte(t.rel, '/')
	if i < 0 {
		return "", t.rel
	}
	return t.rel[:i], t.rel[i+1:]
}

// sameWorkspace reports whether both are entries of one workspace.
func sameWorkspace(a, b target) bool {
	return a.kind == kindEntry && b.kind == kindEntry && a.ws == b.ws
}

// under reports whether name is p or below it (URL paths, no trailing slash).
func under(name, p string) bool {
	if p == "/" {
		return true
	}
	return name == p || strings.HasPrefix(name, p+"/")
}

// escapeHref URL-escapes each segment of a cleaned path.
func escapeHref(p string, dir bool) string {
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i, seg := range strings.Split(p, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(url.PathEscape(seg))
	}
	if dir && !strings.HasSuffix(p, "/") {
		b.WriteByte('/')
	}
	return b.String()
}

// destination parses a Destination header. The gateway rewrites it to a
// path; a client talking to the sidecar directly may send an absolute URI,
// whose authority must then be this server (otherwise: 502, RFC 4918
// §9.8.5).
func destination(v, host string) (t target, otherHost, ok bool) {
	if v == "" {
		return target{}, false, false
	}
	u, err := url.Parse(v)
	if err != nil || u.Path == "" || u.Opaque != "" {
		return target{}, false, false
	}
	if u.Host != "" && !strings.EqualFold(u.Host, host) {
		return target{}, true, true
	}
	return resolve(u.Path), false, true
}
