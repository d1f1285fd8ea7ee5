package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/metrics"
	"github.com/agentworkspace/files/gateway/internal/portal"
	"github.com/agentworkspace/files/gateway/internal/session"
)

// cannedService answers the two hot GET routes instantly with the
// gatewaybench's payloads (100 entries; a 16 KiB text file).
type cannedService struct {
	workspacev1.UnimplementedWorkspaceManagementServiceServer
	list *workspacev1.ListEntriesResponse
	file *workspacev1.GetFileResponse
}

func (c *cannedService) ListAgents(context.Context, *workspacev1.ListAgentsRequest) (*workspacev1.ListAgentsResponse, error) {
	return &workspacev1.ListAgentsResponse{Agents: []*workspacev1.Agent{{AgentId: "a", Provider: "p", ProjectManagementEnabled: true, IsDefault: true}}}, nil
}

func (c *cannedService) ListProjectEntries(context.Context, *workspacev1.ListProjectEntriesRequest) (*workspacev1.ListEntriesResponse, error) {
	return c.list, nil
}

func (c *cannedService) GetProjectFile(context.Context, *workspacev1.GetProjectFileRequest) (*workspacev1.GetFileResponse, error) {
	return c.file, nil
}

// BenchmarkHTTPSide measures only the gateway's HTTP side of a REST call
// (HTTP client round trip over loopback, echo, middleware, auth,
// grpc-gateway routing and query parsing, JSON, access log as JSON to
// io.Discard) with a service that answers instantly: what a REST call costs
// on top of the gateway's sidecar hop.
func BenchmarkHTTPSide(b *testing.B) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		b.Fatal(err)
	}
	a := auth.New(config.Auth{Tokens: []config.Token{{Operator: "op", Role: "admin", SHA256: config.HashToken("tok")}}}, session.New(nil, 0, 0))
	ts := timestamppb.New(time.Date(2026, 11, 30, 10, 0, 0, 123000000, time.UTC))
	svc := &cannedService{list: &workspacev1.ListEntriesResponse{DirectoryRevision: "d1"}}
	for i := range 100 {
		svc.list.Entries = append(svc.list.Entries, &workspacev1.Entry{Name: fmt.Sprintf("file-%03d.txt", i), Path: fmt.Sprintf("dir/file-%03d.txt", i),
			Type: workspacev1.EntryType_ENTRY_TYPE_FILE, Size: 65, ModifiedAt: ts, Revision: "0123456789abcdef", Editable: true})
	}
	line := "the quick brown fox jumps over the lazy dog 0123456789 abcdefghi\n"
	svc.file = &workspacev1.GetFileResponse{Entry: svc.list.Entries[0], Content: strings.Repeat(line, 16<<10/len(line))}
	log := hclog.New(&hclog.LoggerOptions{Output: io.Discard, JSONFormat: true, Level: hclog.Info})
	s, err := New(Options{Auth: a, Service: svc, Metrics: m, Gatherer: reg, Logger: log,
		Portal: portal.NewFS(fstest.MapFS{"index.html": {Data: []byte("<html>portal</html>")}})})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s)
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}}
	q := "?workspace.scope=PROJECT&workspace.project_name=bench"
	for _, c := range []struct{ name, path string }{
		{"healthz", "/healthz"},
		{"ListAgents", APIPrefix + "/agents"},
		{"ListProjectEntries", APIPrefix + "/agents/a/projects/entries" + q + "&path=dir&page_size=100"},
		{"GetProjectFile", APIPrefix + "/agents/a/projects/files" + q + "&path=small.txt"},
	} {
		b.Run(c.name, func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+c.path, nil)
				req.Header.Set("Authorization", "Bearer tok")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", c.path, resp.StatusCode)
				}
			}
		})
	}
}

// reportCPU reports the process's user+system CPU time per operation
// (client and server together): on a shared, busy machine it moves far less
// than ns/op. Use as defer reportCPU(b)().
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
