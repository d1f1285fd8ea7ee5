package sidecar_test

import (
	"context"
	"net/http"
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
