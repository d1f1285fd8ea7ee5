package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
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
//	    signOutConfigMap: agent-gateway-signouts  # replicas share sign-outs (Kubernetes API)
//
// Keys from keysFile (one base64 key a line; blank lines and lines starting
// with # are skipped) come before auth.session.keys; the first key of all
// seals new sessions and every key opens them, so a key is rotated by
// adding the new one first and removing the old one a lifetime later.
// Without any key the gateway makes a random one at start: sessions then
// end when it restarts and are not shared between replicas.
//
// SignOutConfigMap names the ConfigMap, in the kubernetes: block's
// namespace, through which the replicas share sign-outs (see
// gateway/internal/signouts): every replica watches it, a sign-out is
// written to it. It needs configured keys (the replicas open each other's
// cookies) and a ConfigMap the deployment creates. Empty: a lone gateway,
// whose sign-outs stay in process.
//
// Peers is auth.session.peers, the replicas' peer protocol, which was
// removed: it is only read to refuse it by name.
type Session struct {
	Keys             []string       `yaml:"keys"`
	KeysFile         string         `yaml:"keysFile"`
	Lifetime         *time.Duration `yaml:"lifetime"`
	SignOutConfigMap string         `yaml:"signOutConfigMap"`
	Peers            any            `yaml:"peers,omitempty"`
}

// PeersRemoved is the one line a configuration with auth.session.peers
// gets.
const PeersRemoved = "auth.session.peers: removed (replicas no longer send each other sign-outs); they share them through the Kubernetes API instead: set auth.session.signOutConfigMap and the kubernetes: block (docs/sessions.md)"

// dnsSubdomainRe is an RFC 1123 subdomain, the form of a ConfigMap name.
var dnsSubdomainRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

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

// validate reports every problem of auth.session.
func (s Session) validate() []error {
	keys, keyErrs := s.decode()
	errs := append([]error(nil), keyErrs...)
	if s.Lifetime != nil && *s.Lifetime < time.Minute {
		errs = append(errs, fmt.Errorf("auth.session.lifetime: must be at least 1m (for example 12h)"))
	}
	if s.Lifetime != nil && *s.Lifetime > session.MaxLifetime {
		errs = append(errs, fmt.Errorf("auth.session.lifetime: must be at most %s (30 days)", session.MaxLifetime))
	}
	if s.Peers != nil {
		errs = append(errs, errors.New(PeersRemoved))
	}
	if n := s.SignOutConfigMap; n != "" {
		if len(n) > 253 || !dnsSubdomainRe.MatchString(n) {
			errs = append(errs, fmt.Errorf("auth.session.signOutConfigMap: %q is not a ConfigMap name (lower-case letters, digits, '-' and '.', for example agent-gateway-signouts)", n))
		}
		if len(keys) == 0 && len(keyErrs) == 0 {
			errs = append(errs, fmt.Errorf("auth.session.signOutConfigMap: needs auth.session.keys or auth.session.keysFile, the same on every replica"))
		}
	}
	return errs
}
