package dav

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/net/webdav"
)

// BenchmarkGet1KiB is a plain GET of a small file through the wrapper and
// x/net, in process (profile with -cpuprofile; docs/BENCHMARKS.md).
func BenchmarkGet1KiB(b *testing.B) {
	e := newGetBenchEnv(b)
	benchGet(b, New(e.fs, e.ck, Options{Logger: benchLogger()}), "/projects/demo/f.txt")
}

// BenchmarkGet1KiBXNet is the same GET from plain x/net/webdav over
// webdav.Dir, the baseline of BenchmarkGet1KiB.
func BenchmarkGet1KiBXNet(b *testing.B) {
	e := newGetBenchEnv(b)
	benchGet(b, &webdav.Handler{FileSystem: webdav.Dir(e.projects), LockSystem: webdav.NewMemLS()}, "/demo/f.txt")
}

// newGetBenchEnv is a bench env with the 1 KiB file demo/f.txt.
func newGetBenchEnv(b *testing.B) *env {
	e := newBenchEnv(b)
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "f.txt"), make([]byte, 1024), 0o644); err != nil {
		b.Fatal(err)
	}
	return e
}

// benchGet GETs name from h in process until the benchmark ends.
func benchGet(b *testing.B, h http.Handler, name string) {
	for b.Loop() {
		r := httptest.NewRequest("GET", name, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
		io.Copy(io.Discard, w.Body)
	}
}

// BenchmarkGet1KiBLoopback is the 1 KiB GET over loopback with parallel
// clients: the handler and plain x/net/webdav, each over plain HTTP and
// over TLS, so the cost of the sidecar's mutual TLS (which davbench's
// x/net peer does not pay) is told apart from the handler's own
// (docs/BENCHMARKS.md, session 12).
func BenchmarkGet1KiBLoopback(b *testing.B) {
	e := newGetBenchEnv(b)
	sidecar := New(e.fs, e.ck, Options{Logger: hclog.NewNullLogger()})
	xnet := http.StripPrefix("/projects", &webdav.Handler{FileSystem: webdav.Dir(e.projects), LockSystem: webdav.NewMemLS()})
	for _, c := range []struct {
		name string
		h    http.Handler
		tls  bool
	}{{"sidecar/plain", sidecar, false}, {"sidecar/tls", sidecar, true}, {"xnet/plain", xnet, false}, {"xnet/tls", xnet, true}} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewUnstartedServer(c.h)
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // closing idle TLS conns at the end
			if c.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			client := srv.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
			b.SetParallelism(8) // 16 clients on 2 CPUs, as davbench
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(srv.URL + "/projects/demo/f.txt")
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("GET: %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
