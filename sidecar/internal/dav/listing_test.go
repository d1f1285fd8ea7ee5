package dav

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A filtered directory rewound and read again lists the same entries: the
// filter must not leave holes in the listing the directory file keeps.
// The multi-link fixture is a hard link between two files in t.TempDir().
func TestFilteredDirRewind(t *testing.T) {
	e := newEnv(t, nil)
	demo := filepath.Join(e.projects, "demo")
	for _, n := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(demo, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(demo, "a.txt"), filepath.Join(demo, "c.txt")); err != nil {
		t.Fatal(err)
	}
	f, err := noMultiLinks{NewFileSystem(e.fs, e.ck, RequestState{})}.OpenFile(context.Background(), "/projects/demo", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 2 {
		fis, err := f.Readdir(-1)
		if err != nil || len(fis) != 1 || fis[0].Name() != "b.txt" {
			t.Fatalf("Readdir #%d = %v, %v; want [b.txt]", i+1, fis, err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
	}
}
