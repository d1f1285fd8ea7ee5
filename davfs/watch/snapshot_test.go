package watch

import (
	"testing"

	"github.com/agentworkspace/files/davfs"
)

// compare is pure: what a flush observed, against what the watch knew.
func TestCompare(t *testing.T) {
	file := func(rev string) davfs.Entry { return davfs.Entry{Type: davfs.TypeFile, Revision: rev} }
	seen := func(name string, ino uint64, rev string) observed {
		return observed{name: name, rel: "d/" + name, entry: file(rev), ino: ino, ok: true}
	}
	missing := func(name string) observed { return observed{name: name, rel: "d/" + name} }
	for _, tc := range []struct {
		name  string
		known map[string]knownEntry
		obs   []observed
		want  []Change // Kind, Path, FromPath only
	}{
		{"created", nil, []observed{seen("a", 1, "r1")}, []Change{{Kind: ChangeCreated, Path: "d/a"}}},
		{"modified", map[string]knownEntry{"a": {1, revKey("r1")}}, []observed{seen("a", 1, "r2")},
			[]Change{{Kind: ChangeModified, Path: "d/a"}}},
		{"unchanged is nothing", map[string]knownEntry{"a": {1, revKey("r1")}}, []observed{seen("a", 1, "r1")}, nil},
		{"removed", map[string]knownEntry{"a": {1, revKey("r1")}}, []observed{missing("a")},
			[]Change{{Kind: ChangeRemoved, Path: "d/a"}}},
		{"never known and gone is nothing", nil, []observed{missing("a")}, nil},
		{"renamed by inode", map[string]knownEntry{"a": {7, revKey("r1")}}, []observed{missing("a"), seen("b", 7, "r1")},
			[]Change{{Kind: ChangeRenamed, Path: "d/b", FromPath: "d/a"}}},
		{"inode 0 is never paired", map[string]knownEntry{"a": {0, revKey("r1")}}, []observed{missing("a"), seen("b", 0, "r1")},
			[]Change{{Kind: ChangeCreated, Path: "d/b"}, {Kind: ChangeRemoved, Path: "d/a"}}},
		{"other inode is remove and create", map[string]knownEntry{"a": {7, revKey("r1")}}, []observed{missing("a"), seen("b", 8, "r1")},
			[]Change{{Kind: ChangeCreated, Path: "d/b"}, {Kind: ChangeRemoved, Path: "d/a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known := map[string]knownEntry{}
			for n, k := range tc.known {
				known[n] = k
			}
			got := compare(known, tc.obs)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i, c := range got {
				w := tc.want[i]
				if c.Kind != w.Kind || c.Path != w.Path || c.FromPath != w.FromPath {
					t.Fatalf("change %d: %+v, want %+v", i, c, w)
				}
			}
			for _, o := range tc.obs {
				if _, ok := known[o.name]; ok != o.ok {
					t.Fatalf("known[%s] present=%v after compare, want %v", o.name, ok, o.ok)
				}
			}
		})
	}
}

func TestResyncReasonString(t *testing.T) {
	for r, want := range map[ResyncReason]string{ResyncUnspecified: "unspecified", ResyncOverflow: "overflow",
		ResyncLimit: "limit", ResyncGap: "gap", ResyncGone: "gone", ResyncReason(99): "unspecified"} {
		if got := r.String(); got != want {
			t.Fatalf("%d: %q, want %q", r, got, want)
		}
	}
}
