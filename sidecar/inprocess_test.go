package sidecar_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/pki/pkitest"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/sidecar"
)

// TestInProcessInitializerOverride runs New/Run in the test process with a
// failing Initializer from Deps: CreateProject rolls back and the failure
// is counted; Run returns nil when its context ends.
func TestInProcessInitializerOverride(t *testing.T) {
	dir := t.TempDir()
	cfg := sidecar.DefaultConfig()
	cfg.RPCServer.Address, cfg.DavServer.Address, cfg.MetricsServer.Address = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Services.Project.ProjectsRootDir = filepath.Join(dir, "projects")
	cfg.Services.Project.CodexHomeDir = filepath.Join(dir, "codex")
	cfg.Services.Checkpoints.Dir = filepath.Join(dir, "checkpoints")
	pkiDir := pkitest.Dir(t, "codex-a")
	f := pki.SidecarFiles(pkiDir, "codex-a")
	cfg.TLS = sidecar.TLSConfig{CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: f.CA}
	for _, d := range []string{cfg.Services.Project.ProjectsRootDir, cfg.Services.Project.CodexHomeDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var logs proctest.Log
	reg := prometheus.NewRegistry()
	called := 0
	s, err := sidecar.New(cfg, sidecar.Deps{
		Logger:   hclog.New(&hclog.LoggerOptions{JSONFormat: true, Output: &logs, Level: hclog.Debug}),
		Registry: reg,
		Initializer: func(ctx context.Context, d string) error {
			called++
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				t.Errorf("initializer got %s: %v", d, err)
			}
			return errors.New("initializer failed on purpose")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	addrs := map[string]string{}
	deadline := time.Now().Add(10 * time.Second)
	for len(addrs) < 3 && time.Now().Before(deadline) {
		for _, m := range logs.Lines() {
			if m["@message"] == "listening" {
				addrs[m["server"].(string)] = m["address"].(string)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(addrs) != 3 {
		t.Fatalf("listening lines: %v\n%s", addrs, logs.String())
	}
	resp, err := http.Get("http://" + addrs["metrics"] + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/readyz: %v %v", resp, err)
	}
	resp.Body.Close()

	conn, err := grpc.NewClient(addrs["rpc"], grpc.WithTransportCredentials(credentials.NewTLS(pkitest.GatewayClient(t, pkiDir, "codex-a", pki.ProtoGRPC))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := workspacev1.NewWorkspaceServiceClient(conn)
	_, err = c.CreateProject(ctxT(t), &workspacev1.CreateProjectRequest{Name: "p"})
	wantErr(t, err, codes.Internal, "GIT_INIT_FAILED")
	if called != 1 {
		t.Errorf("initializer called %d times", called)
	}
	if _, err := os.Lstat(filepath.Join(cfg.Services.Project.ProjectsRootDir, "p")); !os.IsNotExist(err) {
		t.Errorf("not rolled back: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "sidecar_git_init_failures_total" {
			found = mf.GetMetric()[0].GetCounter().GetValue() == 1
		}
	}
	if !found {
		t.Error("sidecar_git_init_failures_total != 1")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestNewRefusesBadConfigAndMissingRoot(t *testing.T) {
	cfg := sidecar.DefaultConfig()
	cfg.Services.Project.MaxPageSize = 0
	if _, err := sidecar.New(cfg, sidecar.Deps{Logger: hclog.NewNullLogger()}); err == nil ||
		!strings.Contains(err.Error(), "services.project.maxPageSize") {
		t.Errorf("New with a bad config: %v", err)
	}
	cfg = sidecar.DefaultConfig()
	f := pki.SidecarFiles(pkitest.Dir(t, "codex-a"), "codex-a")
	cfg.TLS = sidecar.TLSConfig{CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: f.CA}
	cfg.Services.Project.ProjectsRootDir = filepath.Join(t.TempDir(), "missing")
	cfg.Services.Project.CodexHomeDir = t.TempDir()
	if _, err := sidecar.New(cfg, sidecar.Deps{Logger: hclog.NewNullLogger()}); err == nil {
		t.Error("New with a missing projects root succeeded")
	}
	if _, err := os.Stat(cfg.Services.Project.ProjectsRootDir); !os.IsNotExist(err) {
		t.Error("New created the missing projects root")
	}
}
