package restwalk

import (
	"net/url"
	"slices"
	"testing"
)

func TestInsert(t *testing.T) {
	steps := []Step{{Name: "1 a"}, {Name: "7 b"}, {Name: "10 c"}}
	names := func(s []Step) (out []string) {
		for _, x := range s {
			out = append(out, x.Name)
		}
		return out
	}
	if got := names(Insert(steps, "7 ", Step{Name: "x"})); !slices.Equal(got, []string{"1 a", "x", "7 b", "10 c"}) {
		t.Errorf("before 7: %v", got)
	}
	if got := names(Insert(steps, "8 ", Step{Name: "x"})); !slices.Equal(got, []string{"1 a", "7 b", "10 c", "x"}) {
		t.Errorf("no such step: %v", got)
	}
	if got := names(steps); !slices.Equal(got, []string{"1 a", "7 b", "10 c"}) {
		t.Errorf("Insert changed its argument: %v", got)
	}
}

func TestReplyAndQuery(t *testing.T) {
	r := Reply{JSON: map[string]any{
		"details": []any{map[string]any{"@type": "x"}, map[string]any{"reason": "SYMLINK"}},
		"entries": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
	}}
	if r.Reason() != "SYMLINK" || !slices.Equal(r.Names(), []string{"a", "b"}) {
		t.Errorf("reason %q names %v", r.Reason(), r.Names())
	}
	u, err := url.Parse(Q("codex-a", "files", "GLOBAL", "", "skills/x y"))
	if err != nil || u.Path != API+"/codex-a/projects/files" {
		t.Fatalf("%v %v", u, err)
	}
	if v := u.Query(); v.Get("workspace.scope") != "GLOBAL" || v.Has("workspace.project_name") || v.Get("path") != "skills/x y" {
		t.Errorf("query %v", v)
	}
}
