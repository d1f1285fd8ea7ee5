package davfs

import "testing"

// cleanName only squeezes slashes: it roots the name, drops empty
// segments and a trailing slash, and keeps "." and ".." for parse to
// refuse.
func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/": "/", "//": "/", "/a//b/": "/a/b", "a/./b": "/a/./b", "/a/../b": "/a/../b",
	} {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q; want %q", in, got, want)
		}
	}
	for _, name := range []string{"a/./b", "/projects/p/../q"} {
		_, err := parse(bg, "stat", name)
		wantErr(t, err, CodeInvalidArgument, ReasonInvalidPath)
	}
}
