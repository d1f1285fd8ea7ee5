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
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/deploy/bench/benchproc"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/rpcmeta"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// The agent and the project the run uses.
const agentID, project = "bench-a", "bench"

type params struct {
	sizeMiB int
	rounds  int
	calls   int
	entries int
	timeout time.Duration
	// gatewayProcs is the gateway's GOMAXPROCS (0: Go's default).
	gatewayProcs int
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == floorFlag {
		os.Exit(floorForwarder(os.Args[2], os.Args[3]))
	}
	var p params
	flag.IntVar(&p.sizeMiB, "size", 256, "size of the WebDAV GET file, MiB")
	flag.IntVar(&p.rounds, "rounds", 7, "measured GETs per path (after one warm-up each), alternating")
	flag.IntVar(&p.calls, "calls", 300, "measured calls per RPC and path (after 30 warm-up), alternating")
	flag.IntVar(&p.entries, "entries", 100, "files in the listed directory")
	flag.DurationVar(&p.timeout, "timeout", 10*time.Minute, "abort the whole run after this long")
	flag.IntVar(&p.gatewayProcs, "gateway-procs", 0, "GOMAXPROCS of the gateway process; 0 = Go's default (deploy/k8s limits the gateway to 1 CPU, so Go runs it with 1 there)")
	flag.Parse()

	// Bound the run even if a process hangs.
	time.AfterFunc(p.timeout, func() { benchproc.Exit("gatewaybench", fmt.Errorf("timed out after %s", p.timeout)) })

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
	benchproc.Exit("gatewaybench: failed", runErr)
	if rep == nil {
		benchproc.Exit("gatewaybench", fmt.Errorf("failed (see the messages above; %s)", strings.TrimSpace(res.String())))
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

// rig is what run measures: a sidecar over the filled volume, a gateway in
// front of it, the transport floor beside it and one HTTP client for all.
type rig struct {
	sc       *sidecartest.Sidecar
	gw       *gatewaytest.Gateway
	floorURL string
	client   *http.Client
}

func run(b verboseTB, p params) (*report, error) {
	b.Helper()
	rg, err := startRig(b, p)
	if err != nil {
		return nil, err
	}
	rep := &report{}
	if err := rg.measureGets(p, rep); err != nil {
		return nil, err
	}
	if err := rg.measureCalls(b, p, rep); err != nil {
		return nil, err
	}
	if err := rg.measureReferences(p, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// startRig fills the volume and starts the sidecar, the gateway and the
// transport floor (stopped in b's Cleanup).
func startRig(b verboseTB, p params) (*rig, error) {
	b.Helper()
	projects := proctest.TempDir(b, "gatewaybench-")
	if err := fill(filepath.Join(projects, project), p); err != nil {
		return nil, err
	}
	// Production log level: sidecartest defaults to debug, one line per call.
	sc := sidecartest.Start(b, sidecartest.Options{AgentID: agentID, ProjectsDir: projects, Configure: func(c *sidecar.Config) { c.Log.Level = "info" }})
	var env []string
	if p.gatewayProcs > 0 {
		env = []string{fmt.Sprintf("GOMAXPROCS=%d", p.gatewayProcs)}
	}
	gw := gatewaytest.Start(b, gatewaytest.Options{
		Agents: []gatewaytest.Agent{{ID: agentID, RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}},
		Env:    env,
	})
	floor, err := benchproc.StartChild(env, floorFlag, sc.RPCAddr, sc.TLSDir)
	if err != nil {
		return nil, fmt.Errorf("transport floor: %w", err)
	}
	b.Cleanup(floor.Stop)
	// The direct calls hold the gateway's certificate (the sidecar serves
	// only mutual TLS); the gateway's own URL is plain HTTP.
	client := &http.Client{Transport: &http.Transport{
		DisableCompression: true, MaxIdleConnsPerHost: 4, ReadBufferSize: 64 << 10,
		TLSClientConfig: sc.ClientTLS(b, pki.ProtoHTTP),
	}}
	return &rig{sc: sc, gw: gw, floorURL: "http://" + floor.Addr, client: client}, nil
}

// measureGets is the WebDAV GET throughput, direct and through the gateway.
func (rg *rig) measureGets(p params, rep *report) error {
	fileRel := "/projects/" + project + "/big.bin"
	gets := []struct {
		url, token string
		mibs       *[]float64
	}{{rg.sc.DavURL + fileRel, "", &rep.getDirect}, {rg.gw.URL + "/dav/" + agentID + fileRel, rg.gw.AdminToken, &rep.getGateway}}
	// Round 0 is a warm-up: page cache, connections.
	return errors.Join(benchproc.Interleave(1+p.rounds, len(gets), func(r, i int) error {
		n, d, err := get(rg.client, gets[i].url, gets[i].token)
		if want := int64(p.sizeMiB) << 20; err == nil && n != want {
			err = fmt.Errorf("GET: %d bytes, want %d", n, want)
		}
		if r > 0 { // the rate of the exchange in MiB/s
			*gets[i].mibs = append(*gets[i].mibs, float64(n)/(1<<20)/d.Seconds())
		}
		return err
	})...)
}

// restCall is one RPC measured three ways: direct gRPC, REST through the
// gateway, and the transport floor's forwarder.
type restCall struct {
	name                string
	direct, rest, floor func() error
}

// measureCalls is REST through the gateway against direct gRPC and the
// transport floor.
func (rg *rig) measureCalls(b verboseTB, p params, rep *report) error {
	for _, c := range rg.restCalls(b, p) {
		lat := latency{name: c.name}
		if err := timeCalls(p.calls, timedCall{c.name + " direct", c.direct, &lat.direct},
			timedCall{c.name + " via gateway", c.rest, &lat.gateway}, timedCall{c.name + " via the transport floor", c.floor, &lat.floor}); err != nil {
			return err
		}
		rep.latencies = append(rep.latencies, lat)
	}
	return nil
}

func (rg *rig) restCalls(b verboseTB, p params) []restCall {
	rpc := rg.sc.Dial(b)
	ws := &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: project}
	// The gateway sends x-operator and x-request-id; so does the direct
	// client, so the sidecar does the same work on both paths.
	ctx := metadata.AppendToOutgoingContext(context.Background(), rpcmeta.Operator, gatewaytest.AdminOperator, rpcmeta.RequestID, "gatewaybench")
	q := "workspace.scope=PROJECT&workspace.project_name=" + project
	api := rg.gw.URL + "/api/v1/agent-gateway/agents/" + agentID + "/projects/"
	client, token := rg.client, rg.gw.AdminToken
	return []restCall{
		{"ListProjectEntries",
			func() error {
				r, err := rpc.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, Path: "dir", PageSize: int32(p.entries)})
				if err == nil && len(r.GetEntries()) != p.entries {
					err = fmt.Errorf("ListEntries: %d entries, want %d", len(r.GetEntries()), p.entries)
				}
				return err
			},
			func() error {
				return restGet(client, api+"entries?"+q+fmt.Sprintf("&path=dir&page_size=%d", p.entries), token)
			},
			func() error {
				return restGet(client, rg.floorURL+"/entries?"+url.Values{"project": {project}, "n": {fmt.Sprint(p.entries)}}.Encode(), "")
			}},
		{"GetProjectFile",
			func() error {
				r, err := rpc.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "small.txt"})
				if want := len(smallText); err == nil && len(r.GetContent()) != want {
					err = fmt.Errorf("GetFile: %d bytes, want %d", len(r.GetContent()), want)
				}
				return err
			},
			func() error { return restGet(client, api+"files?"+q+"&path=small.txt", token) },
			func() error { return restGet(client, rg.floorURL+"/file?project="+url.QueryEscape(project), "") }},
	}
}

// measureReferences: one bare HTTP round trip to the gateway (/healthz: no
// auth, no sidecar), the floor any REST call through it pays on top of the
// sidecar's own gRPC time; and an authenticated REST call that never
// reaches a sidecar (ListAgents): auth, routing and JSON without the
// sidecar hop.
func (rg *rig) measureReferences(p params, rep *report) error {
	client, gw := rg.client, rg.gw
	return timeCalls(p.calls, timedCall{"healthz", func() error { return restGet(client, gw.URL+"/healthz", "") }, &rep.healthz},
		timedCall{"ListAgents", func() error { return restGet(client, gw.URL+"/api/v1/agent-gateway/agents", gw.AdminToken) }, &rep.listAgents})
}

// timedCall is one path of a latency figure: its name (in errors), the
// call, and where its measured latencies go.
type timedCall struct {
	name string
	f    func() error
	out  *[]time.Duration
}

// timeCalls times the calls in turn, 30 warm-up rounds and then n measured.
func timeCalls(n int, calls ...timedCall) error {
	return errors.Join(benchproc.Interleave(30+n, len(calls), func(r, i int) error {
		start := time.Now()
		err := calls[i].f()
		d := time.Since(start)
		if err != nil {
			return fmt.Errorf("%s: %w", calls[i].name, err)
		}
		if r >= 30 {
			*calls[i].out = append(*calls[i].out, d)
		}
		return nil
	})...)
}

// fill creates the project: big.bin (p.sizeMiB), small.txt (editable text)
// and dir/ with p.entries small files.
func fill(dir string, p params) error {
	if err := os.MkdirAll(filepath.Join(dir, "dir"), 0o755); err != nil {
		return err
	}
	if err := benchproc.WriteFileMiB(filepath.Join(dir, "big.bin"), p.sizeMiB); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte(smallText), 0o644); err != nil {
		return err
	}
	for i := range p.entries {
		if err := os.WriteFile(filepath.Join(dir, "dir", fmt.Sprintf("file-%03d.txt", i)), []byte(line), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// line is the text of the listed files, and small.txt's line.
const line = "the quick brown fox jumps over the lazy dog 0123456789 abcdefghi\n"

// smallText is the editable file GetProjectFile reads: about 16 KiB.
var smallText = strings.Repeat(line, 16<<10/len(line))

func restGet(c *http.Client, url, token string) error {
	_, _, err := get(c, url, token)
	return err
}

// get GETs url (with token as the bearer, if set), reads the body and
// returns its size and the time from sending the request to the body's
// end; a status other than 200 is an error.
func get(c *http.Client, url, token string) (int64, time.Duration, error) {
	var hdr map[string]string
	if token != "" {
		hdr = map[string]string{"Authorization": "Bearer " + token}
	}
	code, n, d, err := benchproc.Do(c, http.MethodGet, url, hdr, nil, 0)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", strings.SplitN(url, "/", 4)[3], code, http.StatusText(code))
	}
	return n, d, err
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

// pct is the q-quantile of xs.
func pct(xs []time.Duration, q float64) time.Duration {
	return benchproc.Rank(xs, int(float64(len(xs))*q))
}

func verdict(ok bool) string { return benchproc.Verdict(ok, "meets target", "MISSES target") }

func (r *report) print(w io.Writer, p params) {
	fmt.Fprintf(w, "gatewaybench: %s, %d CPUs, %s/%s, %s, load average %s\n", cmp.Or(benchproc.ProcField("/proc/cpuinfo", "model name"), "unknown CPU"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadAvg())
	procs := "Go's default"
	if p.gatewayProcs > 0 {
		procs = fmt.Sprint(p.gatewayProcs)
	}
	fmt.Fprintf(w, "gateway GOMAXPROCS: %s (deploy/k8s: limits.cpu 1, so Go runs it with 1); sidecar and client: Go's default\n", procs)
	fmt.Fprintf(w, "\nWebDAV GET %d MiB (%d rounds, alternating)\n", p.sizeMiB, p.rounds)
	d, g := benchproc.Median(r.getDirect), benchproc.Median(r.getGateway)
	bd, bg := slices.Max(r.getDirect), slices.Max(r.getGateway)
	fmt.Fprintf(w, "| path | median MiB/s | best MiB/s |\n|---|---|---|\n| sidecar direct | %.0f | %.0f |\n| gateway /dav/ | %.0f | %.0f |\n", d, bd, g, bg)
	fmt.Fprintf(w, "ratio gateway/direct = %.2fx median, %.2fx best (target >= 0.60x): %s\n", g/d, bg/bd, verdict(g/d >= 0.6))
	fmt.Fprintf(w, "\nREST via gateway vs direct gRPC (%d calls each, sequential, the three paths alternating)\n", p.calls)
	fmt.Fprintf(w, "| call | direct p50 | gateway p50 | direct p90 | gateway p90 | direct p99 | gateway p99 | ratio p50 | transport floor p50 | floor ratio p50 | gateway/floor p50 |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	var verdicts []string
	for _, l := range r.latencies {
		dm, gm, fm := benchproc.Median(l.direct), benchproc.Median(l.gateway), benchproc.Median(l.floor)
		ratio, overFloor := float64(gm)/float64(dm), float64(gm)/float64(fm)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.2fx | %s | %.2fx | %.2fx |\n", l.name,
			us(dm), us(gm), us(pct(l.direct, .9)), us(pct(l.gateway, .9)),
			us(pct(l.direct, .99)), us(pct(l.gateway, .99)), ratio, us(fm), float64(fm)/float64(dm), overFloor)
		// Issue #13: the target is against the transport floor (no gateway
		// beats its own transport); the ratio to direct gRPC is shown only.
		verdicts = append(verdicts, fmt.Sprintf("%s p50 gateway/floor %.2fx (target <= 1.25x): %s", l.name, overFloor, verdict(overFloor <= 1.25)))
	}
	fmt.Fprintf(w, "transport floor: a bare net/http -> grpc-go forwarder (this binary, same GOMAXPROCS as the gateway; no auth, no JSON, no logs) for the same calls\n")
	fmt.Fprintf(w, "reference: bare HTTP round trip to the gateway (GET /healthz) p50 %s, p90 %s\n", us(benchproc.Median(r.healthz)), us(pct(r.healthz, .9)))
	fmt.Fprintf(w, "reference: authenticated REST call with no sidecar hop (ListAgents) p50 %s, p90 %s\n", us(benchproc.Median(r.listAgents)), us(pct(r.listAgents, .9)))
	for _, v := range verdicts {
		fmt.Fprintln(w, v)
	}
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d.Nanoseconds())/1e3) }

// loadAvg is the 1-minute load average: other work on the machine moves
// these figures.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// floorFlag re-executes this binary as the transport-floor forwarder.
const floorFlag = "-run-transport-floor"

// floorForwarder is the transport floor: an HTTP server on 127.0.0.1:0 that
// turns GET /file?project=P and GET /entries?project=P&n=N into the
// sidecar's GetFile("small.txt") and ListEntries("dir") over one grpc-go
// connection configured like the gateway's (same metadata, same fixed flow
// control windows), and answers with the file's bytes or the entry names.
// It prints its address on stdout and serves until killed. It connects
// with the gateway's certificate from tlsDir, as the gateway does.
func floorForwarder(rpcAddr, tlsDir string) int {
	src, err := pki.NewSource(pki.GatewayFiles(tlsDir), nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "transport floor:", err)
		return 1
	}
	creds := credentials.NewTLS(src.SidecarClientConfig(agentID, pki.ProtoGRPC))
	conn, err := grpc.NewClient(rpcAddr, grpc.WithTransportCredentials(creds),
		grpc.WithInitialWindowSize(4<<20), grpc.WithInitialConnWindowSize(8<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, "transport floor:", err)
		return 1
	}
	rpc := workspacev1.NewWorkspaceServiceClient(conn)
	call := func(r *http.Request) (context.Context, *workspacev1.WorkspaceRef) {
		ctx := metadata.AppendToOutgoingContext(r.Context(), rpcmeta.Operator, gatewaytest.AdminOperator, rpcmeta.RequestID, "floor")
		return ctx, &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: r.URL.Query().Get("project")}
	}
	// reply answers with body, or with err as a 502.
	reply := func(w http.ResponseWriter, body string, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		io.WriteString(w, body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /file", func(w http.ResponseWriter, r *http.Request) {
		ctx, ws := call(r)
		resp, err := rpc.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "small.txt"})
		reply(w, resp.GetContent(), err)
	})
	mux.HandleFunc("GET /entries", func(w http.ResponseWriter, r *http.Request) {
		ctx, ws := call(r)
		var n int32
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		resp, err := rpc.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, Path: "dir", PageSize: n})
		var buf strings.Builder // no copy for reply
		for _, e := range resp.GetEntries() {
			buf.WriteString(e.GetName())
			buf.WriteByte('\n')
		}
		reply(w, buf.String(), err)
	})
	fmt.Fprintln(os.Stderr, "transport floor:", benchproc.ServeChild(mux, nil))
	return 1
}
