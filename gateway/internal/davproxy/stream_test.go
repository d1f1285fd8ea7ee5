package davproxy

import (
	"io"
	"net/http"
	"os"
	"runtime"
	"testing"
)

// heapWatch samples the live heap while a transfer runs.
type heapWatch struct {
	base, peak uint64
}

func newHeapWatch() *heapWatch {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &heapWatch{base: ms.HeapAlloc, peak: ms.HeapAlloc}
}

func (w *heapWatch) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.peak = max(w.peak, ms.HeapAlloc)
}

func (w *heapWatch) growth() uint64 { return w.peak - w.base }

const streamSize = 64 << 20

// patternReader yields n bytes of a fixed pattern without holding them.
type patternReader struct{ left int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	n := int64(len(b))
	if n > p.left {
		n = p.left
	}
	for i := range b[:n] {
		b[i] = byte(i)
	}
	p.left -= n
	return int(n), nil
}

// TestStreamingGetAndPut moves 64 MiB each way through the proxy (client,
// proxy and fake sidecar all in this process) and checks that the heap does
// not grow by anything near the body size.
func TestStreamingGetAndPut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		e := newEnv(t, true, be)
		if e.a.fake != nil {
			e.a.fake.MaxBody = 2 * streamSize
		}
		f, err := os.Create(e.a.path("projects/demo/big.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, &patternReader{left: streamSize}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		e.a.chown(t, "projects/demo/big.bin")

		hw := newHeapWatch()
		resp, err := e.srv.Client().Get(e.srv.URL + "/dav/a/projects/demo/big.bin")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		buf := make([]byte, 64<<10)
		for {
			k, err := resp.Body.Read(buf)
			n += int64(k)
			if n%(1<<20) < int64(k) {
				hw.sample()
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		resp.Body.Close()
		if n != streamSize || resp.StatusCode != 200 {
			t.Fatalf("GET: %d, %d bytes", resp.StatusCode, n)
		}
		if g := hw.growth(); g > 16<<20 {
			t.Errorf("GET of %d MiB grew the heap by %d MiB", streamSize>>20, g>>20)
		}
		t.Logf("GET heap growth %d KiB", hw.growth()>>10)

		hw = newHeapWatch()
		pr, pw := io.Pipe()
		go func() {
			src := &patternReader{left: streamSize}
			buf := make([]byte, 64<<10)
			for {
				k, err := src.Read(buf)
				if k > 0 {
					if _, werr := pw.Write(buf[:k]); werr != nil {
						return
					}
					if src.left%(1<<20) == 0 {
						hw.sample()
					}
				}
				if err != nil {
					pw.Close()
					return
				}
			}
		}()
		req, _ := http.NewRequest("PUT", e.srv.URL+"/dav/a/projects/demo/upload.bin", pr)
		req.Header.Set("If-None-Match", "*")
		resp, err = e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT: %d", resp.StatusCode)
		}
		if fi, err := os.Stat(e.a.path("projects/demo/upload.bin")); err != nil || fi.Size() != streamSize {
			t.Fatalf("uploaded file: %v %v", fi, err)
		}
		if g := hw.growth(); g > 16<<20 {
			t.Errorf("PUT of %d MiB grew the heap by %d MiB", streamSize>>20, g>>20)
		}
		t.Logf("PUT heap growth %d KiB", hw.growth()>>10)
	})
}
