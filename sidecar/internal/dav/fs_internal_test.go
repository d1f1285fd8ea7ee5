package dav

import (
	"testing"

	"github.com/agentworkspace/files/davfs"
)

// cleanDavName only squeezes slashes: it roots the name, drops empty
// segments and a trailing slash, and keeps "." and ".." for parse to
// refuse.
func TestCleanDavName(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/": "/", "//": "/", "/a//b/": "/a/b", "a/./b": "/a/./b", "/a/../b": "/a/../b",
	} {
		if got := cleanDavName(in); got != want {
			t.Errorf("cleanDavName(%q) = %q; want %q", in, got, want)
		}
	}
	for _, name := range []string{"a/./b", "/projects/p/../q"} {
		_, e := parse(name)
		if e == nil || e.Code != davfs.CodeInvalidArgument || e.Reason != davfs.ReasonInvalidPath {
			t.Errorf("parse(%q) = %v; want InvalidArgument/INVALID_PATH", name, e)
		}
	}
}
