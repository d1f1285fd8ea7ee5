package sidecar_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/health/grpc_health_v1"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

func TestHarnessStartStop(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(sc.MetricsURL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", p, resp.Status)
		}
	}
	h, err := grpc_health_v1.NewHealthClient(sc.Conn(t)).Check(context.Background(),
		&grpc_health_v1.HealthCheckRequest{Service: workspacev1.WorkspaceService_ServiceDesc.ServiceName})
	if err != nil || h.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Errorf("health: %v %v", h, err)
	}
	if _, err := sc.Dial(t).ListProjects(context.Background(), &workspacev1.ListProjectsRequest{}); err != nil {
		t.Errorf("ListProjects: %v", err)
	}
	if err := sc.Stop(); err != nil {
		t.Errorf("Stop: %v\n%s", err, sc.Logs())
	}
}

// TestHarnessSuppliedVolumes: volumes under t.TempDir() (0700 root parents)
// work for the UID-1000 process; Restart gives new ports on the same data.
func TestHarnessSuppliedVolumes(t *testing.T) {
	projects, codex := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(projects, "existing", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, CodexHome: codex})
	if sc.ProjectsDir != projects || sc.CodexHome != codex {
		t.Errorf("dirs %s %s", sc.ProjectsDir, sc.CodexHome)
	}
	ctx := context.Background()
	c := sc.Dial(t)
	if _, err := c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: proj("existing"), ParentPath: "src", Name: "a.txt",
		Type: workspacev1.EntryType_ENTRY_TYPE_FILE}); err != nil {
		t.Fatalf("write into a supplied volume: %v", err)
	}
	if _, err := os.Stat(filepath.Join(codex, "skills")); err != nil {
		t.Errorf("skills/ not ensured: %v", err)
	}
	old := sc.RPCAddr
	sc.Restart()
	if sc.RPCAddr == old {
		t.Log("same port after restart (possible, unlikely)")
	}
	r, err := sc.Dial(t).ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: proj("existing"), Path: "src"})
	if err != nil || len(r.GetEntries()) != 1 {
		t.Fatalf("after restart: %v %v", r, err)
	}
	if n := strings.Count(sc.Logs(), `"@message":"listening"`); n != 6 {
		t.Errorf("%d listening lines over two runs, want 6", n)
	}
}
