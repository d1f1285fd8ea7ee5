//go:build k8stier

package tier

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/restwalk"
)

// TestDiscoveryBench (make bench-discovery; docs/BENCHMARKS.md): N
// discovered agents (AWF_DISCOVERY_AGENTS, default 10,000; EndpointSlices
// created in a real kube-apiserver) beside the static registry of the same
// size, in the same run: each gateway's RSS once every agent is listed,
// and the p50 of a ListAgents page of 100 over interleaved walks of every
// page. It measures and prints; it asserts only that both list all N.
func TestDiscoveryBench(t *testing.T) {
	n := 10000
	if v := os.Getenv("AWF_DISCOVERY_AGENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("AWF_DISCOVERY_AGENTS=%q is not a count", v)
		}
	}
	cp := startControlPlane(t, t.TempDir(), binDir(t), false)
	rootBinaries(t)
	const ns = "bench"
	cp.applyYAML("apiVersion: v1\nkind: Namespace\nmetadata: {name: bench}\n")
	start := time.Now()
	createSlices(t, cp, ns, n)
	t.Logf("%d EndpointSlices created in %v", n, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	d := gatewaytest.Start(t, gatewaytest.Options{DefaultAgent: "-", Configure: func(c *gateway.Config) {
		c.Kubernetes.Kubeconfig, c.Kubernetes.Namespace = cp.kubeconfig, ns
		c.AgentRuntime.Discovery.Enabled = true
	}})
	dc := restwalk.Client{URL: d.URL, Token: d.AdminToken}
	for total(t, dc) != n {
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("the discovering gateway lists %d of %d agents after 5 minutes", total(t, dc), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("discovering gateway: all %d agents listed %v after its start", n, time.Since(start).Round(time.Millisecond))

	static := make([]gatewaytest.Agent, n)
	for i := range static {
		static[i] = gatewaytest.Agent{ID: benchID(i), RPCAddr: "127.0.0.1:9", DavURL: "https://127.0.0.1:9"}
	}
	s := gatewaytest.Start(t, gatewaytest.Options{Agents: static, DefaultAgent: "-"})
	sc := restwalk.Client{URL: s.URL, Token: s.AdminToken}
	if got := total(t, sc); got != n {
		t.Fatalf("the static gateway lists %d of %d", got, n)
	}

	var dt, st []time.Duration
	for range 5 { // interleaved walks of every page
		dt = append(dt, walkPages(t, dc)...)
		st = append(st, walkPages(t, sc)...)
	}
	report := fmt.Sprintf("agents %d\n%-22s %12s %16s\n%-22s %12s %16v\n%-22s %12s %16v\nratio p50 discovered/static %.2f, RSS %.2f\n",
		n, "registry", "RSS", "ListAgents p50",
		"discovered (informer)", mib(rss(t, d.PID())), p50(dt),
		"static (config)", mib(rss(t, s.PID())), p50(st),
		float64(p50(dt))/float64(p50(st)), float64(rss(t, d.PID()))/float64(rss(t, s.PID())))
	t.Log("\n" + report)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		writeFile(t, filepath.Join(out, "discovery.txt"), report, 0o644)
	}
}

func benchID(i int) string { return fmt.Sprintf("agent-%05d", i) }

// createSlices creates n ready slices (one agent each) with 16 workers.
func createSlices(t *testing.T, cp *controlPlane, ns string, n int) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: cp.apiURL, BearerToken: cp.token, QPS: 1000, Burst: 2000,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	ids := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 16 {
		wg.Go(func() {
			for i := range ids {
				es := &discoveryv1.EndpointSlice{
					ObjectMeta:  metav1.ObjectMeta{Name: benchID(i), Labels: map[string]string{"agentworkspace.io/agent-id": benchID(i)}},
					AddressType: discoveryv1.AddressTypeIPv4,
					Ports: []discoveryv1.EndpointPort{
						{Name: ptr("grpc"), Port: ptr(int32(9091)), Protocol: ptr(corev1.ProtocolTCP)},
						{Name: ptr("webdav"), Port: ptr(int32(9092)), Protocol: ptr(corev1.ProtocolTCP)},
					},
					Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 1+i/65536, i/256%256, i%256)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}},
				}
				if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), es, metav1.CreateOptions{}); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("creating EndpointSlices: %v", firstErr)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// total is ListAgents' total.
func total(t *testing.T, c restwalk.Client) int {
	t.Helper()
	r := restwalk.Must(t, 200, c.Do(t, "GET", restwalk.API+"?page_size=1", nil), "ListAgents")
	v, _ := r.JSON["total"].(float64)
	return int(v)
}

// walkPages times every page of 100 of ListAgents.
func walkPages(t *testing.T, c restwalk.Client) []time.Duration {
	t.Helper()
	var out []time.Duration
	cursor := ""
	for {
		start := time.Now()
		r := restwalk.Must(t, 200, c.Do(t, "GET", restwalk.API+"?page_size=100&cursor="+cursor, nil), "ListAgents page")
		out = append(out, time.Since(start))
		if cursor, _ = r.JSON["next_cursor"].(string); cursor == "" {
			return out
		}
	}
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// rss is VmRSS of pid in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
