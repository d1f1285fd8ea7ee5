// Package ssotest runs the single sign-on chain of docs/sso.md for tests:
// a real OpenID Connect provider (oauth2-proxy's mockoidc, in process or as
// the mock-oidc command) and the real oauth2-proxy binary, the pinned
// release deploy/scripts/k8s-tools.sh builds from the Go module proxy.
//
// oauth2-proxy prints no address when it binds port 0, so the test opens
// the listener itself (127.0.0.1:0) and hands it over as fd 3 with the
// systemd socket-activation convention (--http-address=fd:3), which the
// proxy supports: no port is guessed and none can be taken in between.
package ssotest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oauth2-proxy/mockoidc"
)

// User is a user of the provider: Name is the subject and the preferred
// username (oauth2-proxy passes the subject as X-Forwarded-User), Email its
// address (X-Forwarded-Email), Groups its groups claim (X-Forwarded-Groups).
type User struct {
	Name   string   `json:"name"`
	Email  string   `json:"email"`
	Groups []string `json:"groups"`
}

// Mock returns the mockoidc user for u.
func (u User) Mock() *mockoidc.MockUser {
	return &mockoidc.MockUser{Subject: u.Name, PreferredUsername: u.Name, Email: u.Email, EmailVerified: true, Groups: u.Groups}
}

// NewOIDC starts mockoidc on 127.0.0.1:0 (not yet started when ln is nil:
// the caller calls Start). The next login is of the user queued last with
// QueueUser, else mockoidc's default user.
func NewOIDC(ln net.Listener) (*mockoidc.MockOIDC, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	m, err := mockoidc.NewServer(key)
	if err != nil {
		return nil, err
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	return m, m.Start(ln, nil)
}

// StartOIDC is NewOIDC for a test, shut down in t.Cleanup.
func StartOIDC(t testing.TB) *mockoidc.MockOIDC {
	t.Helper()
	m, err := NewOIDC(nil)
	if err != nil {
		t.Fatalf("ssotest: mockoidc: %v", err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

var proxyBin struct {
	once sync.Once
	path string
	err  error
}

// ProxyBinary returns $OAUTH2_PROXY_BIN, else the pinned oauth2-proxy that
// deploy/scripts/k8s-tools.sh oauth2-proxy builds (about 2 min cold, then
// cached outside the repository). It fails the test, never skips.
func ProxyBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("OAUTH2_PROXY_BIN"); p != "" {
		return p
	}
	proxyBin.once.Do(func() { proxyBin.path, proxyBin.err = buildProxy() })
	if proxyBin.err != nil {
		t.Fatalf("ssotest: oauth2-proxy: %v", proxyBin.err)
	}
	return proxyBin.path
}

func buildProxy() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	cmd := exec.Command(filepath.Join(root, "deploy/scripts/k8s-tools.sh"), "oauth2-proxy")
	cmd.Stderr = os.Stderr // progress of a cold build
	out, err = cmd.Output()
	if err != nil {
		return "", fmt.Errorf("deploy/scripts/k8s-tools.sh oauth2-proxy: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CookieSecret is a random oauth2-proxy cookie secret (32 bytes, base64).
func CookieSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
