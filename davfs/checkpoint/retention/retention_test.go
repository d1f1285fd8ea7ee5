package retention

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// ck is a stored checkpoint of workspace "a" unless ws says otherwise,
// created age before t0.
func ck(id string, k Kind, age time.Duration) Stored {
	return Stored{Workspace: "a", ID: id, Kind: k, Created: t0.Add(-age)}
}

func held(c Stored) Stored          { c.Held = true; return c }
func in(ws string, c Stored) Stored { c.Workspace = ws; return c }

func ids(cs []Stored, drop []bool) []string {
	var out []string
	for i, c := range cs {
		if drop == nil || drop[i] {
			out = append(out, c.ID)
		}
	}
	return out
}

func TestExpired(t *testing.T) {
	p := Policy{MaxAge: time.Hour, Now: t0}
	for _, tc := range []struct {
		name string
		cs   []Stored
		want []string
	}{
		{"none old", []Stored{ck("1", Manual, time.Minute)}, nil},
		{"older goes", []Stored{ck("1", Manual, 2*time.Hour), ck("2", Manual, time.Minute)}, []string{"1"}},
		{"exactly the age stays", []Stored{ck("1", Manual, time.Hour)}, nil},
		{"held stays", []Stored{held(ck("1", Version, 2*time.Hour))}, nil},
		{"every kind and workspace", []Stored{ck("1", Version, 3*time.Hour), in("b", ck("2", Automatic, 3*time.Hour))}, []string{"1", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(p.Expired(tc.cs), nil); !slices.Equal(got, tc.want) {
				t.Fatalf("expired %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSortForEviction(t *testing.T) {
	cs := []Stored{ck("3", Manual, 0), ck("1", Manual, 0), ck("4", Automatic, 0), ck("2", Version, 0), ck("0", Automatic, 0)}
	SortForEviction(cs)
	if got, want := ids(cs, nil), []string{"2", "0", "4", "1", "3"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v (versions, automatic, manual; oldest first)", got, want)
	}
}

func TestByCount(t *testing.T) {
	base := Policy{PerWorkspace: 2, VersionsPerWS: 2, VersionMinAge: 10 * time.Minute, Now: t0, NewWorkspaceKey: "a"}
	for _, tc := range []struct {
		name       string
		newID      string
		cs         []Stored // in eviction order
		wantDrop   []string
		wantRefuse bool
	}{
		{"within the limit", "2", []Stored{ck("1", Manual, time.Hour), ck("2", Manual, 0)}, nil, false},
		{"oldest goes", "3", []Stored{ck("1", Manual, time.Hour), ck("2", Manual, time.Hour), ck("3", Manual, 0)}, []string{"1"}, false},
		{"automatic before manual", "3", []Stored{ck("2", Automatic, time.Hour), ck("1", Manual, time.Hour), ck("3", Manual, 0)}, []string{"2"}, false},
		{"held is skipped", "3", []Stored{held(ck("1", Manual, time.Hour)), ck("2", Manual, time.Hour), ck("3", Manual, 0)}, []string{"2"}, false},
		{"the new one never goes", "3", []Stored{held(ck("1", Manual, time.Hour)), held(ck("2", Manual, time.Hour)), ck("3", Manual, 0)}, nil, false},
		{"other workspaces do not count", "3", []Stored{in("b", ck("1", Manual, time.Hour)), in("b", ck("2", Manual, time.Hour)), ck("3", Manual, 0)}, nil, false},
		{"versions counted apart", "3", []Stored{ck("1", Version, time.Hour), ck("2", Version, time.Hour), ck("3", Manual, 0)}, nil, false},
		{"a version evicts an old version", "3", []Stored{ck("1", Version, time.Hour), ck("2", Version, time.Hour), ck("3", Version, 0)}, []string{"1"}, false},
		{"a young version is never evicted: refuse", "3", []Stored{ck("1", Version, time.Minute), ck("2", Version, time.Minute), ck("3", Version, 0)}, nil, true},
		{"a new version evicts no manual", "4", []Stored{ck("1", Version, time.Minute), ck("2", Version, time.Minute), ck("0", Manual, time.Hour), ck("4", Version, 0)}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.NewID = tc.newID
			drop, refuse := p.ByCount(tc.cs)
			if got := ids(tc.cs, drop); !slices.Equal(got, tc.wantDrop) || refuse != tc.wantRefuse {
				t.Fatalf("drop %v refuse %v, want %v %v", got, refuse, tc.wantDrop, tc.wantRefuse)
			}
		})
	}
}

func TestByBytes(t *testing.T) {
	base := Policy{MaxBytes: 100, VersionMinAge: 10 * time.Minute, Now: t0, NewWorkspaceKey: "a"}
	sizes := map[string]int64{"x": 60, "y": 60, "z": 30, "shared": 50}
	for _, tc := range []struct {
		name     string
		newID    string
		cs       []Stored
		objects  [][]string
		unknown  bool
		wantDrop []string
		wantFits bool
	}{
		{"fits", "2", []Stored{ck("1", Manual, time.Hour), ck("2", Manual, 0)}, [][]string{{"z"}, {"x"}}, false, nil, true},
		{"oldest goes", "2", []Stored{ck("1", Manual, time.Hour), ck("2", Manual, 0)}, [][]string{{"y"}, {"x"}}, false, []string{"1"}, true},
		{"a shared object frees nothing", "2", []Stored{ck("1", Manual, time.Hour), ck("2", Manual, 0)}, [][]string{{"shared", "y"}, {"shared", "x"}}, false, []string{"1"}, false},
		{"nothing known is skipped", "3", []Stored{ck("1", Manual, time.Hour), ck("2", Manual, time.Hour), ck("3", Manual, 0)}, [][]string{nil, {"y"}, {"x"}}, false, []string{"2"}, true},
		{"unknown never fits", "2", []Stored{ck("1", Manual, time.Hour), ck("2", Manual, 0)}, [][]string{{"y"}, {"x"}}, true, []string{"1"}, false},
		{"held stays: does not fit", "2", []Stored{held(ck("1", Manual, time.Hour)), ck("2", Manual, 0)}, [][]string{{"y"}, {"x"}}, false, nil, false},
		{"new version evicts only versions", "3", []Stored{ck("1", Version, time.Hour), ck("2", Manual, time.Hour), ck("3", Version, 0)}, [][]string{{"y"}, {"z"}, {"x"}}, false, []string{"1"}, true},
		{"young version stays", "2", []Stored{ck("1", Version, time.Minute), ck("2", Manual, 0)}, [][]string{{"y"}, {"x"}}, false, nil, false},
		{"across workspaces", "2", []Stored{in("b", ck("1", Manual, time.Hour)), ck("2", Manual, 0)}, [][]string{{"y"}, {"x"}}, false, []string{"1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.NewID = tc.newID
			drop := make([]bool, len(tc.cs))
			fits := p.ByBytes(tc.cs, drop, tc.objects, sizes, tc.unknown)
			if got := ids(tc.cs, drop); !slices.Equal(got, tc.wantDrop) || fits != tc.wantFits {
				t.Fatalf("drop %v fits %v, want %v %v", got, fits, tc.wantDrop, tc.wantFits)
			}
		})
	}
}

func TestByBytesKeepsCountPlan(t *testing.T) {
	// What the count plan drops is not counted again, nor dropped twice.
	p := Policy{MaxBytes: 100, Now: t0, NewWorkspaceKey: "a", NewID: "3"}
	cs := []Stored{ck("1", Manual, time.Hour), ck("2", Manual, time.Hour), ck("3", Manual, 0)}
	drop := []bool{true, false, false}
	fits := p.ByBytes(cs, drop, [][]string{{"y"}, {"z"}, {"x"}}, map[string]int64{"x": 60, "y": 60, "z": 30}, false)
	if got := ids(cs, drop); !slices.Equal(got, []string{"1"}) || !fits {
		t.Fatalf("drop %v fits %v, want [1] true", got, fits)
	}
}
