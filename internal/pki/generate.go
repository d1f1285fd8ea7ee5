package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Validity of what Ensure and a CA issue. Rotation is by a new CA (see
// docs/security.md); the leaves outlive no CA.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 2 * 365 * 24 * time.Hour
)

// agentIDRe is the gateway's agent id syntax (a DNS label's characters).
var agentIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CA is a certificate authority held in memory.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM and KeyPEM are Cert and Key encoded.
	CertPEM, KeyPEM []byte
}

// NewCA creates a self-signed ECDSA P-256 CA named name, valid from now.
func NewCA(name string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := sign(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return caFrom(der, key)
}

// ParseCA reads a CA from its PEM certificate and key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("pki: CA certificate or key is not PEM")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	return caFrom(cb.Bytes, key)
}

func caFrom(der []byte, key *ecdsa.PrivateKey) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// IssueSidecar issues agentID's sidecar serving certificate: DNS SAN
// SidecarServerName(agentID), URI SAN SidecarURI(agentID), server-auth
// usage only. It returns the certificate and key PEM.
func (ca *CA) IssueSidecar(agentID string, now time.Time) (certPEM, keyPEM []byte, err error) {
	if !agentIDRe.MatchString(agentID) {
		return nil, nil, fmt.Errorf("pki: agent id %q: 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", agentID)
	}
	u, err := url.Parse(SidecarURI(agentID))
	if err != nil {
		return nil, nil, err
	}
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: SidecarServerName(agentID)},
		DNSNames:    []string{SidecarServerName(agentID)},
		URIs:        []*url.URL{u},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now)
}

// IssueGateway issues the gateway's client certificate: URI SAN
// GatewayURI, client-auth usage only.
func (ca *CA) IssueGateway(now time.Time) (certPEM, keyPEM []byte, err error) {
	u, err := url.Parse(GatewayURI)
	if err != nil {
		return nil, nil, err
	}
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "agent-gateway"},
		URIs:        []*url.URL{u},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now)
}

func (ca *CA) issue(tmpl *x509.Certificate, now time.Time) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(LeafValidity)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := sign(tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, priv *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
}

// Ensure makes dir hold a CA (ca.crt, ca.key), a sidecar certificate for
// each of agents (sidecar-<id>.crt/.key) and the gateway's client
// certificate (gateway.crt/.key), generating only what is missing. It never
// overwrites a file: a certificate whose key is missing (or the reverse)
// is an error, and so is a missing ca.key when something must be issued.
// It returns the names of the files it wrote.
func Ensure(dir string, agents []string, now time.Time) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	var created []string
	ca, wrote, err := ensureCA(dir, now)
	if err != nil {
		return nil, err
	}
	created = append(created, wrote...)
	type pair struct {
		files Files
		issue func(*CA) ([]byte, []byte, error)
	}
	pairs := []pair{{GatewayFiles(dir), func(ca *CA) ([]byte, []byte, error) { return ca.IssueGateway(now) }}}
	for _, id := range agents {
		pairs = append(pairs, pair{SidecarFiles(dir, id), func(ca *CA) ([]byte, []byte, error) { return ca.IssueSidecar(id, now) }})
	}
	for _, p := range pairs {
		ok, err := pairPresent(p.files.Cert, p.files.Key)
		if err != nil || ok {
			if err != nil {
				return created, err
			}
			continue
		}
		if ca.err != nil {
			return created, ca.err
		}
		certPEM, keyPEM, err := p.issue(ca.ca)
		if err != nil {
			return created, err
		}
		if err := writeNew(p.files.Key, keyPEM, 0o600); err != nil {
			return created, err
		}
		if err := writeNew(p.files.Cert, certPEM, 0o644); err != nil {
			return created, err
		}
		created = append(created, filepath.Base(p.files.Cert), filepath.Base(p.files.Key))
	}
	return created, nil
}

// lazyCA is the CA Ensure issues with: loaded from ca.crt and ca.key, or
// err when ca.key is absent (nothing can be issued then).
type lazyCA struct {
	ca  *CA
	err error
}

// ensureCA loads dir's CA or creates it when ca.crt and ca.key are both
// missing.
func ensureCA(dir string, now time.Time) (*lazyCA, []string, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certPEM, cerr := os.ReadFile(certPath)
	keyPEM, kerr := os.ReadFile(keyPath)
	switch {
	case errors.Is(cerr, fs.ErrNotExist) && errors.Is(kerr, fs.ErrNotExist):
		ca, err := NewCA("agent-workspace sidecar CA", now)
		if err != nil {
			return nil, nil, err
		}
		if err := writeNew(keyPath, ca.KeyPEM, 0o600); err != nil {
			return nil, nil, err
		}
		if err := writeNew(certPath, ca.CertPEM, 0o644); err != nil {
			return nil, nil, err
		}
		return &lazyCA{ca: ca}, []string{CACertFile, CAKeyFile}, nil
	case cerr != nil:
		return nil, nil, fmt.Errorf("pki: %s: %w", CACertFile, unwrapPath(cerr))
	case errors.Is(kerr, fs.ErrNotExist):
		return &lazyCA{err: fmt.Errorf("pki: %s is missing: cannot issue certificates (only %s is here)", CAKeyFile, CACertFile)}, nil, nil
	case kerr != nil:
		return nil, nil, fmt.Errorf("pki: %s: %w", CAKeyFile, unwrapPath(kerr))
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	return &lazyCA{ca: ca}, nil, nil
}

// pairPresent reports whether both files exist; one without the other is
// an error (Ensure never overwrites).
func pairPresent(cert, key string) (bool, error) {
	_, cerr := os.Stat(cert)
	_, kerr := os.Stat(key)
	switch {
	case cerr == nil && kerr == nil:
		return true, nil
	case errors.Is(cerr, fs.ErrNotExist) && errors.Is(kerr, fs.ErrNotExist):
		return false, nil
	case cerr == nil:
		return false, fmt.Errorf("pki: %s exists without %s: remove it or restore the key", filepath.Base(cert), filepath.Base(key))
	case kerr == nil:
		return false, fmt.Errorf("pki: %s exists without %s: remove it or restore the certificate", filepath.Base(key), filepath.Base(cert))
	default:
		return false, fmt.Errorf("pki: %s: %w", filepath.Base(cert), unwrapPath(cerr))
	}
}

// writeNew creates path with data; it fails if path exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", filepath.Base(path), unwrapPath(err))
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("pki: %s: %w", filepath.Base(path), err)
	}
	return nil
}

// unwrapPath drops the absolute path of a *fs.PathError.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
