package config

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentworkspace/files/gateway/internal/session"
)

// Session configures the portal's self-contained session cookie (sealed
// with AES-256-GCM; see gateway/internal/session).
//
//	auth:
//	  session:
//	    keys: ["<base64 of 32 random bytes>"]   # first seals, all open
//	    keysFile: /etc/agent-gateway/session/keys  # e.g. a mounted Kubernetes Secret
//	    lifetime: 12h
//	    peers: ["agent-gateway-peers:9090"]      # the other replicas' metrics listeners
//
// Keys from keysFile (one base64 key a line; blank lines and lines starting
// with # are skipped) come before auth.session.keys; the first key of all
// seals new sessions and every key opens them, so a key is rotated by
// adding the new one first and removing the old one a lifetime later.
// Without any key the gateway makes a random one at start: sessions then
// end when it restarts and are not shared between replicas.
//
// Peers are the other replicas, host:port of their metrics listener; a
// host name is resolved at each use and may name several replicas (a
// headless Kubernetes Service). Every address must reach one replica (a
// pod), never a ClusterIP Service or load balancer in front of several: a
// sign-out sent there reaches whichever replica answers, not all. Replicas send each other sign-outs and a
// starting replica pulls the current list (see gateway/internal/session),
// authenticated with a key derived from the session keys, so peers need
// configured keys and metricsServer.address.
type Session struct {
	Keys     []string       `yaml:"keys"`
	KeysFile string         `yaml:"keysFile"`
	Lifetime *time.Duration `yaml:"lifetime"`
	Peers    []string       `yaml:"peers,omitempty"`
}

// SessionLifetime is auth.session.lifetime, 0 when unset (the default).
func (s Session) SessionLifetime() time.Duration { return orDefault(s.Lifetime, 0) }

// SealKeys are the decoded session keys (file first); call after Validate.
func (s Session) SealKeys() [][]byte {
	keys, _ := s.decode()
	return keys
}

func (s Session) decode() ([][]byte, []error) {
	var keys [][]byte
	var errs []error
	add := func(where, v string) {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil {
			k, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(v), "="))
		}
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: not base64 (make one with: head -c 32 /dev/urandom | base64)", where))
		case len(k) != session.KeySize:
			errs = append(errs, fmt.Errorf("%s: must decode to %d bytes, got %d (make one with: head -c 32 /dev/urandom | base64)", where, session.KeySize, len(k)))
		default:
			keys = append(keys, k)
		}
	}
	if s.KeysFile != "" {
		data, err := os.ReadFile(s.KeysFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("auth.session.keysFile: %w", err))
		}
		n := 0
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			add(fmt.Sprintf("auth.session.keysFile[%d]", n), line)
			n++
		}
		if err == nil && n == 0 {
			errs = append(errs, fmt.Errorf("auth.session.keysFile: holds no key"))
		}
	}
	for i, v := range s.Keys {
		add(fmt.Sprintf("auth.session.keys[%d]", i), v)
	}
	return keys, errs
}

// validate reports every problem of auth.session; metricsAddr is
// metricsServer.address, where the peer endpoint is served.
func (s Session) validate(metricsAddr string) []error {
	keys, keyErrs := s.decode()
	errs := append([]error(nil), keyErrs...)
	if s.Lifetime != nil && *s.Lifetime < time.Minute {
		errs = append(errs, fmt.Errorf("auth.session.lifetime: must be at least 1m (for example 12h)"))
	}
	// Replicas cap a peer's revocation at session.MaxRevocationLifetime
	// ahead: a longer session would outlive its sign-out elsewhere.
	if s.Lifetime != nil && *s.Lifetime > session.MaxRevocationLifetime {
		errs = append(errs, fmt.Errorf("auth.session.lifetime: must be at most %s (30 days), the longest a sign-out is kept across replicas", session.MaxRevocationLifetime))
	}
	for i, p := range s.Peers {
		host, port, err := net.SplitHostPort(p)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(host, "/ ") {
			errs = append(errs, fmt.Errorf("auth.session.peers[%d]: must be host:port of a replica's metrics listener (for example agent-gateway-peers:9090)", i))
		}
	}
	if len(s.Peers) > 0 {
		if len(keys) == 0 && len(keyErrs) == 0 {
			errs = append(errs, fmt.Errorf("auth.session.peers: needs auth.session.keys or auth.session.keysFile, the same on every replica"))
		}
		if metricsAddr == "" {
			errs = append(errs, fmt.Errorf("auth.session.peers: needs metricsServer.address (replicas reach each other on the metrics listener)"))
		}
	}
	return errs
}
