//go:build k8stier

package tier

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	k8s "github.com/agentworkspace/files/deploy/k8s"
)

// controlPlane is etcd and kube-apiserver on loopback, with one admin token
// (system:masters) and a kubeconfig for it.
type controlPlane struct {
	t          *testing.T
	dir, bin   string
	etcd, api  *proc
	apiURL     string
	token      string
	kubeconfig string
	saKey      string
	certDir    string
}

// binDir returns the built Kubernetes commands, failing (never skipping)
// when they cannot be had.
func binDir(t *testing.T) string {
	t.Helper()
	d, err := k8s.BinDir()
	if err != nil {
		t.Fatalf("Kubernetes binaries: %v", err)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl", "kubelet", "kube-scheduler", "kube-controller-manager", "kube-proxy", "coredns"} {
		if _, err := os.Stat(filepath.Join(d, b)); err != nil {
			t.Fatalf("%s missing from %s (deploy/scripts/k8s-tools.sh builds it): %v", b, d, err)
		}
	}
	return d
}

// startControlPlane starts etcd and the API server under dir. Ports are
// fixed when fixed is true (a network namespace of the test's own), free
// loopback ports otherwise.
func startControlPlane(t *testing.T, dir, bin string, fixed bool) *controlPlane {
	t.Helper()
	cp := &controlPlane{t: t, dir: dir, bin: bin, certDir: filepath.Join(dir, "pki")}
	etcdPort, peerPort, apiPort := 2379, 2380, 6443
	if !fixed {
		etcdPort, peerPort, apiPort = freePort(t), freePort(t), freePort(t)
	}
	if err := os.MkdirAll(cp.certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	cp.etcd = start(t, dir, filepath.Join(bin, "etcd"),
		"--name=tier", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=tier="+peerURL, "--listen-metrics-urls=",
		"--unsafe-no-fsync", "--log-level=warn")

	b := make([]byte, 24)
	_, _ = rand.Read(b)
	cp.token = hex.EncodeToString(b)
	tokens := filepath.Join(cp.certDir, "tokens.csv")
	writeFile(t, tokens, cp.token+",tier-admin,tier-admin,system:masters\n", 0o600)
	cp.saKey = filepath.Join(cp.certDir, "sa.key")
	mustRun(t, time.Minute, need(t, "openssl", "openssl"), "genrsa", "-out", cp.saKey, "2048")
	mustRun(t, time.Minute, "openssl", "rsa", "-in", cp.saKey, "-pubout", "-out", filepath.Join(cp.certDir, "sa.pub"))

	waitFor(t, "etcd healthy", 60*time.Second, func() error { return get200(http.DefaultClient, etcdURL+"/health", "") }, cp.etcd)

	cp.apiURL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cp.api = start(t, dir, filepath.Join(bin, "kube-apiserver"), append([]string{
		"--etcd-servers=" + etcdURL,
		fmt.Sprintf("--secure-port=%d", apiPort), "--cert-dir=" + cp.certDir,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(cp.certDir, "sa.pub"),
		"--service-account-signing-key-file=" + cp.saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC", "--token-auth-file=" + tokens,
		"--enable-priority-and-fairness=false",
		"--kubelet-preferred-address-types=Hostname",
		// As real clusters do: privileged pods are for Pod Security to refuse.
		"--allow-privileged=true",
		"--profiling=false", "--v=1"}, apiAddressFlags(fixed)...)...)

	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	writeFile(t, cp.kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tier
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: tier
  context: {cluster: tier, user: admin}
current-context: tier
`, cp.apiURL, cp.token), 0o600)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitFor(t, "kube-apiserver ready", 120*time.Second, func() error { return get200(client, cp.apiURL+"/readyz", cp.token) }, cp.etcd, cp.api)
	return cp
}

// get200 GETs url (with token as the bearer, if set): an error unless the
// answer is 200.
func get200(c *http.Client, url, token string) error {
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// kubectl runs the built kubectl against the control plane.
func (cp *controlPlane) kubectl(timeout time.Duration, args ...string) ([]byte, error) {
	return run(timeout, filepath.Join(cp.bin, "kubectl"), append([]string{"--kubeconfig=" + cp.kubeconfig}, args...)...)
}

func (cp *controlPlane) mustKubectl(args ...string) string {
	cp.t.Helper()
	out, err := cp.kubectl(2*time.Minute, args...)
	if err != nil {
		cp.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// applyStdin server-side applies a YAML document.
func (cp *controlPlane) applyYAML(doc string) {
	cp.t.Helper()
	f := filepath.Join(cp.dir, fmt.Sprintf("apply-%d.yaml", time.Now().UnixNano()))
	writeFile(cp.t, f, doc, 0o600)
	cp.mustKubectl("apply", "--server-side", "--field-manager=tier-test", "-f", f)
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// overlayDir is deploy/k8s/overlays/dev, relative to this package.
const overlayDir = "../overlays/dev"

// apiAddressFlags: on loopback (free ports) the API server has no Service
// endpoint (a loopback advertise address cannot be one); in the node
// tier's own network namespace (fixed) it listens on the node's address
// too and publishes it as the kubernetes Service's endpoint, so that the
// gateway's pod reaches the API (agent discovery, in-cluster config).
func apiAddressFlags(fixed bool) []string {
	if fixed {
		return []string{"--bind-address=0.0.0.0", "--advertise-address=" + bridgeIP}
	}
	return []string{"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"}
}
