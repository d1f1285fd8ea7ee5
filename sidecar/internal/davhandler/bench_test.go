package davhandler

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/webdav"
)

// BenchmarkPropfindDepth1 is PROPFIND Depth 1 (allprop, warm) on a
// 10,000-file directory through the handler on a loopback listener. The
// cross-server comparison is deploy/bench/davbench.
func BenchmarkPropfindDepth1(b *testing.B) {
	e := newBenchEnv(b)
	dir := filepath.Join(e.projects, "demo", "many")
	os.Mkdir(dir, 0o755)
	line := []byte(strings.Repeat("x", 128))
	for i := 0; i < 10000; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%05d.txt", i)), line, 0o644)
	}
	body := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`
	run := func() int64 {
		req, _ := http.NewRequest("PROPFIND", e.url+"/projects/demo/many/", strings.NewReader(body))
		req.Header.Set("Depth", "1")
		resp, err := e.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 207 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return n
	}
	run() // warm the revision cache
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.SetBytes(run())
	}
}

// BenchmarkGetSmall is 1 KiB GETs from parallel clients through the handler
// and, for comparison in the same process, through plain x/net/webdav over
// the same directory.
func BenchmarkGetSmall(b *testing.B) {
	e := newBenchEnv(b)
	os.WriteFile(filepath.Join(e.projects, "demo", "small.txt"), []byte(strings.Repeat("s", 1024)), 0o644)
	xs := httptest.NewServer(&webdav.Handler{FileSystem: webdav.Dir(e.projects), LockSystem: webdav.NewMemLS()})
	b.Cleanup(xs.Close)
	for _, c := range []struct{ name, url string }{
		{"davhandler", e.url + "/projects/demo/small.txt"},
		{"xnet", xs.URL + "/demo/small.txt"},
	} {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(c.url)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}

// BenchmarkPutSmall is 4 KiB PUTs (atomic, fsynced) from parallel clients.
func BenchmarkPutSmall(b *testing.B) {
	e := newBenchEnv(b)
	os.Mkdir(filepath.Join(e.projects, "demo", "up"), 0o755)
	body := strings.Repeat("p", 4096)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		w := n.Add(1)
		for i := 0; pb.Next(); i++ {
			req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/projects/demo/up/w%02d-%03d.txt", e.url, w, i%50), strings.NewReader(body))
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 && resp.StatusCode != 204 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}
