// Package kube builds the gateway's Kubernetes API client (client-go) from
// the kubernetes: block of its configuration: the in-cluster configuration
// of the pod's service account, or a kubeconfig file, and the namespace the
// gateway works in (docs/discovery.md). It holds no watch logic of its own:
// agent discovery (internal/discovery) and shared sign-outs build their
// informers on the Client it returns.
package kube

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/agentworkspace/files/gateway/internal/config"
)

// ServiceAccountNamespaceFile is where a pod's namespace is mounted with
// its service-account token.
const ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// UserAgent is the gateway's user agent at the API server.
const UserAgent = "agent-gateway"

// Client is a clientset and the namespace the gateway is scoped to.
type Client struct {
	Clientset kubernetes.Interface
	Namespace string
	// Config is the REST configuration Clientset was built from (nil for
	// a Client made with NewFromClientset).
	Config *rest.Config
}

// New builds the client for cfg. The namespace is cfg.Namespace, or else
// the kubeconfig's current-context namespace (with a kubeconfig), or else
// the pod's namespace from the service-account files.
func New(cfg config.Kubernetes) (*Client, error) {
	rc, ctxNS, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	ns, err := namespace(cfg.Namespace, ctxNS, ServiceAccountNamespaceFile)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = UserAgent
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: building the client: %w", err)
	}
	return &Client{Clientset: cs, Namespace: ns, Config: rc}, nil
}

// NewFromClientset wraps an existing clientset (a fake one in tests).
func NewFromClientset(cs kubernetes.Interface, namespace string) *Client {
	return &Client{Clientset: cs, Namespace: namespace}
}

// restConfig loads the kubeconfig file, or the in-cluster configuration
// when path is empty; it also returns the kubeconfig's context namespace.
func restConfig(path string) (*rest.Config, string, error) {
	if path == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("kubernetes.kubeconfig: empty, and not running in a pod (%v): set kubernetes.kubeconfig to a kubeconfig file", err)
		}
		return rc, "", nil
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{})
	rc, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes.kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes.kubeconfig: %w", err)
	}
	return rc, ns, nil
}

// namespace picks the configured namespace, else the kubeconfig context's
// one (never its "default" fallback when the context names none), else the
// service-account file's.
func namespace(configured, fromContext, saFile string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if fromContext != "" && fromContext != "default" {
		return fromContext, nil
	}
	data, err := os.ReadFile(saFile)
	if err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns, nil
		}
		err = errors.New("the file is empty")
	}
	if fromContext != "" {
		return fromContext, nil
	}
	return "", fmt.Errorf("kubernetes.namespace: not set, and the pod's namespace could not be read from its service account (%v): set kubernetes.namespace", err)
}
