// Command davbench compares the sidecar's WebDAV with a plain
// golang.org/x/net/webdav.Handler over webdav.Dir and with nginx (dav +
// dav-ext modules), serving the same prepared directory in the same run,
// driven by the same loopback load generator. Each figure is printed with
// its ratio to the peers and the target.
//
// The sidecar is the real agent-sidecar binary (built here) and x/net/webdav
// runs in a child process of this program, so the peak memory of each is the
// VmHWM of its own process (/proc/PID/status); nginx's is its worker's.
// Everything is on 127.0.0.1 and every phase is bounded in count and time.
//
// Usage (from the repository root): go run ./deploy/bench/davbench [-quick]
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/deploy/bench/benchproc"
	"github.com/agentworkspace/files/internal/pki"
)

func main() {
	serveXNet := flag.String("serve-xnet", "", "internal: serve plain x/net/webdav over this directory")
	xnetPKI := flag.String("xnet-pki", "", "internal: with -serve-xnet, serve it over the sidecar's mutual TLS from this pki directory")
	flag.BoolVar(&tlsXNet, "tls-xnet", false, "serve the x/net/webdav peer over the sidecar's mutual TLS too (its certificate), for a like-for-like ratio")
	quick := flag.Bool("quick", false, "smaller counts and shorter phases")
	flag.IntVar(&files, "files", files, "files in the PROPFIND directory")
	keep := flag.Bool("keep", false, "keep the prepared directory")
	only := flag.String("only", "", "comma-separated figures to run (propfind,get,small,put,p99); default all")
	flag.IntVar(&propfindIters, "propfind-iters", propfindIters, "measured PROPFINDs per peer")
	flag.IntVar(&smallRounds, "small-rounds", smallRounds, "rounds of the 1 KiB GET figure (the best counts)")
	flag.IntVar(&bigGetIters, "get-iters", bigGetIters, "measured 256 MiB GETs per peer (the best counts)")
	flag.Parse()
	if *quick {
		propfindIters, bigGetIters, smallRounds, putRounds = 5, 2, 1, 1
		rateDur, p99Dur = time.Second, time.Second
	}
	if *serveXNet != "" {
		serveXNetChild(*serveXNet, *xnetPKI)
		return
	}
	benchproc.Exit("davbench", run(*keep, *only))
}

// serveXNetChild is the x/net/webdav peer: exactly the plain handler,
// over the sidecar's mutual TLS (its certificate, the gateway as the only
// client) when pkiDir is set.
func serveXNetChild(dir, pkiDir string) {
	var cfg *tls.Config
	if pkiDir != "" {
		src, err := pki.NewSource(pki.SidecarFiles(pkiDir, benchproc.BenchAgent), nil, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cfg = src.ServerConfig(pki.GatewayURI, pki.ProtoHTTP)
	}
	err := benchproc.ServeChild(&webdav.Handler{FileSystem: webdav.Dir(dir), LockSystem: webdav.NewMemLS()}, cfg)
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// The phases' counts and durations; -quick makes them smaller.
var (
	files         = 10000 // in the PROPFIND directory
	propfindIters = 20
	smallRounds   = 3
	bigGetIters   = 15
	putRounds     = 3
	rateDur       = 2 * time.Second // of each round of a rate phase
	p99Dur        = 3 * time.Second // of each p99 sample
	// tlsXNet: the x/net/webdav peer serves the sidecar's mutual TLS too.
	tlsXNet bool
	// abMode: $AGENT_SIDECAR_BIN_B names a second sidecar build, which
	// takes x/net/webdav's place (column and ratio), so two builds run
	// side by side, interleaved, in one run; x/net's targets are not
	// judged then.
	abMode = os.Getenv("AGENT_SIDECAR_BIN_B") != ""
)

// server is one peer under test; its PID is the process whose VmHWM is
// reported.
type server struct {
	name, url string
	*benchproc.Proc
}

func run(keep bool, only string) error {
	work, err := os.MkdirTemp("", "davbench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(work)
	}
	root := filepath.Join(work, "root")
	fmt.Printf("davbench: preparing %s (%d files, 256 MiB file)\n", root, files)
	if err := prepare(root, files); err != nil {
		return err
	}
	syscall.Sync() // no writeback of the prepared tree during the measurements
	// $AGENT_SIDECAR_BIN (as in sidecartest) runs a prebuilt binary, for
	// side-by-side runs of two builds; else benchproc builds one.

	var servers []*server
	defer func() {
		for _, s := range servers {
			s.Stop()
		}
	}()
	sc, err := startSidecar(work, "", root)
	if err != nil {
		return fmt.Errorf("sidecar: %w", err)
	}
	servers = append(servers, sc)
	var xn *server
	if abMode {
		fmt.Printf("davbench: A/B run, build B from $AGENT_SIDECAR_BIN_B in x/net/webdav's place\n")
		bdir := filepath.Join(work, "b")
		if err = os.Mkdir(bdir, 0o755); err == nil {
			xn, err = startSidecar(bdir, os.Getenv("AGENT_SIDECAR_BIN_B"), root)
		}
	} else {
		xn, err = startXNet(root)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", peerName(), err)
	}
	servers = append(servers, xn)
	ng, err := startNginx(work, root)
	if err != nil {
		return fmt.Errorf("nginx: %w", err)
	}
	servers = append(servers, ng)

	host, _ := os.Hostname()
	fmt.Printf("machine: %s, %d CPUs, %s/%s, %s; sidecar=real agent-sidecar binary, x/net=child process, nginx %s\n",
		host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), nginxVersion())

	phases := []struct {
		name string
		run  func([]*server) []row
	}{{"propfind", benchPropfind}, {"get", benchBigGet}, {"small", benchSmallGet}, {"put", benchSmallPut}, {"p99", benchLatencyUnderUpload}}
	var rows []row
	for _, ph := range phases {
		if only == "" || slices.Contains(strings.Split(only, ","), ph.name) {
			rows = append(rows, ph.run(servers)...)
		}
	}
	rows = append(rows, peakRows(servers))
	printRows(rows)
	return nil
}

// row is one figure for the three peers.
type row struct {
	name   string
	unit   string
	vals   [3]float64 // sidecar, x/net, nginx
	target string
	pass   *bool
}

func printRows(rows []row) {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	vs := "sidecar/xnet"
	if abMode {
		vs = "A/B"
	}
	fmt.Fprintf(tw, "\nfigure\tsidecar\t%s\tnginx\t%s\tsidecar/nginx\ttarget\tresult\n", peerName(), vs)
	for _, r := range rows {
		res := ""
		if abMode && strings.Contains(r.target, "x/net") {
			r.target, r.pass = "", nil
		}
		if r.pass != nil {
			res = benchproc.Verdict(*r.pass, "ok", "FAIL")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name,
			fmtVal(r.vals[0], r.unit), fmtVal(r.vals[1], r.unit), fmtVal(r.vals[2], r.unit),
			ratio(r.vals[0], r.vals[1]), ratio(r.vals[0], r.vals[2]), r.target, res)
	}
	tw.Flush()
	fmt.Println("(ratios are sidecar ÷ peer; for times and memory lower is better, for rates higher is better)")
}

func fmtVal(v float64, unit string) string {
	if v < 0 {
		return "n/a"
	}
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}

func ratio(a, b float64) string {
	if a < 0 || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func boolp(b bool) *bool { return &b }

// ---- preparation -----------------------------------------------------------

func prepare(root string, files int) error {
	proj := filepath.Join(root, "projects", "bench")
	for _, d := range []string{filepath.Join(root, "codex", "skills"), filepath.Join(proj, "many"), filepath.Join(proj, "up")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	line := []byte(strings.Repeat("0123456789abcdef", 8))
	for i := 0; i < files; i++ {
		if err := os.WriteFile(filepath.Join(proj, "many", fmt.Sprintf("file-%05d.txt", i)), line, 0o644); err != nil {
			return err
		}
	}
	small := make([]byte, 1024)
	for i := range small {
		small[i] = byte('a' + i%26)
	}
	if err := os.WriteFile(filepath.Join(proj, "small.txt"), small, 0o644); err != nil {
		return err
	}
	if err := benchproc.WriteFileMiB(filepath.Join(proj, "big.bin"), 256); err != nil {
		return err
	}
	// Everything readable and writable by the unprivileged processes.
	return filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return os.Chmod(p, 0o777)
		}
		return os.Chmod(p, 0o666)
	})
}

// ---- peers -----------------------------------------------------------------

func startSidecar(work, bin, root string) (*server, error) {
	c := benchproc.SidecarConfig(root)
	c.Services.Project.MaxUploadSize = 1 << 30
	// The peers write without If-Match; so does the benchmark.
	c.DavServer.AllowUnconditionalWrites = true
	p, err := benchproc.StartSidecar(work, bin, c, "dav")
	if err != nil {
		return nil, err
	}
	return &server{"sidecar", "https://" + p.Addr, p}, nil
}

func startXNet(root string) (*server, error) {
	if !tlsXNet {
		p, err := benchproc.StartChild(nil, "-serve-xnet", root)
		if err != nil {
			return nil, err
		}
		return &server{"x/net/webdav", "http://" + p.Addr, p}, nil
	}
	// The sidecar's pki directory (made when it started) and its client config.
	c := benchproc.SidecarConfig(root)
	p, err := benchproc.StartChild(nil, "-serve-xnet", root, "-xnet-pki", filepath.Dir(c.TLS.ClientCAFile))
	if err != nil {
		return nil, err
	}
	if p.TLS, err = benchproc.ClientTLS(c, pki.ProtoHTTP); err != nil {
		p.Stop()
		return nil, err
	}
	return &server{"x/net/webdav+TLS", "https://" + p.Addr, p}, nil
}

func nginxVersion() string {
	out, _ := exec.Command("nginx", "-v").CombinedOutput()
	return strings.TrimSpace(strings.TrimPrefix(string(out), "nginx version: "))
}

func startNginx(work, root string) (*server, error) {
	if _, err := exec.LookPath("nginx"); err != nil {
		return nil, errors.New("nginx is not installed: run make setup")
	}
	mod := nginxDAVModule()
	if mod == "" {
		return nil, errors.New("libnginx-mod-http-dav-ext is not installed: run make setup")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "nginx")
	confPath, err := writeNginxConf(dir, root, mod, port)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("nginx", "-c", confPath, "-p", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := benchproc.Start(cmd, syscall.SIGQUIT, func() (string, error) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return addr, nil
			}
		}
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return "", fmt.Errorf("nginx did not listen: %s", log)
	})
	if err != nil {
		return nil, err
	}
	return &server{"nginx", "http://" + addr, p}, nil
}

// nginxDAVModule is the path of nginx's WebDAV extension module (PROPFIND,
// OPTIONS), or "" when it is not installed.
func nginxDAVModule() string {
	for _, p := range []string{"/usr/lib/nginx/modules/ngx_http_dav_ext_module.so", "/usr/share/nginx/modules/ngx_http_dav_ext_module.so"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// freePort is a loopback TCP port free a moment ago (nginx takes a port in
// its configuration, not a listener).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// nginxConf is nginx serving root over WebDAV on one loopback port, all its
// files under one directory: module, user line, directory, port, root.
const nginxConf = `load_module %s;
%s
worker_processes auto;
daemon off;
pid %[3]s/nginx.pid;
error_log %[3]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_max_body_size 1g;
  client_body_temp_path %[3]s/body;
  proxy_temp_path %[3]s/proxy;
  fastcgi_temp_path %[3]s/fastcgi;
  uwsgi_temp_path %[3]s/uwsgi;
  scgi_temp_path %[3]s/scgi;
  server {
    listen 127.0.0.1:%[4]d;
    root %[5]s;
    location / {
      dav_methods PUT DELETE MKCOL COPY MOVE;
      dav_ext_methods PROPFIND OPTIONS;
      create_full_put_path on;
      dav_access user:rw group:rw all:rw;
    }
  }
}
`

// writeNginxConf makes nginx's directory (its temp paths too) and writes
// its configuration there, returning the configuration's path.
func writeNginxConf(dir, root, mod string, port int) (string, error) {
	for _, d := range []string{"body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
			return "", err
		}
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root root;"
	}
	confPath := filepath.Join(dir, "nginx.conf")
	return confPath, os.WriteFile(confPath, []byte(fmt.Sprintf(nginxConf, mod, user, dir, port, root)), 0o644)
}

// ---- memory ----------------------------------------------------------------

// memPIDs is the process that serves: nginx's workers (children of the
// master), else the process itself.
func memPIDs(s *server) []int {
	if s.name != "nginx" {
		return []int{s.PID}
	}
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", s.PID, s.PID))
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	if len(pids) == 0 {
		return []int{s.PID}
	}
	return pids
}

// maxKB is the largest /proc status key (VmHWM, VmRSS) among a peer's
// serving processes.
func maxKB(s *server, key string) int64 {
	var m int64 = -1
	for _, p := range memPIDs(s) {
		m = max(m, benchproc.StatusKB(p, key))
	}
	return m
}

func peakRows(servers []*server) row {
	r := row{name: "peak RSS, whole run (VmHWM)", unit: "MiB"}
	for i, s := range servers {
		r.vals[i] = float64(maxKB(s, "VmHWM")) / 1024
	}
	return r
}

// ---- load generator --------------------------------------------------------

// newClients is a client of newClient(s, conns) per peer s.
func newClients(servers []*server, conns int) []*http.Client {
	c := make([]*http.Client, len(servers))
	for i := range c {
		c[i] = newClient(servers[i], conns)
	}
	return c
}

// newClient is a client for s: over mutual TLS with the gateway's
// certificate for the sidecar (as the gateway reaches it), plain HTTP for
// the other peers.
func newClient(s *server, conns int) *http.Client {
	var tlsCfg *tls.Config
	if s.Proc != nil {
		tlsCfg = s.TLS
	}
	return &http.Client{
		Timeout: 2 * time.Minute,
		Transport: &http.Transport{
			TLSClientConfig:     tlsCfg,
			MaxIdleConns:        conns * 2,
			MaxIdleConnsPerHost: conns * 2,
			MaxConnsPerHost:     conns * 2,
			DisableCompression:  true,
			IdleConnTimeout:     time.Minute,
		},
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	return benchproc.Rank(d, int(float64(len(d)-1)*p))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

const allprop = `<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`

func benchPropfind(servers []*server) []row {
	lat := row{name: fmt.Sprintf("PROPFIND Depth 1, %d files, allprop, warm (median)", files), unit: "ms",
		target: "sidecar <= nginx"}
	grow := row{name: "  peak RSS growth during PROPFIND", unit: "MiB", target: "sidecar <= x/net"}
	cpu := row{name: "  server CPU per PROPFIND", unit: "ms"}
	ticks := make([]int64, len(servers))
	hdr := map[string]string{"Depth": "1", "Content-Type": "application/xml"}
	clients := newClients(servers, 1)
	base := make([]int64, len(servers))
	times := make([][]time.Duration, len(servers))
	for i, s := range servers {
		base[i] = maxKB(s, "VmRSS")
	}
	errs := benchproc.Interleave(propfindIters+3, len(servers), func(j, i int) error {
		s := servers[i]
		t0 := cpuTicks(s)
		code, n, d, err := benchproc.Do(clients[i], "PROPFIND", s.url+"/projects/bench/many/", hdr, strings.NewReader(allprop), int64(len(allprop)))
		if j >= 3 {
			ticks[i] += cpuTicks(s) - t0
		}
		if j == 0 {
			if got, err := countResponses(clients[i], s.url+"/projects/bench/many/"); err != nil || got != files+1 {
				return fmt.Errorf("%d responses (want %d), %v", got, files+1, err)
			}
		}
		if err != nil || code != 207 || n < int64(files)*100 {
			return fmt.Errorf("%d %d bytes %v", code, n, err)
		}
		if j >= 3 {
			times[i] = append(times[i], d)
		}
		return nil
	})
	for i, s := range servers {
		lat.vals[i] = ms(percentile(times[i], 0.5))
		cpu.vals[i] = float64(ticks[i]) * 10 / float64(len(times[i]))
		grow.vals[i] = float64(maxKB(s, "VmHWM")-base[i]) / 1024
	}
	markFailed(servers, "PROPFIND", errs, &lat, &grow, &cpu)
	lat.pass = boolp(lat.vals[0] >= 0 && lat.vals[0] <= lat.vals[2])
	grow.pass = boolp(grow.vals[0] >= 0 && grow.vals[0] <= grow.vals[1])
	return []row{lat, cpu, grow}
}

// countResponses checks that a PROPFIND answer is well-formed XML and
// counts its DAV:response elements.
func countResponses(c *http.Client, url string) (int, error) {
	req, err := http.NewRequest("PROPFIND", url, strings.NewReader(allprop)) // sets ContentLength
	if err != nil {
		return 0, err
	}
	req.Header.Set("Depth", "1")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	d := xml.NewDecoder(resp.Body)
	d.Strict = true
	n := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Space == "DAV:" && se.Name.Local == "response" {
			n++
		}
	}
}

func benchBigGet(servers []*server) []row {
	r := row{name: "GET 256 MiB (best of runs)", unit: "MiB/s", target: ">= 0.9x faster peer"}
	clients := newClients(servers, 1)
	errs := benchproc.Interleave(bigGetIters+1, len(servers), func(j, i int) error {
		code, n, d, err := benchproc.Do(clients[i], "GET", servers[i].url+"/projects/bench/big.bin", nil, nil, 0)
		if err != nil || code != 200 || n != 256<<20 {
			return fmt.Errorf("%d %d %v", code, n, err)
		}
		if j > 0 { // round 0 is a warm-up
			r.vals[i] = max(r.vals[i], 256/d.Seconds())
		}
		return nil
	})
	markFailed(servers, "GET big", errs, &r)
	r.pass = boolp(r.vals[0] >= 0.9*max(r.vals[1], r.vals[2]))
	return []row{r}
}

// rateN runs fn from workers goroutines for dur and returns requests per
// second and the number of requests done.
func rateN(workers int, dur time.Duration, fn func(w int, i int64) error) (float64, int64, error) {
	var done atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for i := int64(0); ctx.Err() == nil; i++ {
				if err := fn(w, i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					cancel()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok {
		return -1, 0, e
	}
	return float64(done.Load()) / time.Since(start).Seconds(), done.Load(), nil
}

// cpuTicks is user+system CPU time of a peer's serving processes, in clock
// ticks (USER_HZ, 100 per second on Linux).
func cpuTicks(s *server) int64 {
	var sum int64
	for _, p := range memPIDs(s) {
		// Fields after the command name "(...)": utime is the 12th, stime
		// the 13th; none when the file is not there.
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) < 13 {
			return -1
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		sum += u + st
	}
	return sum
}

// bestRate runs a rate phase of rateDur for every peer, round-robin over
// rounds, and keeps each peer's best round: in r (req/s, passing at >=
// factor times x/net's) and, as the row cpuName, its server CPU per request.
func bestRate(servers []*server, rounds int, what string, r row, factor float64, cpuName string, fn func(s *server, c *http.Client) func(int, int64) error) []row {
	r.unit = "req/s"
	c := row{name: cpuName, unit: "µs", vals: [3]float64{-1, -1, -1}}
	clients := newClients(servers, 16)
	errs := benchproc.Interleave(rounds, len(servers), func(_, i int) error {
		s := servers[i]
		t0 := cpuTicks(s)
		v, n, err := rateN(16, rateDur, fn(s, clients[i]))
		t1 := cpuTicks(s)
		if err != nil {
			return err
		}
		r.vals[i] = max(r.vals[i], v)
		if n > 0 && t0 >= 0 && t1 >= t0 {
			// 10 ms per tick, in microseconds per request.
			per := float64(t1-t0) * 10000 / float64(n)
			if c.vals[i] < 0 || per < c.vals[i] {
				c.vals[i] = per
			}
		}
		return nil
	})
	markFailed(servers, what, errs, &r)
	r.pass = boolp(r.vals[0] >= factor*r.vals[1])
	return []row{r, c}
}

// markFailed prints each failed peer's error as its failure at what, and
// its values in rows as n/a.
func markFailed(servers []*server, what string, errs []error, rows ...*row) {
	for i, s := range servers {
		if errs[i] != nil {
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", s.name, what, errs[i])
			for _, r := range rows {
				r.vals[i] = -1
			}
		}
	}
}

func benchSmallGet(servers []*server) []row {
	// issue #13: >= 0.9x x/net
	r := row{name: "16 concurrent 1 KiB GETs (best round)", target: ">= 0.9x x/net"}
	return bestRate(servers, smallRounds, "small GET", r, 0.9, "  server CPU per 1 KiB GET", func(s *server, c *http.Client) func(int, int64) error {
		url := s.url + "/projects/bench/small.txt"
		return func(int, int64) error {
			code, n, _, err := benchproc.Do(c, "GET", url, nil, nil, 0)
			if err == nil && (code != 200 || n != 1024) {
				err = fmt.Errorf("status %d, %d bytes", code, n)
			}
			return err
		}
	})
}

func benchSmallPut(servers []*server) []row {
	body := strings.Repeat("p", 4096)
	r := row{name: "PUT 4 KiB, 16 clients (best round; sidecar atomic + fsync)", target: ">= 0.5x x/net"}
	return bestRate(servers, putRounds, "PUT", r, 0.5, "  server CPU per 4 KiB PUT", func(s *server, c *http.Client) func(int, int64) error {
		return func(w int, n int64) error {
			url := fmt.Sprintf("%s/projects/bench/up/w%02d-%03d.txt", s.url, w, n%50)
			code, _, _, err := benchproc.Do(c, "PUT", url, nil, strings.NewReader(body), int64(len(body)))
			if err == nil && code != 201 && code != 204 && code != 200 {
				err = fmt.Errorf("status %d", code)
			}
			return err
		}
	})
}

// slowBody is size bytes that arrive at about bps bytes per second, 32 KiB
// at a time: net/http's transport reads a request body 32 KiB at a time,
// so each paced step is one read of the upload.
func slowBody(size, bps int64) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte{'u'}, 32<<10)
		start := time.Now()
		for sent := int64(0); sent < size; sent += int64(len(chunk)) {
			time.Sleep(time.Until(start.Add(time.Duration(float64(sent) / float64(bps) * float64(time.Second)))))
			if _, err := pw.Write(chunk[:min(int64(len(chunk)), size-sent)]); err != nil {
				return // the request ended early
			}
		}
		pw.Close()
	}()
	return pr
}

func benchLatencyUnderUpload(servers []*server) []row {
	dur := p99Dur
	idle := row{name: "GET 1 KiB p99, idle", unit: "ms"}
	busy := row{name: "GET 1 KiB p99 while a 64 MiB PUT streams", unit: "ms"}
	rel := row{name: "  p99 busy / idle", unit: "x", target: "sidecar <= 2x"}
	for i, s := range servers {
		c := newClient(s, 2)
		url := s.url + "/projects/bench/small.txt"
		sample := func(d time.Duration) []time.Duration {
			var out []time.Duration
			end := time.Now().Add(d)
			for time.Now().Before(end) && len(out) < 200000 {
				code, _, lat, err := benchproc.Do(c, "GET", url, nil, nil, 0)
				if err != nil || code != 200 {
					break
				}
				out = append(out, lat)
			}
			return out
		}
		sample(dur / 4)
		idle.vals[i] = ms(percentile(sample(dur), 0.99))
		upc := newClient(s, 1)
		done := make(chan error, 1)
		size := int64(64 << 20)
		go func() {
			// Stream over about 1.5x the sampling window so it is in flight throughout.
			bps := size * int64(time.Second) / int64(dur+dur/2)
			code, _, _, err := benchproc.Do(upc, "PUT", s.url+"/projects/bench/up/big-upload.bin", nil, slowBody(size, bps), size)
			if err == nil && code/100 != 2 {
				err = fmt.Errorf("status %d", code)
			}
			done <- err
		}()
		time.Sleep(dur / 10)
		busy.vals[i] = ms(percentile(sample(dur), 0.99))
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "%s 64 MiB PUT: %v\n", s.name, err)
		}
		if idle.vals[i] > 0 {
			rel.vals[i] = busy.vals[i] / idle.vals[i]
		}
	}
	rel.pass = boolp(rel.vals[0] <= 2)
	return []row{idle, busy, rel}
}

func peerName() string {
	if abMode {
		return "sidecar B"
	}
	return "x/net/webdav"
}
