package davproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/net/webdav"
)

// BenchmarkGet compares a 64 MiB GET straight from an x/net/webdav upstream
// with the same GET through the proxy handler, in one process. The real
// binaries are compared by deploy/bench/gatewaybench.
func BenchmarkGet(b *testing.B) {
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "projects/p"), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "projects/p/big.bin"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(f, &patternReader{left: streamSize}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	up := httptest.NewServer(&webdav.Handler{FileSystem: webdav.Dir(root), LockSystem: webdav.NewMemLS()})
	defer up.Close()
	upURL, _ := url.Parse(up.URL)
	h, err := New(Options{Agents: func(string) (*url.URL, bool) { return upURL, true }})
	if err != nil {
		b.Fatal(err)
	}
	gw := httptest.NewServer(h)
	defer gw.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(b *testing.B, u string) {
		b.SetBytes(streamSize)
		for b.Loop() {
			resp, err := client.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n != streamSize {
				b.Fatalf("%d bytes, %v", n, err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { get(b, up.URL+"/projects/p/big.bin") })
	b.Run("proxy", func(b *testing.B) { get(b, gw.URL+"/dav/a/projects/p/big.bin") })
}
