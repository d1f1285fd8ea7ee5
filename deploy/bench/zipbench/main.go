// Command zipbench measures the folder download (issue #25) beside
// `zip -qr -1` of the same tree piped to /dev/null, in the same run: a
// 10,000-file / 100 MiB project (half random bytes, half text-like, so
// deflate has work of both kinds), warm page cache (one unmeasured round
// of each first), runs interleaved (zip, download, zip, ...), medians with
// every run's value, and the sidecar's peak memory growth during each
// download (VmHWM, reset through /proc/PID/clear_refs).
//
// The sidecar is the real agent-sidecar binary, its WebDAV listener over
// mutual TLS on 127.0.0.1 (what the gateway's REST download proxies to);
// the client reads the archive to its end and checks it is a whole zip
// (its end-of-central-directory record).
//
// Usage (from the repository root): go run ./deploy/bench/zipbench [-runs 5] [-files 10000] [-mib 100]
package main

import (
	"bytes"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentworkspace/files/deploy/bench/benchproc"
)

func main() {
	runs := flag.Int("runs", 5, "interleaved runs (the median is reported)")
	files := flag.Int("files", 10000, "files in the project")
	mib := flag.Int("mib", 100, "MiB in the project")
	flag.Parse()
	benchproc.Exit("zipbench", run(*runs, *files, *mib))
}

type sample struct {
	zip, download time.Duration
	mem           int64 // KiB of VmHWM growth
	size          int64
}

func run(runs, files, mib int) error {
	work, err := filepath.Abs(filepath.Join("bin", "zipbench"))
	if err != nil {
		return err
	}
	_ = os.RemoveAll(work)
	defer os.RemoveAll(work)
	root := filepath.Join(work, "vol")
	proj := filepath.Join(root, "projects", "big")
	if err := os.MkdirAll(filepath.Join(root, "codex"), 0o755); err != nil {
		return err
	}
	fmt.Printf("preparing %d files, %d MiB ...\n", files, mib)
	if err := makeTree(proj, files, int64(mib)<<20/int64(files)); err != nil {
		return err
	}
	sc, err := benchproc.StartSidecar(work, "", benchproc.SidecarConfig(root), "dav")
	if err != nil {
		return err
	}
	defer sc.Stop()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: sc.TLS, ForceAttemptHTTP2: true}}
	url := "https://" + sc.Addr + "/projects/big?download=1"

	var out []sample
	for r := -1; r < runs; r++ { // round -1 warms the cache
		var s sample
		if s.zip, err = zipRun(proj); err != nil {
			return err
		}
		rss := benchproc.ResetPeak(sc.PID)
		if s.size, s.download, err = download(c, url); err != nil {
			return err
		}
		s.mem = benchproc.StatusKB(sc.PID, "VmHWM") - rss
		if r < 0 {
			continue
		}
		fmt.Printf("run %d: zip -qr -1 %v, download %v (%d bytes), mem %d KiB\n", r+1,
			s.zip.Round(time.Millisecond), s.download.Round(time.Millisecond), s.size, s.mem)
		out = append(out, s)
	}
	report(out)
	return nil
}

// makeTree writes files files of size bytes, a hundred per directory:
// even files random, odd ones text-like (compressible).
func makeTree(proj string, files int, size int64) error {
	buf := make([]byte, size)
	line := []byte("func handler(w http.ResponseWriter, r *http.Request) { // a line of code\n")
	for i := range files {
		p := filepath.Join(proj, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		if i%2 == 0 {
			_, _ = rand.Read(buf)
		} else {
			for j := 0; j < len(buf); j += len(line) {
				copy(buf[j:], line)
			}
			buf[0] = byte(i)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// zipRun is the baseline: zip -qr -1 of the tree to stdout, into /dev/null.
func zipRun(proj string) (time.Duration, error) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	cmd := exec.Command("zip", "-qr", "-1", "-", ".")
	cmd.Dir, cmd.Stdout = proj, null
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("zip (make setup installs it): %v %s", err, stderr.String())
	}
	return time.Since(t0), nil
}

// download reads the archive to its end and checks its last record.
func download(c *http.Client, url string) (int64, time.Duration, error) {
	t0 := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, 0, fmt.Errorf("download: %d %s", resp.StatusCode, b)
	}
	tail := &tailWriter{}
	n, err := io.Copy(tail, resp.Body)
	d := time.Since(t0)
	if err != nil {
		return n, d, err
	}
	if !bytes.Contains(tail.b, []byte("PK\x05\x06")) {
		return n, d, fmt.Errorf("download: %d bytes without an end-of-central-directory record", n)
	}
	return n, d, nil
}

// tailWriter keeps the last 4 KiB written.
type tailWriter struct{ b []byte }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = append(t.b[:0], t.b[len(t.b)-4096:]...)
	}
	return len(p), nil
}

func report(ss []sample) {
	var zs, ds []time.Duration
	var rs []float64
	var ms []int64
	var v []string
	for _, s := range ss {
		zs, ds, ms = append(zs, s.zip), append(ds, s.download), append(ms, s.mem)
		x := float64(s.download) / float64(s.zip)
		rs = append(rs, x)
		v = append(v, strconv.FormatFloat(x, 'f', 3, 64))
	}
	fmt.Println()
	fmt.Printf("| figure | median | target |\n|---|---|---|\n")
	fmt.Printf("| zip -qr -1 to /dev/null | %v | |\n", benchproc.Median(zs).Round(time.Millisecond))
	fmt.Printf("| folder download (sidecar, streamed zip) | %v | |\n", benchproc.Median(ds).Round(time.Millisecond))
	r := benchproc.Median(rs)
	fmt.Printf("| download / zip -qr -1 | %.3f× (%s) | ≤ 1.5× %s |\n", r, strings.Join(v, ", "), benchproc.Verdict(r <= 1.5, "pass", "FAIL"))
	m := benchproc.Median(ms)
	fmt.Printf("| sidecar peak memory growth during a download | %d KiB | < 64 MiB %s |\n", m, benchproc.Verdict(m < 64<<10, "pass", "FAIL"))
}
