package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/fakesidecar"
	"github.com/agentworkspace/files/internal/pki"
)

// BenchmarkREST measures the gateway's cost per REST call, in process, over
// the sidecar's service in this process too (fakesidecar); direct-gRPC is
// the floor, the same calls without the gateway. make bench's gatewaybench
// compares against a real sidecar end to end.
func BenchmarkREST(b *testing.B) {
	fs := fakesidecar.Start(b, "a")
	for i := 0; i < 100; i++ {
		fs.Put(b, "bench", fmt.Sprintf("file-%03d.txt", i), "x")
	}
	fs.Put(b, "bench", "big.txt", strings.Repeat("hello world\n", 16<<10/12))
	cfg := &gateway.Config{}
	cfg.HTTPServer.Address = "127.0.0.1:0"
	cfg.AgentRuntime.Agents = map[string]config.Agent{"a": {Provider: "p", Sidecar: &config.Sidecar{Endpoint: fs.Addr}}}
	cfg.Auth.Tokens = []config.Token{{Operator: "op", Role: "admin", SHA256: config.HashToken("tok")}}
	gf := pki.GatewayFiles(fs.TLSDir)
	cfg.AgentRuntime.SidecarTLS = &config.SidecarTLS{CertFile: gf.Cert, KeyFile: gf.Key, CAFile: gf.CA}
	g, err := gateway.New(cfg, gateway.Deps{Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	conn, err := grpc.NewClient(fs.Addr, grpc.WithTransportCredentials(credentials.NewTLS(fs.ClientTLS(b))))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	direct := workspacev1.NewWorkspaceServiceClient(conn)
	ws := &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "bench"}
	b.Run("direct-gRPC/ListEntries", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := direct.ListEntries(context.Background(), &workspacev1.ListEntriesRequest{Workspace: ws}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct-gRPC/GetFile", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := direct.GetFile(context.Background(), &workspacev1.GetFileRequest{Workspace: ws, Path: "big.txt"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for name, path := range map[string]string{
		"ListAgents":         "/api/v1/agent-gateway/agents",
		"ListProjectEntries": "/api/v1/agent-gateway/agents/a/projects/entries?workspace.scope=PROJECT&workspace.project_name=bench",
		"GetProjectFile":     "/api/v1/agent-gateway/agents/a/projects/files?workspace.scope=PROJECT&workspace.project_name=bench&path=big.txt",
	} {
		b.Run(name, func(b *testing.B) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			req.Header.Set("Authorization", "Bearer tok")
			for i := 0; i < b.N; i++ {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
