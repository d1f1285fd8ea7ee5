package dav_test

import (
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/sidecar/internal/dav"
)

func TestWebDAVWorkspace(t *testing.T) {
	for _, c := range []struct {
		name string
		ws   davfs.Workspace
		rel  string
		ok   bool
	}{
		{"/projects/p", davfs.Workspace{Scope: davfs.ScopeProject, Project: "p"}, "", true},
		{"/projects/p/a/b", davfs.Workspace{Scope: davfs.ScopeProject, Project: "p"}, "a/b", true},
		{"/global/skills/s", davfs.Workspace{Scope: davfs.ScopeGlobal}, "skills/s", true},
		{"/global/AGENTS.md", davfs.Workspace{Scope: davfs.ScopeGlobal}, "AGENTS.md", true},
		{"/", davfs.Workspace{}, "", false},
		{"/projects", davfs.Workspace{}, "", false},
		{"/global", davfs.Workspace{}, "", false},
		{"/other/x", davfs.Workspace{}, "", false},
		{"/projects/p/../q", davfs.Workspace{}, "", false},
	} {
		ws, rel, ok := dav.WebDAVWorkspace(c.name)
		if ws != c.ws || rel != c.rel || ok != c.ok {
			t.Errorf("WebDAVWorkspace(%q) = %+v, %q, %v; want %+v, %q, %v", c.name, ws, rel, ok, c.ws, c.rel, c.ok)
		}
	}
}
