package davhandler

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
