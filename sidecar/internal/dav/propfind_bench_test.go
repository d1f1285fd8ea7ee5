package dav

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// BenchmarkPropfindDepth1 is a PROPFIND Depth 1 allprop of 10,000 files
// on a loopback listener, through the fast path and through x/net/webdav
// (the same handler with DisablePropfindFastPath), over the same tree.
// The end-to-end figure against nginx is deploy/bench/davbench's.
func BenchmarkPropfindDepth1(b *testing.B) {
	e := newBenchEnv(b)
	dir := filepath.Join(e.projects, "demo", "many")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%05d.txt", i)), []byte("0123456789abcdef"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	const body = `<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`
	for _, c := range []struct {
		name    string
		disable bool
	}{{"fast", false}, {"xnet", true}} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewServer(New(e.fs, e.ck, Options{Logger: hclog.NewNullLogger(), DisablePropfindFastPath: c.disable}))
			defer srv.Close()
			for b.Loop() {
				req, _ := http.NewRequest("PROPFIND", srv.URL+"/projects/demo/many/", strings.NewReader(body))
				req.Header.Set("Depth", "1")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusMultiStatus || n < 10000*100 {
					b.Fatalf("%d, %d bytes", resp.StatusCode, n)
				}
			}
		})
	}
}
