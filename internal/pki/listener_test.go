package pki_test

import (
	"bufio"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/pki/pkitest"
)

// server is a Listener over the sidecar files of codex-a in dir that
// echoes one line per accepted connection and records refusals.
type server struct {
	addr     string
	accepted atomic.Int64
	mu       sync.Mutex
	refused  []string
	src      *pki.Source
	clock    *clock
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func startServer(t *testing.T, dir string, opts pki.ListenOptions) *server {
	t.Helper()
	s := &server{clock: &clock{t: time.Now()}}
	src, err := pki.NewSource(pki.SidecarFiles(dir, "codex-a"), hclog.NewNullLogger(), s.clock.now)
	if err != nil {
		t.Fatal(err)
	}
	s.src = src
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.OnRefused = func(r string) { s.mu.Lock(); s.refused = append(s.refused, r); s.mu.Unlock() }
	ln := pki.Listen(inner, src.ServerConfig(pki.GatewayURI, pki.ProtoHTTP), opts)
	t.Cleanup(func() { ln.Close() })
	s.addr = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				c.Write([]byte("echo " + line))
			}()
		}
	}()
	return s
}

func (s *server) refusals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

func (s *server) waitRefusals(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r := s.refusals(); len(r) >= n {
			return r
		}
	}
	t.Fatalf("refusals %v, want %d", s.refusals(), n)
	return nil
}

// roundTrip dials with cfg, sends a line and returns the answer.
func roundTrip(addr string, cfg *tls.Config) (string, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("hi\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestListenerAcceptsOnlyTheGateway(t *testing.T) {
	dir := pkitest.Dir(t, "codex-a", "codex-b")
	s := startServer(t, dir, pki.ListenOptions{})
	if got, err := roundTrip(s.addr, pkitest.GatewayClient(t, dir, "codex-a", pki.ProtoHTTP)); err != nil || got != "echo hi\n" {
		t.Fatalf("gateway: %q %v", got, err)
	}

	other := t.TempDir()
	otherCA, err := pki.NewCA("other", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pkitest.Write(t, other, otherCA, "codex-a")
	// A sidecar certificate of the right CA presented as a client: the
	// wrong usage and identity.
	sidecarAsClient := pkitest.GatewayClient(t, dir, "codex-a", pki.ProtoHTTP)
	sidecarPair, err := tls.LoadX509KeyPair(filepath.Join(dir, "sidecar-codex-b.crt"), filepath.Join(dir, "sidecar-codex-b.key"))
	if err != nil {
		t.Fatal(err)
	}
	sidecarAsClient.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &sidecarPair, nil }

	cases := []struct {
		name   string
		dial   func() error
		reason string
	}{
		{"no certificate", func() error {
			_, err := roundTrip(s.addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
			return err
		}, pki.ReasonNoCertificate},
		{"another CA", func() error {
			// An attacker does not check the server: it presents a
			// gateway certificate of its own CA.
			cfg := pkitest.GatewayClient(t, other, "codex-a", pki.ProtoHTTP)
			cfg.VerifyConnection = nil
			_, err := roundTrip(s.addr, cfg)
			return err
		}, pki.ReasonUntrusted},
		{"a sidecar's certificate", func() error {
			_, err := roundTrip(s.addr, sidecarAsClient)
			return err
		}, pki.ReasonUntrusted},
		{"TLS 1.2", func() error {
			_, err := roundTrip(s.addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
			return err
		}, pki.ReasonHandshake},
		{"plain text", func() error {
			c, err := net.Dial("tcp", s.addr)
			if err != nil {
				return err
			}
			defer c.Close()
			c.Write([]byte("PUT /projects/x HTTP/1.1\r\nHost: x\r\n\r\n"))
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(make([]byte, 1))
			return err
		}, pki.ReasonHandshake},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.dial(); err == nil {
				t.Fatal("connection was served")
			}
			r := s.waitRefusals(t, i+1)
			if r[i] != c.reason {
				t.Fatalf("reason %q, want %q", r[i], c.reason)
			}
		})
	}
	if n := s.accepted.Load(); n != 1 {
		t.Fatalf("Accept handed out %d connections, want only the gateway's", n)
	}
}

func TestListenerBoundsPendingHandshakes(t *testing.T) {
	dir := pkitest.Dir(t, "codex-a")
	s := startServer(t, dir, pki.ListenOptions{MaxPending: 2, HandshakeTimeout: 300 * time.Millisecond})
	var silent []net.Conn
	for range 4 { // two take the slots, two are closed at once
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
		time.Sleep(20 * time.Millisecond)
	}
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	// Two refused for the bound, then two for the handshake timeout.
	r := s.waitRefusals(t, 4)
	for _, reason := range r {
		if reason != pki.ReasonHandshake {
			t.Fatalf("reasons %v", r)
		}
	}
	if got, err := roundTrip(s.addr, pkitest.GatewayClient(t, dir, "codex-a", pki.ProtoHTTP)); err != nil || got != "echo hi\n" {
		t.Fatalf("gateway after the silent peers: %q %v", got, err)
	}
}

func TestSourceReloadsRotatedFiles(t *testing.T) {
	dir := pkitest.Dir(t, "codex-a")
	s := startServer(t, dir, pki.ListenOptions{})
	oldClient := pkitest.GatewayClient(t, dir, "codex-a", pki.ProtoHTTP)
	// An established connection before the rotation.
	est, err := tls.Dial("tcp", s.addr, oldClient)
	if err != nil {
		t.Fatal(err)
	}
	defer est.Close()

	newCA, err := pki.NewCA("new", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	next := t.TempDir()
	pkitest.Write(t, next, newCA, "codex-a")
	bundle := append(append([]byte{}, pkitest.CA(t).CertPEM...), newCA.CertPEM...)
	for _, name := range []string{"sidecar-codex-a.crt", "sidecar-codex-a.key"} {
		data, _ := os.ReadFile(filepath.Join(next, name))
		replace(t, filepath.Join(dir, name), data)
	}
	replace(t, filepath.Join(dir, "ca.crt"), bundle)
	// Within the interval the server still presents the old certificate.
	newClient := pkitest.GatewayClient(t, next, "codex-a", pki.ProtoHTTP)
	if _, err := roundTrip(s.addr, newClient); err == nil {
		t.Fatal("the new certificate was served before the reload interval passed")
	}
	s.clock.add(pki.ReloadInterval)
	if got, err := roundTrip(s.addr, newClient); err != nil || got != "echo hi\n" {
		t.Fatalf("new CA after rotation: %q %v", got, err)
	}
	// A gateway still holding the old client certificate is trusted
	// through the bundle (it only needs the new CA to verify the server).
	if got, err := roundTrip(s.addr, pkitest.GatewayClient(t, dir, "codex-a", pki.ProtoHTTP)); err != nil || got != "echo hi\n" {
		t.Fatalf("old gateway cert, bundle CA: %q %v", got, err)
	}
	est.Write([]byte("still\n"))
	if got, err := bufio.NewReader(est).ReadString('\n'); err != nil || got != "echo still\n" {
		t.Fatalf("established connection after rotation: %q %v", got, err)
	}

	// A broken file keeps the last good set.
	replace(t, filepath.Join(dir, "sidecar-codex-a.crt"), []byte("not a certificate"))
	s.clock.add(pki.ReloadInterval)
	if got, err := roundTrip(s.addr, newClient); err != nil || got != "echo hi\n" {
		t.Fatalf("after a broken file: %q %v", got, err)
	}
}

// replace swaps path's content atomically (as the kubelet does).
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestClientConfigChecksTheSidecarsIdentity(t *testing.T) {
	dir := pkitest.Dir(t, "codex-a", "codex-b")
	s := startServer(t, dir, pki.ListenOptions{}) // serves codex-a's certificate
	if _, err := roundTrip(s.addr, pkitest.GatewayClient(t, dir, "codex-b", pki.ProtoHTTP)); err == nil {
		t.Fatal("the gateway accepted codex-a's sidecar as codex-b")
	}
	// The DNS check ignores case; the URI SAN does not.
	if _, err := roundTrip(s.addr, pkitest.GatewayClient(t, dir, "CODEX-A", pki.ProtoHTTP)); err == nil {
		t.Fatal("the gateway accepted codex-a's sidecar as CODEX-A")
	}
	other := t.TempDir()
	otherCA, err := pki.NewCA("other", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pkitest.Write(t, other, otherCA, "codex-a")
	// A client trusting another CA refuses the server.
	cfg := pkitest.GatewayClient(t, other, "codex-a", pki.ProtoHTTP)
	if _, err := roundTrip(s.addr, cfg); err == nil {
		t.Fatal("a server of another CA was trusted")
	}
	if n := s.accepted.Load(); n != 0 {
		t.Fatalf("%d connections served", n)
	}
	if _, err := roundTrip(s.addr, pkitest.GatewayClient(t, dir, "codex-a", pki.ProtoHTTP)); err != nil {
		t.Fatalf("codex-a's own sidecar refused: %v", err)
	}
}
