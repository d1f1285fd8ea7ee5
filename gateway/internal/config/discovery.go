package config

import (
	"regexp"
	"time"
)

// Discovery defaults (agentRuntime.discovery).
const (
	DefaultDiscoveryLabelKey = "agentworkspace.io/agent-id"
	DefaultGRPCPortName      = "grpc"
	DefaultDavPortName       = "webdav"
)

// Discovery is agentRuntime.discovery: agents found through the Kubernetes
// API (docs/discovery.md), from the EndpointSlices of their sidecar
// Services in the gateway's namespace (kubernetes.namespace) that carry
// LabelKey; the label's value is the agent's id. Only ready addresses are
// routed to, and the sidecar must present its agent's certificate.
type Discovery struct {
	Enabled bool `yaml:"enabled"`
	// LabelKey is the label naming the agent (default
	// DefaultDiscoveryLabelKey).
	LabelKey string `yaml:"labelKey"`
	// GRPCPortName and DavPortName are the Service port names of the
	// sidecar's gRPC and WebDAV listeners (defaults "grpc", "webdav").
	GRPCPortName string `yaml:"grpcPortName"`
	DavPortName  string `yaml:"davPortName"`
	// Provider is shown for discovered agents (default codex_app_server).
	Provider string `yaml:"provider"`
	// Timeout and CheckpointTimeout are the discovered sidecars' call
	// deadlines, as agentRuntime.agents.<id>.sidecar's.
	Timeout           *time.Duration `yaml:"timeout"`
	CheckpointTimeout *time.Duration `yaml:"checkpointTimeout"`
}

// Label is LabelKey or its default.
func (d Discovery) Label() string { return orString(d.LabelKey, DefaultDiscoveryLabelKey) }

// GRPCPort is GRPCPortName or its default.
func (d Discovery) GRPCPort() string { return orString(d.GRPCPortName, DefaultGRPCPortName) }

// DavPort is DavPortName or its default.
func (d Discovery) DavPort() string { return orString(d.DavPortName, DefaultDavPortName) }

// ProviderName is Provider or codex_app_server.
func (d Discovery) ProviderName() string { return orString(d.Provider, "codex_app_server") }

// Sidecar is the call settings of every discovered sidecar (no endpoints).
func (d Discovery) Sidecar() *Sidecar {
	return &Sidecar{Timeout: d.Timeout, CheckpointTimeout: d.CheckpointTimeout}
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

var (
	// labelKeyRe is a qualified label key: an optional DNS-subdomain
	// prefix and a name of at most 63 characters.
	labelKeyRe = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	// portNameRe is a Service port name (an IANA service name).
	portNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$`)
)

// validate checks agentRuntime.discovery.
func (d Discovery) validate(bad func(key, format string, args ...any)) {
	const key = "agentRuntime.discovery"
	if d.LabelKey != "" && (!labelKeyRe.MatchString(d.LabelKey) || len(d.LabelKey) > 253+1+63) {
		bad(key+".labelKey", "%q is not a label key (for example %s)", d.LabelKey, DefaultDiscoveryLabelKey)
	}
	for _, p := range []struct{ k, v string }{{"grpcPortName", d.GRPCPortName}, {"davPortName", d.DavPortName}} {
		if p.v != "" && !portNameRe.MatchString(p.v) {
			bad(key+"."+p.k, "%q is not a Service port name (lower-case letters, digits and '-', at most 15)", p.v)
		}
	}
	if d.GRPCPort() == d.DavPort() {
		bad(key+".davPortName", "must differ from grpcPortName (%q)", d.GRPCPort())
	}
	positive(bad, key+".timeout", d.Timeout)
	positive(bad, key+".checkpointTimeout", d.CheckpointTimeout)
	s := d.Sidecar()
	if d.CheckpointTimeout != nil && *d.CheckpointTimeout > 0 && *d.CheckpointTimeout < s.CallTimeout() {
		bad(key+".checkpointTimeout", "must be at least discovery.timeout (%v)", s.CallTimeout())
	}
}

// ValidAgentID reports whether id has the form of an agent id (as the keys
// of agentRuntime.agents; a discovered label value must have it too).
func ValidAgentID(id string) bool { return agentIDRe.MatchString(id) }
