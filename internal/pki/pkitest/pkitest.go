// Package pkitest gives tests the certificates of internal/pki without the
// cost of a new CA each time: one CA per test process (its only state),
// leaves issued per test into a directory in Ensure's layout (ca.crt,
// gateway.crt/.key, sidecar-<id>.crt/.key; no ca.key).
package pkitest

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/proctest"
)

// processCA is the test process's CA, made on first use.
var processCA = sync.OnceValues(func() (*pki.CA, error) {
	return pki.NewCA("agent-workspace test CA", time.Now())
})

// CA returns the test process's CA.
func CA(t testing.TB) *pki.CA {
	t.Helper()
	ca, err := processCA()
	if err != nil {
		t.Fatalf("pkitest: %v", err)
	}
	return ca
}

// Dir returns a new directory (traversable by every user, removed in
// t.Cleanup) holding the process CA's ca.crt, a gateway certificate and a
// sidecar certificate for each of agents.
func Dir(t testing.TB, agents ...string) string {
	t.Helper()
	dir := proctest.TempDir(t, "pki-")
	Write(t, dir, CA(t), agents...)
	return dir
}

// Write issues from ca into dir, overwriting: ca.crt, the gateway's pair
// and a sidecar pair for each of agents.
func Write(t testing.TB, dir string, ca *pki.CA, agents ...string) {
	t.Helper()
	now := time.Now()
	put := func(name string, data []byte, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), data, mode); err != nil {
			t.Fatalf("pkitest: %v", err)
		}
	}
	put(pki.CACertFile, ca.CertPEM, 0o644)
	cert, key, err := ca.IssueGateway(now)
	if err != nil {
		t.Fatalf("pkitest: %v", err)
	}
	put(pki.GatewayCertFile, cert, 0o644)
	put(pki.GatewayKeyFile, key, 0o600)
	for _, id := range agents {
		cert, key, err := ca.IssueSidecar(id, now)
		if err != nil {
			t.Fatalf("pkitest: %v", err)
		}
		f := pki.SidecarFiles(dir, id)
		put(filepath.Base(f.Cert), cert, 0o644)
		put(filepath.Base(f.Key), key, 0o600)
	}
}

// GatewayClient is the gateway's client config for agentID's sidecar from
// dir's files, with ALPN protos (pki.ProtoGRPC or pki.ProtoHTTP).
func GatewayClient(t testing.TB, dir, agentID string, protos []string) *tls.Config {
	t.Helper()
	src, err := pki.NewSource(pki.GatewayFiles(dir), nil, nil)
	if err != nil {
		t.Fatalf("pkitest: %v", err)
	}
	return src.SidecarClientConfig(agentID, protos)
}
