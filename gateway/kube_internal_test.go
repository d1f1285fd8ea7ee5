package gateway

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/internal/kube"
)

// kubeFor builds one client for discovery and shared sign-outs together,
// none when neither is on, and keeps the one a caller hands in.
func TestKubeForOneClient(t *testing.T) {
	var cfg Config
	if kc, err := kubeFor(&cfg, nil); kc != nil || err != nil {
		t.Fatalf("neither feature on: %v %v", kc, err)
	}
	given := &kube.Client{Namespace: "given"}
	cfg.AgentRuntime.Discovery.Enabled = true
	cfg.Auth.Session.SignOutConfigMap = "agent-gateway-signouts"
	if kc, err := kubeFor(&cfg, given); kc != given || err != nil {
		t.Fatalf("a handed-in client: %v %v", kc, err)
	}
	cfg.Kubernetes.Kubeconfig = filepath.Join(t.TempDir(), "missing")
	_, err := kubeFor(&cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "agentRuntime.discovery and auth.session.signOutConfigMap") {
		t.Fatalf("a missing kubeconfig with both on: %v", err)
	}
}
