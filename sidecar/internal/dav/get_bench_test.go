package dav

import (
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/net/webdav"
)

// BenchmarkGet1KiB is a plain GET of a small file through the wrapper and
// x/net, in process (profile with -cpuprofile: davfs opens the file twice
// per GET, once for OpenFile's stat and once lazily on ServeContent's Seek).
func BenchmarkGet1KiB(b *testing.B) {
	e := newBenchEnv(b)
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "f.txt"), make([]byte, 1024), 0o644); err != nil {
		b.Fatal(err)
	}
	h := New(e.fs, e.ck, Options{Logger: hclog.NewNullLogger()})
	for b.Loop() {
		r := httptest.NewRequest("GET", "/projects/demo/f.txt", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
		io.Copy(io.Discard, w.Body)
	}
}

// BenchmarkGet1KiBXNet is the same GET from plain x/net/webdav over
// webdav.Dir, the baseline of BenchmarkGet1KiB (docs/BENCHMARKS.md).
func BenchmarkGet1KiBXNet(b *testing.B) {
	e := newBenchEnv(b)
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "f.txt"), make([]byte, 1024), 0o644); err != nil {
		b.Fatal(err)
	}
	h := &webdav.Handler{FileSystem: webdav.Dir(e.projects), LockSystem: webdav.NewMemLS()}
	for b.Loop() {
		r := httptest.NewRequest("GET", "/demo/f.txt", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
		io.Copy(io.Discard, w.Body)
	}
}
