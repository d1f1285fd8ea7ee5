package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ReloadInterval is how often, at most, a Source looks at its files.
const ReloadInterval = time.Second

// Source holds a certificate, its key and a CA pool read from Files, and
// reads them again when they change. It is safe for concurrent use.
type Source struct {
	files Files
	log   hclog.Logger
	now   func() time.Time

	mu      sync.Mutex
	checked time.Time
	stamps  [3]stamp
	cert    *tls.Certificate
	pool    *x509.CertPool
}

// stamp is what tells a changed file: Kubernetes replaces a Secret's files
// by swapping a symlink, so the inode changes even when the size does not.
type stamp struct {
	mtime time.Time
	size  int64
	ino   uint64
}

// NewSource loads f; the first load must succeed. log gets a warning when a
// later load fails (nil: discarded); now is the clock (nil: time.Now).
func NewSource(f Files, log hclog.Logger, now func() time.Time) (*Source, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if now == nil {
		now = time.Now
	}
	s := &Source{files: f, log: log, now: now}
	stamps, cert, pool, err := load(f)
	if err != nil {
		return nil, err
	}
	s.stamps, s.cert, s.pool, s.checked = stamps, cert, pool, now()
	return s, nil
}

// current returns the certificate and pool, reloaded first when a file
// changed since the last look (at most once per ReloadInterval).
func (s *Source) current() (*tls.Certificate, *x509.CertPool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); now.Sub(s.checked) >= ReloadInterval || now.Before(s.checked) {
		s.checked = now
		s.reloadLocked()
	}
	return s.cert, s.pool
}

func (s *Source) reloadLocked() {
	var stamps [3]stamp
	for i, p := range s.paths() {
		st, err := stat(p)
		if err != nil {
			s.log.Warn("TLS file unreadable; keeping the certificates loaded before", "file", filepath.Base(p), "error", unwrapPath(err))
			return
		}
		stamps[i] = st
	}
	if stamps == s.stamps {
		return
	}
	loaded, cert, pool, err := load(s.files)
	if err != nil {
		s.log.Warn("TLS files changed but do not load; keeping the certificates loaded before", "error", err)
		return
	}
	s.stamps, s.cert, s.pool = loaded, cert, pool
	s.log.Info("TLS certificates reloaded", "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
}

func (s *Source) paths() [3]string { return [3]string{s.files.Cert, s.files.Key, s.files.CA} }

func stat(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	st := stamp{mtime: fi.ModTime(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st, nil
}

// load reads the three files; the stamps are taken before the reads, so a
// file replaced during the read is read again at the next look.
func load(f Files) ([3]stamp, *tls.Certificate, *x509.CertPool, error) {
	var stamps [3]stamp
	for i, p := range [3]string{f.Cert, f.Key, f.CA} {
		st, err := stat(p)
		if err != nil {
			return stamps, nil, nil, fmt.Errorf("%s: %w", filepath.Base(p), unwrapPath(err))
		}
		stamps[i] = st
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		// tls's message names neither content nor key material.
		return stamps, nil, nil, fmt.Errorf("%s / %s: %w", filepath.Base(f.Cert), filepath.Base(f.Key), unwrapPath(err))
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return stamps, nil, nil, fmt.Errorf("%s: %w", filepath.Base(f.CA), unwrapPath(err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return stamps, nil, nil, fmt.Errorf("%s: no PEM certificate in it", filepath.Base(f.CA))
	}
	return stamps, &cert, pool, nil
}

// ServerConfig is the server side: it presents the current certificate and
// completes a handshake only with a client whose certificate chains to the
// current CA pool, has the client-auth usage and the URI SAN clientURI.
// nextProtos is the ALPN list (ProtoGRPC or ProtoHTTP).
func (s *Source) ServerConfig(clientURI string, nextProtos []string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: nextProtos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool := s.current()
			return &tls.Config{
				MinVersion:   tls.VersionTLS13,
				NextProtos:   nextProtos,
				Certificates: []tls.Certificate{*cert},
				// Requested, not required: VerifyConnection then sees an
				// empty chain and names the refusal (no_certificate).
				ClientAuth: tls.RequestClientCert,
				VerifyConnection: func(cs tls.ConnectionState) error {
					return verifyPeer(cs, pool, x509.ExtKeyUsageClientAuth, "", clientURI)
				},
			}, nil
		},
	}
}

// SidecarClientConfig is the gateway's side of agentID's sidecar: it
// presents the current certificate and completes a handshake only with a
// server whose certificate chains to the current CA pool, has the
// server-auth usage, the DNS SAN SidecarServerName(agentID) and, exactly,
// the URI SAN SidecarURI(agentID). The URI is compared byte for byte: the
// DNS check alone ignores case and accepts wildcards, so "CODEX-A" would
// pass with codex-a's certificate, and a wildcard one for every agent.
func (s *Source) SidecarClientConfig(agentID string, nextProtos []string) *tls.Config {
	serverName, uri := SidecarServerName(agentID), SidecarURI(agentID)
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: nextProtos,
		ServerName: serverName,
		// The chain is verified by VerifyConnection against the pool of
		// the moment (a tls.Config's RootCAs cannot be reloaded).
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := s.current()
			return cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, pool := s.current()
			return verifyPeer(cs, pool, x509.ExtKeyUsageServerAuth, serverName, uri)
		},
	}
}

// verifyPeer checks the peer's chain against pool for usage, and its DNS
// name or URI SAN when set.
func verifyPeer(cs tls.ConnectionState, pool *x509.CertPool, usage x509.ExtKeyUsage, dnsName, uri string) error {
	if len(cs.PeerCertificates) == 0 {
		return ErrNoCertificate
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, DNSName: dnsName, KeyUsages: []x509.ExtKeyUsage{usage},
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	if uri != "" && !slices.ContainsFunc(leaf.URIs, func(u *url.URL) bool { return u.String() == uri }) {
		return fmt.Errorf("%w: not %s", ErrUntrusted, uri)
	}
	return nil
}
