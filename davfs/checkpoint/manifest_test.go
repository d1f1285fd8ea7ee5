package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentworkspace/files/davfs"
)

// Reading manifests back from a store the agent may write (issue #23,
// "Whatever the store holds cannot hurt"): a planted manifest is decoded
// as a stream and refused, as damaged, before anything proportional to it
// is allocated, by every reader.

// repeatEntries is a manifest of n copies of the entry JSON ent.
func repeatEntries(ent string, n int) []byte {
	var b bytes.Buffer
	b.Grow(len(ent)*n + 64)
	b.WriteString(`{"version":1,"entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ent)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// ckmEditMeta rewrites a stored description through edit.
func ckmEditMeta(t *testing.T, e *env, ws davfs.Workspace, id string, edit func(m *ckMeta)) {
	t.Helper()
	p := filepath.Join(e.dir, "store", "ws", ckWorkspaceKey(ws), id+".json")
	b, err := os.ReadFile(p)
	must(t, err)
	var m ckMeta
	must(t, json.Unmarshal(b, &m))
	edit(&m)
	b, err = json.Marshal(&m)
	must(t, err)
	must(t, os.WriteFile(p, b, 0o600))
}

// allocated is how many bytes fn allocated (all goroutines).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestCheckpointManifestDecodeBounded(t *testing.T) {
	const maxEntries = 1000
	bomb := repeatEntries(`{}`, 2_800_000) // the 8 MiB manifest
	dirs := repeatEntries(`{"p":"d","d":true}`, 400_000)
	cases := []struct {
		name     string
		manifest []byte                // nil: keep the stored one
		meta     func(m *ckMeta)       // nil: keep the description
		edit     func(b []byte) []byte // applied to the stored manifest
		why      string                // in the message
	}{
		{name: "2.8M empty entries", manifest: bomb, why: "empty path"},
		{name: "2.8M empty entries, counted by the description", manifest: bomb,
			meta: func(m *ckMeta) { m.Files = 2_800_000 }, why: "more than services.checkpoints.maxEntries"},
		{name: "more valid-looking entries than counted", manifest: dirs, why: "more entries than its description counts"},
		{name: "fewer entries than counted", meta: func(m *ckMeta) { m.Files++ }, why: "where its description counts"},
		{name: "negative count", meta: func(m *ckMeta) { m.Dirs = -1 }, why: "negative count"},
		{name: "one entry of 16 MiB", manifest: []byte(`{"version":1,"entries":[{"p":"` + strings.Repeat("a", 16<<20) + `"}]}`),
			why: "larger than the path limits"},
		{name: "a path over maxPathLength", manifest: []byte(`{"version":1,"entries":[{"p":"` + strings.Repeat("a", 5000) + `","d":true}]}`),
			meta: func(m *ckMeta) { m.Files, m.Dirs = 0, 1 }, why: "longer than maxPathLength"},
		{name: "unknown key", edit: func(b []byte) []byte { return append([]byte(`{"x":1,`), b[1:]...) }, why: "unknown key"},
		{name: "repeated key", edit: func(b []byte) []byte { return append([]byte(`{"version":1,`), b[1:]...) }, why: "repeated"},
		{name: "data after the end", edit: func(b []byte) []byte { return append(b, []byte(`{}`)...) }, why: "after its end"},
		{name: "cut short", edit: func(b []byte) []byte { return b[:len(b)-3] }, why: "manifest is invalid"},
		{name: "not JSON", manifest: []byte("\x00\x01 not json"), why: "not a valid manifest"},
		{name: "a file without a hash", edit: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"h":"`), []byte(`"h":"x`), 1)
		}, why: "invalid hash"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxEntries = maxEntries; c.Checkpoints.MaxPerWorkspace = 2 })
			ws := proj("p")
			e.write("projects/p/a.txt", "A1")
			e.write("projects/p/d/b.txt", "B1")
			good, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Label: "good"})
			must(t, err)
			e.write("projects/p/a.txt", "A2")
			bad, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Label: "bad"})
			must(t, err)
			p := ckfManifestPath(e, ws, bad.ID)
			if tc.manifest != nil {
				must(t, os.WriteFile(p, tc.manifest, 0o600))
			}
			if tc.edit != nil {
				b, err := os.ReadFile(p)
				must(t, err)
				must(t, os.WriteFile(p, tc.edit(b), 0o600))
			}
			if tc.meta != nil {
				ckmEditMeta(t, e, ws, bad.ID, tc.meta)
			}
			e.fs.ck.cacheMu.Lock()
			e.fs.ck.manifests = nil
			e.fs.ck.cacheMu.Unlock()
			before := ckfTree(t, e.projects)
			// Every reader, each allocating far less than the file holds.
			const bound = 4 << 20
			steps := []struct {
				what string
				run  func() error
			}{
				{"compare", func() error { _, err := e.fs.CompareCheckpoint(bg, ws, bad.ID, "", "", false); return err }},
				{"restore", func() error { _, err := e.fs.RestoreCheckpoint(bg, ws, bad.ID, "", RestoreOptions{}); return err }},
				{"list with path", func() error {
					// A path list reads only the entries it needs (a binary
					// search of the framed manifest), so a damage elsewhere in
					// the file may go unseen there: the damaged checkpoint may
					// be listed, and compare and restore (above) refuse it. The
					// good one is always listed, and the bound holds.
					cs, _, err := e.fs.ListCheckpointsHolding(bg, ws, "a.txt")
					if err == nil && !slices.ContainsFunc(cs, func(c Checkpoint) bool { return c.ID == good.ID }) {
						t.Errorf("list with path = %v, want the good checkpoint in it", cs)
					}
					return err
				}},
				{"compare of the good one", func() error {
					_, err := e.fs.CompareCheckpoint(bg, ws, good.ID, "", "", false)
					return err
				}},
			}
			for _, s := range steps {
				var err error
				if n := allocated(func() { err = s.run() }); n > bound {
					t.Errorf("%s allocated %d bytes (bound %d)", s.what, n, bound)
				}
				switch s.what {
				case "compare", "restore":
					wantErr(t, err, davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged)
					if !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), bad.ID) {
						t.Errorf("%s: %v, want the checkpoint and %q named", s.what, err, tc.why)
					}
				default:
					if err != nil {
						t.Errorf("%s: %v", s.what, err)
					}
				}
			}
			ckfSame(t, "after the damaged checkpoint was read", before, ckfTree(t, e.projects))
			// The store keeps working: a create prunes the oldest by count
			// (good; the collection decodes every remaining manifest), a
			// delete collects again, and the damaged one can be deleted.
			e.write("projects/p/a.txt", "A3")
			var third Checkpoint
			if n := allocated(func() { third, err = e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{}) }); n > bound {
				t.Errorf("create and prune allocated %d bytes", n)
			}
			must(t, err)
			if _, err := e.fs.GetCheckpoint(bg, ws, good.ID); davfs.CodeOf(err) != davfs.CodeNotFound {
				t.Fatalf("the count limit did not prune: %v", err)
			}
			if n := allocated(func() { err = e.fs.DeleteCheckpoint(bg, ws, third.ID) }); n > bound {
				t.Errorf("delete allocated %d bytes", n)
			}
			must(t, err)
			must(t, e.fs.DeleteCheckpoint(bg, ws, bad.ID))
			last, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
			must(t, err)
			if _, err := e.fs.CompareCheckpoint(bg, ws, last.ID, "", "", false); err != nil {
				t.Fatalf("a checkpoint after the damaged one was deleted: %v", err)
			}
			e.checkCanaries()
		})
	}
}

// What the capture writes decodes to what it wrote, through the stream
// decoder, at the size limits.
func TestCheckpointManifestDecodeAtLimits(t *testing.T) {
	e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxEntries = 64 })
	ws := proj("p")
	long := strings.Repeat("n", 200)
	e.write("projects/p/"+long+"/<&>\"é.txt", "x")
	for i := range 40 {
		e.write("projects/p/d/f"+strings.Repeat("0", i), "y")
	}
	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	e.fs.ck.cacheMu.Lock()
	e.fs.ck.manifests = nil
	e.fs.ck.cacheMu.Unlock()
	m, err := e.fs.ck.readManifest(ws, c.ID)
	must(t, err)
	if len(m.Entries) != c.Files+c.Dirs || c.Files != 41 {
		t.Fatalf("%d entries, checkpoint %+v", len(m.Entries), c)
	}
}

func manifestOf(paths ...string) *ckManifest {
	m := &ckManifest{Version: 1}
	for i, p := range paths {
		m.Entries = append(m.Entries, ckEntry{Path: p, Mode: 0o644, Size: int64(i), Hash: strings.Repeat("a", 64), Pack: "0123456789abcdef01234567", Off: int64(i) * 7})
	}
	return m
}

// The streamed manifest decodes to what json.Marshal of it decodes to.
func TestWriteManifestDecodesAsMarshal(t *testing.T) {
	m := manifestOf("a", "a/<b>&", "a/b-c", "a/b/x\u2028", "é")
	m.Entries[0].Dir, m.Entries[0].Hash, m.Entries[0].Pack = true, "", ""
	var buf bytes.Buffer
	if err := writeManifest(&buf, m); err != nil {
		t.Fatal(err)
	}
	var got, want ckManifest
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("streamed manifest is not JSON: %v\n%s", err, buf.Bytes())
	}
	ref, _ := json.Marshal(m)
	_ = json.Unmarshal(ref, &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	empty := &ckManifest{Version: 1}
	buf.Reset()
	if err := writeManifest(&buf, empty); err != nil || json.Unmarshal(buf.Bytes(), &got) != nil || len(got.Entries) != 0 {
		t.Fatalf("empty manifest: %v %s", err, buf.Bytes())
	}
}

func TestCappedWriterRefusesPastItsCap(t *testing.T) {
	var buf bytes.Buffer
	w := &cappedWriter{w: &buf, left: 4}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("de")); !errors.Is(err, errManifestTooLarge) {
		t.Fatalf("past the cap: %v", err)
	}
}

func TestInScopeAndFindEntry(t *testing.T) {
	es := manifestOf("a", "a/b", "a/b-c", "a/b-c/d", "a/b/x", "a/b/y/z", "a/c", "b").Entries
	for _, tc := range []struct {
		scope string
		want  []string
	}{
		{"", []string{"a", "a/b", "a/b-c", "a/b-c/d", "a/b/x", "a/b/y/z", "a/c", "b"}},
		{"a/b", []string{"a/b", "a/b/x", "a/b/y/z"}},
		{"a/b/x", []string{"a/b/x"}},
		{"a/c", []string{"a/c"}},
		{"a/bb", nil},
		{"c", nil},
	} {
		var got []string
		for _, e := range inScope(es, tc.scope) {
			got = append(got, e.Path)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("inScope(%q) = %q, want %q", tc.scope, got, tc.want)
		}
	}
	if e := findEntry(es, "a/b-c"); e == nil || e.Path != "a/b-c" {
		t.Errorf("findEntry a/b-c: %v", e)
	}
	if e := findEntry(es, "a/bb"); e != nil {
		t.Errorf("findEntry a/bb: %v", e)
	}
	// A subslice is capped: appending to it never writes into es.
	sub := inScope(es, "a/b/x")
	_ = append(sub, ckEntry{Path: "zzz"})
	if es[5].Path != "a/b/y/z" {
		t.Fatal("append to a scope wrote into the manifest")
	}
}

func TestStreamEntries(t *testing.T) {
	m := manifestOf("a", "a/b", "a/b/c", "d")
	var buf bytes.Buffer
	if err := writeManifest(&buf, m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		json  string
		path  string
		limit int
		want  bool
		bad   bool
	}{
		{buf.String(), "a/b/c", 10, true, false},
		{buf.String(), "d", 10, true, false},
		{buf.String(), "a/bc", 10, false, false},
		{buf.String(), "z", 10, false, false},
		{buf.String(), "d", 3, false, true}, // more entries than the limit before the path
		{`{"entries":[{"p":"b"},{"p":"a"}],"version":1}`, "c", 10, false, true},
		{`{"entries":[{"p":"a"},{"p":"a"}]}`, "b", 10, false, true},
		{`{"x":[1,{"p":"c"}],"entries":[{"p":"c"}]}`, "c", 10, true, false},
		{`[{"p":"c"}]`, "c", 10, false, true},
		{`{"entries":{"p":"c"}}`, "c", 10, false, true},
		{`{"entries":[{"p":"c"`, "d", 10, false, true},
	} {
		got := false
		err := streamEntries(strings.NewReader(tc.json), tc.limit, func(e *ckPath) string { return e.Path }, func(e *ckPath) bool {
			got = e.Path == tc.path
			return e.Path < tc.path
		})
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("streamEntries(%.40s, %q) = %v, %v; want %v (error %v)", tc.json, tc.path, got, err, tc.want, tc.bad)
		}
	}
}

// The cache holds at most one maximal manifest's worth of entries (the
// newest is kept even alone above it).
func TestManifestCacheBoundedByEntries(t *testing.T) {
	s := &ckStore{cfg: Config{MaxEntries: DefaultCheckpointEntries}}
	big := &ckManifest{Entries: make([]ckEntry, manifestCacheEntries/2+1)}
	small := &ckManifest{Entries: make([]ckEntry, 10)}
	s.cache("1", small)
	s.cache("2", small)
	if len(s.manifests) != 2 {
		t.Fatalf("two small manifests: %d cached", len(s.manifests))
	}
	s.cache("3", big)
	s.cache("4", big)
	if len(s.manifests) != 1 || s.cached("4") == nil {
		t.Fatalf("two halves of the bound: %d cached", len(s.manifests))
	}
	huge := &ckManifest{Entries: make([]ckEntry, manifestCacheEntries+1)}
	s.cache("5", huge)
	if len(s.manifests) != 1 || s.cached("5") == nil {
		t.Fatalf("one above the bound: %d cached, newest %v", len(s.manifests), s.cached("5") != nil)
	}
	for i := range 6 {
		s.cache(fmt.Sprint("s", i), small)
	}
	if len(s.manifests) != manifestCacheSize {
		t.Fatalf("small ones: %d cached, want %d", len(s.manifests), manifestCacheSize)
	}
}

// Before a manifest is decoded, the cache drops what it would push out.
func TestManifestCacheMakesRoomFirst(t *testing.T) {
	s := &ckStore{cfg: Config{MaxEntries: DefaultCheckpointEntries}}
	half := &ckManifest{Entries: make([]ckEntry, manifestCacheEntries/2)}
	s.cache("old", half)
	s.cache("new", half)
	s.makeRoom(10)
	if len(s.manifests) != 1 || s.cached("new") == nil {
		t.Fatalf("room for 10 more: %d cached", len(s.manifests))
	}
	s.makeRoom(manifestCacheEntries)
	if len(s.manifests) != 0 {
		t.Fatalf("room for a maximal one: %d cached", len(s.manifests))
	}
}

// BenchmarkStreamHolds200k: a path list's look-up of the last of 200,000
// entries in a stored manifest (what ListCheckpointsHolding does per
// candidate when the manifest is not cached), path-only decoding beside
// decoding whole entries.
func BenchmarkStreamHolds200k(b *testing.B) {
	m := &ckManifest{Version: 1}
	for i := range 200000 {
		m.Entries = append(m.Entries, ckEntry{Path: fmt.Sprintf("d%04d/f%06d.txt", i/200, i), Mode: 0o644, Size: 512,
			Hash: strings.Repeat("ab", 32), Mtime: 1 << 60, Dev: 2049, Ino: uint64(i) + 1<<20, Ctime: 1 << 60, Key: true, Pack: "0123456789abcdef01234567", Off: int64(i) * 512})
	}
	var buf bytes.Buffer
	if err := writeManifest(&buf, m); err != nil {
		b.Fatal(err)
	}
	last := m.Entries[len(m.Entries)-1].Path
	b.Run("path-only", func(b *testing.B) {
		for b.Loop() {
			found := false
			streamEntries(bytes.NewReader(buf.Bytes()), 1<<20, func(e *ckPath) string { return e.Path }, func(e *ckPath) bool { found = e.Path == last; return e.Path < last })
			if !found {
				b.Fatal("not found")
			}
		}
	})
	b.Run("seek", func(b *testing.B) {
		for b.Loop() {
			if found, ok := seekHolds(bytes.NewReader(buf.Bytes()), int64(buf.Len()), last); !found || !ok {
				b.Fatal("not found")
			}
		}
	})
	b.Run("whole-entries", func(b *testing.B) {
		for b.Loop() {
			streamEntries(bytes.NewReader(buf.Bytes()), 1<<20, entryPath, func(e *ckEntry) bool { return e.Path < last })
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		for b.Loop() {
			var m ckManifest
			if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The binary search of a framed manifest answers as the streamed look-up
// does, for every path in it and for paths around each of them; a
// manifest that is not framed (json.Marshal's) is left to the stream.
func TestSeekHoldsAnswersAsStreaming(t *testing.T) {
	paths := []string{"a", "a/b", "a/b-c", "a/b-c/d", "a/b/x", "a/b/y/z", "a/c", "b", "b/" + strings.Repeat("long", 300), "é", "é/ü"}
	for n := range len(paths) + 1 {
		m := manifestOf(paths[:n]...)
		var buf bytes.Buffer
		if err := writeManifest(&buf, m); err != nil {
			t.Fatal(err)
		}
		r := bytes.NewReader(buf.Bytes())
		var probes []string
		for _, p := range paths {
			probes = append(probes, p, p+"0", p+"/", strings.TrimSuffix(p, p[len(p)-1:]), "")
		}
		probes = append(probes, "zzz", "0")
		for _, p := range probes {
			want := false
			_ = streamEntries(bytes.NewReader(buf.Bytes()), 1<<20, func(e *ckPath) string { return e.Path }, func(e *ckPath) bool { want = e.Path == p; return e.Path < p })
			got, ok := seekHolds(r, int64(buf.Len()), p)
			if !ok || got != want {
				t.Fatalf("%d entries, path %.20q: seek %v (ok %v), stream %v", n, p, got, ok, want)
			}
		}
	}
	old, _ := json.Marshal(manifestOf("a", "b"))
	if _, ok := seekHolds(bytes.NewReader(old), int64(len(old)), "a"); ok {
		t.Fatal("a manifest without the framing was searched")
	}
	for _, bad := range []string{`{"version":1,"entries":[{"p":"a"}`, `{"version":1,"entries":[{"p":"a"}` + "\n" + `,{"p":`, `[]`} {
		if found, ok := seekHolds(strings.NewReader(bad), int64(len(bad)), "b"); found && ok {
			t.Errorf("%q: found", bad)
		}
	}
}

// A scope read by binary search is what scopeRange keeps of the decoded
// manifest.
func TestSeekScopeAsScopeRange(t *testing.T) {
	paths := []string{"a", "a/b", "a/b-c", "a/b-c/d", "a/b/x", "a/b/y/z", "a/c", "b", "b/c", "é"}
	m := manifestOf(paths...)
	var buf bytes.Buffer
	if err := writeManifest(&buf, m); err != nil {
		t.Fatal(err)
	}
	for _, scope := range append(paths, "a/bb", "c", "0", "zz") {
		var want, got []string
		for _, e := range inScope(m.Entries, scope) {
			want = append(want, e.Path)
		}
		es, ok := seekScope(bytes.NewReader(buf.Bytes()), int64(buf.Len()), scope, 100)
		if !ok {
			t.Fatalf("scope %q: not read", scope)
		}
		for _, e := range es {
			got = append(got, e.Path)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("scope %q: %q, want %q", scope, got, want)
		}
	}
	if _, ok := seekScope(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "a", 3); ok {
		t.Error("more entries than the limit were read")
	}
}
