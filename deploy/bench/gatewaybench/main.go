// Command gatewaybench measures what the agent-gateway costs on top of a
// sidecar, in one run on one machine, against the sidecar alone:
//
//   - WebDAV GET of a large file (default 256 MiB) through the gateway's
//     WebDAV view (/dav/{agent}/projects/...) vs straight from the sidecar's
//     WebDAV server (target: gateway ≥ 0.6× the direct throughput);
//   - REST ListProjectEntries and GetProjectFile through the gateway vs the
//     same calls as direct gRPC to the sidecar, and vs a "transport floor":
//     this same binary re-executed as a bare forwarder (net/http server, one
//     grpc-go client, no auth, no routing, no JSON, no logs) that answers
//     the same two calls through the same sidecar. It is the least any
//     gateway built on net/http and grpc-go pays on this machine for its
//     extra process (target, issue #13: gateway p50 ≤ 1.25× the floor's;
//     the old target against direct gRPC is withdrawn).
//
// It starts the real binaries (sidecar/sidecartest and gateway/gatewaytest
// build them with `go build`, or use $AGENT_SIDECAR_BIN / $AGENT_GATEWAY_BIN)
// on 127.0.0.1 only; every loop is bounded in count, and -timeout bounds the
// whole run. Run it with `go run ./deploy/bench/gatewaybench` (make bench).
// Results: docs/benchmarks/gateway.md.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

type params struct {
	sizeMiB   int
	rounds    int
	calls     int
	entries   int
	timeout   time.Duration
	agentID   string
	project   string
	smallSize int
	// gatewayProcs is the gateway's GOMAXPROCS (0: Go's default).
	gatewayProcs int
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == floorFlag {
		os.Exit(floorForwarder(os.Args[2]))
	}
	var p params
	flag.IntVar(&p.sizeMiB, "size", 256, "size of the WebDAV GET file, MiB")
	flag.IntVar(&p.rounds, "rounds", 7, "measured GETs per path (after one warm-up each), alternating")
	flag.IntVar(&p.calls, "calls", 300, "measured calls per RPC and path (after 30 warm-up), alternating")
	flag.IntVar(&p.entries, "entries", 100, "files in the listed directory")
	flag.DurationVar(&p.timeout, "timeout", 10*time.Minute, "abort the whole run after this long")
	flag.IntVar(&p.gatewayProcs, "gateway-procs", 0, "GOMAXPROCS of the gateway process; 0 = Go's default (deploy/k8s limits the gateway to 1 CPU, so Go runs it with 1 there)")
	flag.Parse()
	p.agentID, p.project, p.smallSize = "bench-a", "bench", 16<<10

	// Bound the run even if a process hangs.
	go func() {
		time.Sleep(p.timeout)
		fmt.Fprintf(os.Stderr, "gatewaybench: timed out after %s\n", p.timeout)
		os.Exit(1)
	}()

	// sidecartest and gatewaytest take a testing.TB (for Cleanup, Fatalf and
	// logs); testing.Benchmark hands us a *testing.B outside `go test`.
	var rep *report
	var runErr error
	res := testing.Benchmark(func(b *testing.B) {
		if rep != nil || runErr != nil {
			return // testing.Benchmark may call again with a larger N
		}
		rep, runErr = run(verboseTB{b}, p)
	})
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "gatewaybench: failed: %v\n", runErr)
		os.Exit(1)
	}
	if rep == nil {
		fmt.Fprintf(os.Stderr, "gatewaybench: failed (see the messages above; %s)\n", strings.TrimSpace(res.String()))
		os.Exit(1)
	}
	rep.print(os.Stdout, p)
}

// verboseTB prints what the harnesses report: testing.Benchmark discards a
// *testing.B's log outside `go test`.
type verboseTB struct{ *testing.B }

func (t verboseTB) Log(args ...any)                 { fmt.Fprintln(os.Stderr, args...) }
func (t verboseTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t verboseTB) Error(args ...any)               { t.Log(args...); t.B.Fail() }
func (t verboseTB) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.B.Fail()
}
func (t verboseTB) Fatal(args ...any) { t.Log(args...); t.B.FailNow() }
func (t verboseTB) Fatalf(format string, args ...any) {
	t.Logf(format, args...)
	t.B.FailNow()
}

func run(b verboseTB, p params) (*report, error) {
	b.Helper()
	projects, err := os.MkdirTemp("", "gatewaybench-")
	if err != nil {
		return nil, err
	}
	b.Cleanup(func() { os.RemoveAll(projects) })
	if err := os.Chmod(projects, 0o755); err != nil {
		return nil, err
	}
	if err := fill(filepath.Join(projects, p.project), p); err != nil {
		return nil, err
	}
	// Production log level: sidecartest defaults to debug, one line per call.
	sc := sidecartest.Start(b, sidecartest.Options{ProjectsDir: projects, Configure: func(c *sidecar.Config) { c.Log.Level = "info" }})
	var env []string
	if p.gatewayProcs > 0 {
		env = []string{fmt.Sprintf("GOMAXPROCS=%d", p.gatewayProcs)}
	}
	gw := gatewaytest.Start(b, gatewaytest.Options{
		Agents: []gatewaytest.Agent{{ID: p.agentID, RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}},
		Env:    env,
	})
	floorURL, err := startFloor(b, sc.RPCAddr, env)
	if err != nil {
		return nil, err
	}
	rep := &report{}

	// --- WebDAV GET throughput ---
	client := &http.Client{Transport: &http.Transport{
		DisableCompression: true, MaxIdleConnsPerHost: 4, ReadBufferSize: 64 << 10,
	}}
	fileRel := "/projects/" + p.project + "/big.bin"
	direct := func() (float64, error) { return getMiBs(client, sc.DavURL+fileRel, "", int64(p.sizeMiB)<<20) }
	viaGW := func() (float64, error) {
		return getMiBs(client, gw.URL+"/dav/"+p.agentID+fileRel, gw.AdminToken, int64(p.sizeMiB)<<20)
	}
	for _, f := range []func() (float64, error){direct, viaGW} { // warm-up: page cache, connections
		if _, err := f(); err != nil {
			return nil, err
		}
	}
	for range p.rounds {
		d, err := direct()
		if err != nil {
			return nil, err
		}
		g, err := viaGW()
		if err != nil {
			return nil, err
		}
		rep.getDirect = append(rep.getDirect, d)
		rep.getGateway = append(rep.getGateway, g)
	}

	// --- REST through the gateway vs direct gRPC ---
	rpc := sc.Dial(b)
	ws := &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: p.project}
	// The gateway sends x-operator and x-request-id; so does the direct
	// client, so the sidecar does the same work on both paths.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-operator", gatewaytest.AdminOperator, "x-request-id", "gatewaybench")
	q := "workspace.scope=PROJECT&workspace.project_name=" + p.project
	api := gw.URL + "/api/v1/agent-gateway/agents/" + p.agentID + "/projects/"
	calls := []struct {
		name   string
		direct func() error
		rest   func() error
		floor  func() error
	}{
		{"ListProjectEntries",
			func() error {
				r, err := rpc.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, Path: "dir", PageSize: int32(p.entries)})
				if err == nil && len(r.GetEntries()) != p.entries {
					err = fmt.Errorf("ListEntries: %d entries, want %d", len(r.GetEntries()), p.entries)
				}
				return err
			},
			func() error {
				return restGet(client, api+"entries?"+q+fmt.Sprintf("&path=dir&page_size=%d", p.entries), gw.AdminToken)
			},
			func() error {
				return restGet(client, floorURL+"/entries?"+url.Values{"project": {p.project}, "n": {fmt.Sprint(p.entries)}}.Encode(), "")
			}},
		{"GetProjectFile",
			func() error {
				r, err := rpc.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "small.txt"})
				if want := len(smallText(p)); err == nil && len(r.GetContent()) != want {
					err = fmt.Errorf("GetFile: %d bytes, want %d", len(r.GetContent()), want)
				}
				return err
			},
			func() error { return restGet(client, api+"files?"+q+"&path=small.txt", gw.AdminToken) },
			func() error { return restGet(client, floorURL+"/file?project="+url.QueryEscape(p.project), "") }},
	}
	for _, c := range calls {
		var lat latency
		lat.name = c.name
		for i := range 30 + p.calls {
			d1, err := timed(c.direct)
			if err != nil {
				return nil, fmt.Errorf("%s direct: %w", c.name, err)
			}
			d2, err := timed(c.rest)
			if err != nil {
				return nil, fmt.Errorf("%s via gateway: %w", c.name, err)
			}
			d3, err := timed(c.floor)
			if err != nil {
				return nil, fmt.Errorf("%s via the transport floor: %w", c.name, err)
			}
			if i >= 30 {
				lat.floor = append(lat.floor, d3)
				lat.direct = append(lat.direct, d1)
				lat.gateway = append(lat.gateway, d2)
			}
		}
		rep.latencies = append(rep.latencies, lat)
	}
	// Reference: one bare HTTP round trip to the gateway (/healthz: no auth,
	// no sidecar), the floor any REST call through it pays on top of the
	// sidecar's own gRPC time.
	// And an authenticated REST call that never reaches a sidecar
	// (ListAgents): auth, routing and JSON without the sidecar hop.
	for i := range 30 + p.calls {
		d, err := timed(func() error { return restGet(client, gw.URL+"/healthz", "") })
		if err != nil {
			return nil, fmt.Errorf("healthz: %w", err)
		}
		d2, err := timed(func() error { return restGet(client, gw.URL+"/api/v1/agent-gateway/agents", gw.AdminToken) })
		if err != nil {
			return nil, fmt.Errorf("ListAgents: %w", err)
		}
		if i >= 30 {
			rep.healthz = append(rep.healthz, d)
			rep.listAgents = append(rep.listAgents, d2)
		}
	}
	return rep, nil
}

// fill creates the project: big.bin (p.sizeMiB), small.txt (editable text)
// and dir/ with p.entries small files.
func fill(dir string, p params) error {
	if err := os.MkdirAll(filepath.Join(dir, "dir"), 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "big.bin"))
	if err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for range p.sizeMiB {
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	line := "the quick brown fox jumps over the lazy dog 0123456789 abcdefghi\n"
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte(smallText(p)), 0o644); err != nil {
		return err
	}
	for i := range p.entries {
		if err := os.WriteFile(filepath.Join(dir, "dir", fmt.Sprintf("file-%03d.txt", i)), []byte(line), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// smallText is the editable file GetProjectFile reads: about p.smallSize bytes.
func smallText(p params) string {
	line := "the quick brown fox jumps over the lazy dog 0123456789 abcdefghi\n"
	return strings.Repeat(line, p.smallSize/len(line))
}

func getMiBs(c *http.Client, url, token string, want int64) (float64, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", strings.SplitN(url, "/", 4)[3], resp.Status)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, err
	}
	if n != want {
		return 0, fmt.Errorf("GET: %d bytes, want %d", n, want)
	}
	return float64(n) / (1 << 20) / time.Since(start).Seconds(), nil
}

func restGet(c *http.Client, url, token string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

type latency struct {
	name                   string
	direct, gateway, floor []time.Duration
}

type report struct {
	getDirect, getGateway []float64
	latencies             []latency
	healthz, listAgents   []time.Duration
}

func median[T float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func pct(xs []time.Duration, q float64) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))]
}

func verdict(ok bool) string {
	if ok {
		return "meets target"
	}
	return "MISSES target"
}

func (r *report) print(w io.Writer, p params) {
	fmt.Fprintf(w, "gatewaybench: %s, %d CPUs, %s/%s, %s, load average %s\n", cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadAvg())
	procs := "Go's default"
	if p.gatewayProcs > 0 {
		procs = fmt.Sprint(p.gatewayProcs)
	}
	fmt.Fprintf(w, "gateway GOMAXPROCS: %s (deploy/k8s: limits.cpu 1, so Go runs it with 1); sidecar and client: Go's default\n", procs)
	fmt.Fprintf(w, "\nWebDAV GET %d MiB (%d rounds, alternating)\n", p.sizeMiB, p.rounds)
	d, g := median(r.getDirect), median(r.getGateway)
	bd, bg := slices.Max(r.getDirect), slices.Max(r.getGateway)
	fmt.Fprintf(w, "| path | median MiB/s | best MiB/s |\n|---|---|---|\n| sidecar direct | %.0f | %.0f |\n| gateway /dav/ | %.0f | %.0f |\n", d, bd, g, bg)
	fmt.Fprintf(w, "ratio gateway/direct = %.2fx median, %.2fx best (target >= 0.60x): %s\n", g/d, bg/bd, verdict(g/d >= 0.6))
	fmt.Fprintf(w, "\nREST via gateway vs direct gRPC (%d calls each, sequential, the three paths alternating)\n", p.calls)
	fmt.Fprintf(w, "| call | direct p50 | gateway p50 | direct p90 | gateway p90 | direct p99 | gateway p99 | ratio p50 | transport floor p50 | floor ratio p50 | gateway/floor p50 |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	var verdicts []string
	for _, l := range r.latencies {
		ratio := float64(median(l.gateway)) / float64(median(l.direct))
		overFloor := float64(median(l.gateway)) / float64(median(l.floor))
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.2fx | %s | %.2fx | %.2fx |\n", l.name,
			us(median(l.direct)), us(median(l.gateway)), us(pct(l.direct, .9)), us(pct(l.gateway, .9)),
			us(pct(l.direct, .99)), us(pct(l.gateway, .99)), ratio,
			us(median(l.floor)), float64(median(l.floor))/float64(median(l.direct)), overFloor)
		// Issue #13: the target is against the transport floor (no gateway
		// beats its own transport); the ratio to direct gRPC is shown only.
		verdicts = append(verdicts, fmt.Sprintf("%s p50 gateway/floor %.2fx (target <= 1.25x): %s", l.name, overFloor, verdict(overFloor <= 1.25)))
	}
	fmt.Fprintf(w, "transport floor: a bare net/http -> grpc-go forwarder (this binary, same GOMAXPROCS as the gateway; no auth, no JSON, no logs) for the same calls\n")
	fmt.Fprintf(w, "reference: bare HTTP round trip to the gateway (GET /healthz) p50 %s, p90 %s\n", us(median(r.healthz)), us(pct(r.healthz, .9)))
	fmt.Fprintf(w, "reference: authenticated REST call with no sidecar hop (ListAgents) p50 %s, p90 %s\n", us(median(r.listAgents)), us(pct(r.listAgents, .9)))
	for _, v := range verdicts {
		fmt.Fprintln(w, v)
	}
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d.Nanoseconds())/1e3) }

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// loadAvg is the 1-minute load average: other work on the machine moves
// these figures.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// floorFlag re-executes this binary as the transport-floor forwarder.
const floorFlag = "-run-transport-floor"

// startFloor starts the transport-floor forwarder in front of the sidecar at
// rpcAddr, with the gateway's environment (GOMAXPROCS), and returns its URL.
func startFloor(b verboseTB, rpcAddr string, env []string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(self, floorFlag, rpcAddr)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return "", fmt.Errorf("transport floor: no address: %w", r.err)
		}
		return "http://" + strings.TrimSpace(r.line), nil
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("transport floor: no address after 30s")
	}
}

// floorForwarder is the transport floor: an HTTP server on 127.0.0.1:0 that
// turns GET /file?project=P and GET /entries?project=P&n=N into the
// sidecar's GetFile("small.txt") and ListEntries("dir") over one grpc-go
// connection configured like the gateway's (same metadata, same fixed flow
// control windows), and answers with the file's bytes or the entry names.
// It prints its address on stdout and serves until killed.
func floorForwarder(rpcAddr string) int {
	conn, err := grpc.NewClient(rpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(4<<20), grpc.WithInitialConnWindowSize(8<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, "transport floor:", err)
		return 1
	}
	rpc := workspacev1.NewWorkspaceServiceClient(conn)
	call := func(r *http.Request) (context.Context, *workspacev1.WorkspaceRef) {
		ctx := metadata.AppendToOutgoingContext(r.Context(), "x-operator", gatewaytest.AdminOperator, "x-request-id", "floor")
		return ctx, &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: r.URL.Query().Get("project")}
	}
	fail := func(w http.ResponseWriter, err error) { http.Error(w, err.Error(), http.StatusBadGateway) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /file", func(w http.ResponseWriter, r *http.Request) {
		ctx, ws := call(r)
		resp, err := rpc.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "small.txt"})
		if err != nil {
			fail(w, err)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(resp.GetContent())))
		io.WriteString(w, resp.GetContent())
	})
	mux.HandleFunc("GET /entries", func(w http.ResponseWriter, r *http.Request) {
		ctx, ws := call(r)
		var n int32
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		resp, err := rpc.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, Path: "dir", PageSize: n})
		if err != nil {
			fail(w, err)
			return
		}
		var buf []byte
		for _, e := range resp.GetEntries() {
			buf = append(append(buf, e.GetName()...), '\n')
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(buf)))
		w.Write(buf)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "transport floor:", err)
		return 1
	}
	fmt.Println(ln.Addr().String())
	err = http.Serve(ln, mux)
	fmt.Fprintln(os.Stderr, "transport floor:", err)
	return 1
}
