package pki_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/internal/pki"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s: not PEM", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsureCreatesEverythingOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	created, err := pki.Ensure(dir, []string{"codex-a", "codex-b"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ca.crt", "ca.key", "gateway.crt", "gateway.key", "sidecar-codex-a.crt", "sidecar-codex-a.key", "sidecar-codex-b.crt", "sidecar-codex-b.key"}
	slices.Sort(created)
	if !slices.Equal(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	for _, name := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".key") && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	sc := readCert(t, filepath.Join(dir, "sidecar-codex-a.crt"))
	if _, err := sc.Verify(x509.VerifyOptions{Roots: roots, DNSName: "codex-a.sidecar.agent-workspace"}); err != nil {
		t.Errorf("sidecar cert: %v", err)
	}
	if len(sc.URIs) != 1 || sc.URIs[0].String() != "agentworkspace://sidecar/codex-a" {
		t.Errorf("sidecar URIs %v", sc.URIs)
	}
	gw := readCert(t, filepath.Join(dir, "gateway.crt"))
	if _, err := gw.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("gateway cert: %v", err)
	}
	if _, err := gw.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("gateway cert verifies as a server certificate")
	}
	if len(gw.URIs) != 1 || gw.URIs[0].String() != pki.GatewayURI {
		t.Errorf("gateway URIs %v", gw.URIs)
	}

	// Again, plus one agent: only the new agent's pair is written.
	before, _ := os.ReadFile(filepath.Join(dir, "sidecar-codex-a.crt"))
	created, err = pki.Ensure(dir, []string{"codex-a", "codex-b", "codex-c"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created, []string{"sidecar-codex-c.crt", "sidecar-codex-c.key"}) {
		t.Fatalf("second run created %v", created)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "sidecar-codex-a.crt"))
	if string(before) != string(after) {
		t.Error("an existing certificate was rewritten")
	}
	if _, err := readCert(t, filepath.Join(dir, "sidecar-codex-c.crt")).Verify(x509.VerifyOptions{Roots: roots, DNSName: "codex-c.sidecar.agent-workspace"}); err != nil {
		t.Errorf("new agent's cert is not from the same CA: %v", err)
	}
}

func TestEnsureRefusesHalfPairsAndMissingCAKey(t *testing.T) {
	cases := []struct {
		name   string
		remove string
		want   string
	}{
		{"cert without key", "sidecar-codex-a.key", "sidecar-codex-a.crt exists without sidecar-codex-a.key"},
		{"key without cert", "gateway.crt", "gateway.key exists without gateway.crt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := pki.Ensure(dir, []string{"codex-a"}, time.Now()); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, c.remove))
			_, err := pki.Ensure(dir, []string{"codex-a"}, time.Now())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("error names the absolute path: %v", err)
			}
		})
	}
	t.Run("no ca.key", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := pki.Ensure(dir, []string{"codex-a"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "ca.key"))
		// Nothing to issue: fine.
		if _, err := pki.Ensure(dir, []string{"codex-a"}, time.Now()); err != nil {
			t.Fatalf("nothing to issue: %v", err)
		}
		_, err := pki.Ensure(dir, []string{"codex-a", "codex-b"}, time.Now())
		if err == nil || !strings.Contains(err.Error(), "ca.key is missing") {
			t.Fatalf("err %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "sidecar-codex-b.key")); err == nil {
			t.Error("a key was written without a CA to sign it")
		}
	})
	t.Run("bad agent id", func(t *testing.T) {
		if _, err := pki.Ensure(t.TempDir(), []string{"../x"}, time.Now()); err == nil {
			t.Fatal("agent id ../x accepted")
		}
	})
}
