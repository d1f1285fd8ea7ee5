package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/agentworkspace/files/gateway/internal/config"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
users:
- name: u
  user:
    token: not-a-secret
contexts:
- name: x
  context:
    cluster: c
    user: u
    namespace: %s
current-context: x
`

func writeKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	body := strings.Replace(kubeconfigYAML, "%s", ns, 1)
	if ns == "" {
		body = strings.Replace(body, "    namespace: \n", "", 1)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewFromKubeconfig(t *testing.T) {
	p := writeKubeconfig(t, "team-a")
	c, err := New(config.Kubernetes{Kubeconfig: p})
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "team-a" || c.Config.Host != "https://127.0.0.1:6443" || c.Config.UserAgent != UserAgent {
		t.Fatalf("namespace %q host %q agent %q", c.Namespace, c.Config.Host, c.Config.UserAgent)
	}
	c, err = New(config.Kubernetes{Kubeconfig: p, Namespace: "other"})
	if err != nil || c.Namespace != "other" {
		t.Fatalf("configured namespace: %v %v", c, err)
	}
}

func TestNewErrorsNameTheKey(t *testing.T) {
	_, err := New(config.Kubernetes{Kubeconfig: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.HasPrefix(err.Error(), "kubernetes.kubeconfig: ") {
		t.Fatalf("missing kubeconfig: %v", err)
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		_, err = New(config.Kubernetes{})
		if err == nil || !strings.HasPrefix(err.Error(), "kubernetes.kubeconfig: empty, and not running in a pod") {
			t.Fatalf("no in-cluster config: %v", err)
		}
	}
}

func TestNamespaceOrder(t *testing.T) {
	dir := t.TempDir()
	sa := filepath.Join(dir, "namespace")
	if err := os.WriteFile(sa, []byte("pod-ns\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none")
	for _, tc := range []struct {
		configured, context, file, want string
	}{
		{"set", "ctx", sa, "set"},
		{"", "ctx", sa, "ctx"},
		{"", "default", sa, "pod-ns"},
		{"", "", sa, "pod-ns"},
		{"", "default", missing, "default"},
	} {
		got, err := namespace(tc.configured, tc.context, tc.file)
		if err != nil || got != tc.want {
			t.Errorf("namespace(%q, %q, %s) = %q, %v; want %q", tc.configured, tc.context, filepath.Base(tc.file), got, err, tc.want)
		}
	}
	_, err := namespace("", "", missing)
	if err == nil || !strings.HasPrefix(err.Error(), "kubernetes.namespace: not set") {
		t.Fatalf("no namespace anywhere: %v", err)
	}
}

func TestNewFromClientset(t *testing.T) {
	c := NewFromClientset(fake.NewClientset(), "ns")
	if _, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}
