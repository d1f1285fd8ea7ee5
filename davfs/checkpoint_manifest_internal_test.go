package davfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

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
	s := &ckStore{cfg: CheckpointConfig{MaxEntries: DefaultCheckpointEntries}}
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
	s := &ckStore{cfg: CheckpointConfig{MaxEntries: DefaultCheckpointEntries}}
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
