package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
	"github.com/agentworkspace/files/gateway/internal/requestid"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/rpcmeta"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// BenchmarkRESTSidecar splits one REST call through the gateway into its
// stages against a real sidecar (the gatewaybench's project layout: 100
// files in dir/, a 16 KiB small.txt), all over loopback:
//
//   - direct: the client's own gRPC call to the sidecar (what gatewaybench
//     compares against);
//   - hop: the gateway's mgmt.Service call alone (its gRPC client, metadata,
//     deadline, metrics), no HTTP;
//   - rest: the full REST call (HTTP client → echo → auth → grpc-gateway →
//     mgmt hop → JSON → HTTP response).
//
// rest − hop is what the HTTP side costs; hop − direct what the gateway's
// gRPC client adds over a plain one.
func BenchmarkRESTSidecar(b *testing.B) {
	projects, err := os.MkdirTemp("", "gwbench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(projects) })
	if err := os.Chmod(projects, 0o755); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(projects, "bench", "dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	line := "the quick brown fox jumps over the lazy dog 0123456789 abcdefghi\n"
	for i := range 100 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%03d.txt", i)), []byte(line), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(projects, "bench", "small.txt"), []byte(strings.Repeat(line, 16<<10/len(line))), 0o644); err != nil {
		b.Fatal(err)
	}
	sc := sidecartest.Start(b, sidecartest.Options{AgentID: "a", ProjectsDir: projects, Configure: func(c *sidecar.Config) { c.Log.Level = "info" }})

	cfg := &gateway.Config{}
	cfg.HTTPServer.Address = "127.0.0.1:0"
	cfg.AgentRuntime.Agents = map[string]config.Agent{"a": {Provider: "p", Sidecar: &config.Sidecar{Endpoint: sc.RPCAddr}}}
	cfg.Auth.Tokens = []config.Token{{Operator: "op", Role: "admin", SHA256: config.HashToken("tok")}}
	gf := pki.GatewayFiles(sc.TLSDir)
	cfg.AgentRuntime.SidecarTLS = &config.SidecarTLS{CertFile: gf.Cert, KeyFile: gf.Key, CAFile: gf.CA}
	g, err := gateway.New(cfg, gateway.Deps{Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}}

	svc, err := mgmt.New(cfg.AgentRuntime, mgmt.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(svc.Close)
	hopCtx := requestid.With(auth.WithIdentity(context.Background(), auth.Identity{Operator: "op", Role: config.RoleAdmin}), "bench")

	direct := sc.Dial(b)
	ctx := metadata.AppendToOutgoingContext(context.Background(), rpcmeta.Operator, "op", rpcmeta.RequestID, "bench")
	ws := &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "bench"}
	q := "?workspace.scope=PROJECT&workspace.project_name=bench"

	stages := []struct {
		name string
		f    func() error
	}{
		{"ListEntries/direct", func() error {
			_, err := direct.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, Path: "dir", PageSize: 100})
			return err
		}},
		{"ListEntries/hop", func() error {
			_, err := svc.ListProjectEntries(hopCtx, &workspacev1.ListProjectEntriesRequest{AgentId: "a", Workspace: ws, Path: "dir", PageSize: 100})
			return err
		}},
		{"ListEntries/rest", func() error {
			return benchGet(client, srv.URL+"/api/v1/agent-gateway/agents/a/projects/entries"+q+"&path=dir&page_size=100")
		}},
		{"GetFile/direct", func() error {
			_, err := direct.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "small.txt"})
			return err
		}},
		{"GetFile/hop", func() error {
			_, err := svc.GetProjectFile(hopCtx, &workspacev1.GetProjectFileRequest{AgentId: "a", Workspace: ws, Path: "small.txt"})
			return err
		}},
		{"GetFile/rest", func() error {
			return benchGet(client, srv.URL+"/api/v1/agent-gateway/agents/a/projects/files"+q+"&path=small.txt")
		}},
		{"ListEntries1/hop", func() error {
			_, err := svc.ListProjectEntries(hopCtx, &workspacev1.ListProjectEntriesRequest{AgentId: "a", Workspace: ws, Path: "dir", PageSize: 1})
			return err
		}},
		{"ListEntries1/rest", func() error {
			return benchGet(client, srv.URL+"/api/v1/agent-gateway/agents/a/projects/entries"+q+"&path=dir&page_size=1")
		}},
		{"ListAgents/rest", func() error { return benchGet(client, srv.URL+"/api/v1/agent-gateway/agents") }},
		{"healthz", func() error { return benchGet(client, srv.URL+"/healthz") }},
	}
	for _, s := range stages {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				if err := s.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchGet(c *http.Client, url string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
