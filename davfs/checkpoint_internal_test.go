package davfs

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The manifest encoding (encoding/json's) reads back as what it wrote,
// names with quotes, backslashes and control bytes included.
func TestCheckpointManifestJSON(t *testing.T) {
	m := &ckManifest{Version: 1, Entries: []ckEntry{
		{Path: "a", Dir: true, Mode: 0o755, Mtime: 5},
		{Path: "a/\"q\"\\\t\n\x01é", Mode: 0o644, Size: 12, Hash: "ab", Mtime: -3, Dev: 1 << 60, Ino: 7, Ctime: 9, Key: true, Pack: "p", Off: 4},
		{Path: "z"},
	}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got ckManifest
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if !reflect.DeepEqual(&got, m) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, *m)
	}
	type plain ckManifest // encoding/json's own encoding, for comparison
	want, _ := json.Marshal((*plain)(m))
	var a, c any
	json.Unmarshal(b, &a)
	json.Unmarshal(want, &c)
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("differs from encoding/json:\n%s\n%s", b, want)
	}
}
