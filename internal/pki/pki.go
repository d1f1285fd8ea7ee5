// Package pki is the mutual TLS between the gateway and the sidecars: a
// per-install certificate authority, one serving certificate per agent's
// sidecar, one client certificate for the gateway, and tls.Configs that
// re-read those files while the processes run.
//
// The agent shares its sidecar's network namespace, so the sidecar's
// listeners answer the agent as they answer the gateway. The credential that
// tells them apart is the gateway's private key, which exists only in the
// gateway's and the operator's hands (a Kubernetes Secret mounted only into
// the gateway; the sidecar's own Secret, mounted only into the sidecar
// container, holds its serving key and the CA certificate, never the CA key
// nor the gateway key).
//
// It guarantees that:
//   - a server config (ServerConfig) completes a handshake only with a peer
//     that presents a certificate chaining to the configured CA bundle, with
//     the client-auth extended key usage and the URI SAN
//     agentworkspace://gateway; anything else fails the handshake with an
//     error Reason classifies (no_certificate, untrusted, handshake);
//   - a client config (ClientConfig) completes a handshake only with a peer
//     whose certificate chains to the CA bundle, has the server-auth usage
//     and names the expected sidecar (DNS SAN <agent-id>.sidecar.agent-workspace),
//     so the gateway checks which agent's sidecar it reached, not only its
//     address;
//   - TLS 1.3 is the minimum;
//   - certificate, key and CA bundle are re-read when a file's modification
//     time, size or inode changes (looked at no more than once a second, at
//     a handshake): a rotated Secret takes effect for new connections with
//     no restart, established connections are untouched, and a CA bundle
//     may hold the old and the new CA during a rotation. A file that does
//     not load keeps the last good set and is logged (never its content);
//   - Listen hands out only connections whose handshake succeeded, so a
//     refused peer is cut before any request byte is read; handshakes run
//     concurrently, each bounded in time, and their number is bounded;
//   - Ensure writes only files that are missing (it never overwrites), keys
//     with mode 0600.
//
// It does not protect against root on the node (who can read any mounted
// Secret or the process's memory), against a process that holds the
// gateway's key, or against a CA key left where an attacker can read it
// (keep ca.key with the operator, out of the cluster). It has no
// revocation list: a leaked leaf is retired by rotating the CA.
package pki

import (
	"errors"
	"path/filepath"
)

// Names and identities the certificates carry.
const (
	// GatewayURI is the URI SAN of the gateway's client certificate; a
	// sidecar accepts no other client identity.
	GatewayURI = "agentworkspace://gateway"
	// SidecarDomain is the DNS suffix of the sidecars' serving names.
	SidecarDomain = "sidecar.agent-workspace"
)

// SidecarServerName is the name the gateway checks in agentID's sidecar
// certificate (its DNS SAN and the TLS ServerName).
func SidecarServerName(agentID string) string { return agentID + "." + SidecarDomain }

// SidecarURI is the URI SAN naming agentID in its sidecar certificate.
func SidecarURI(agentID string) string { return "agentworkspace://sidecar/" + agentID }

// ALPN protocols of the two sidecar listeners: gRPC-go clients require h2.
var (
	ProtoGRPC = []string{"h2"}
	ProtoHTTP = []string{"http/1.1"}
)

// File names inside a directory Ensure fills.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	GatewayCertFile = "gateway.crt"
	GatewayKeyFile  = "gateway.key"
)

// Files names a certificate, its key and the CA bundle that verifies peers.
type Files struct {
	Cert string
	Key  string
	CA   string
}

// SidecarFiles are agentID's sidecar files in dir.
func SidecarFiles(dir, agentID string) Files {
	return Files{
		Cert: filepath.Join(dir, "sidecar-"+agentID+".crt"),
		Key:  filepath.Join(dir, "sidecar-"+agentID+".key"),
		CA:   filepath.Join(dir, CACertFile),
	}
}

// GatewayFiles are the gateway's files in dir.
func GatewayFiles(dir string) Files {
	return Files{
		Cert: filepath.Join(dir, GatewayCertFile),
		Key:  filepath.Join(dir, GatewayKeyFile),
		CA:   filepath.Join(dir, CACertFile),
	}
}

// Handshake refusals, told apart by Reason.
var (
	// ErrNoCertificate: the peer presented no certificate.
	ErrNoCertificate = errors.New("pki: peer presented no certificate")
	// ErrUntrusted: the peer's certificate does not chain to the CA
	// bundle, lacks the usage, or names another identity.
	ErrUntrusted = errors.New("pki: peer certificate not trusted")
)

// Refusal reasons (the reason label of the refusal metric).
const (
	ReasonNoCertificate = "no_certificate"
	ReasonUntrusted     = "untrusted"
	ReasonHandshake     = "handshake"
)

// Reasons are every value Reason returns.
func Reasons() []string { return []string{ReasonNoCertificate, ReasonUntrusted, ReasonHandshake} }

// Reason classifies a failed server handshake.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrNoCertificate):
		return ReasonNoCertificate
	case errors.Is(err, ErrUntrusted):
		return ReasonUntrusted
	default:
		return ReasonHandshake
	}
}
