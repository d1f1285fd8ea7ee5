// Package config holds the agent-gateway configuration
// (docs/architecture.md "Configuration"): the YAML schema, strict parsing
// (unknown keys are rejected) and a side-effect-free Validate that reports
// every problem, one line per problem, each naming the offending key.
package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultSidecarTimeout applies when an agent's sidecar.timeout is omitted.
const DefaultSidecarTimeout = 10 * time.Second

// DefaultCheckpointTimeout applies when an agent's
// sidecar.checkpointTimeout is omitted: the deadline of the calls that
// take, restore, compare or remove checkpoints (a first checkpoint of a
// 200,000-file project takes longer than DefaultSidecarTimeout).
const DefaultCheckpointTimeout = 5 * time.Minute

// RoleAdmin is the only role that may use the gateway (PRD §4.1).
const RoleAdmin = "admin"

// Config is the whole gateway configuration file.
type Config struct {
	HTTPServer    HTTPServer   `yaml:"httpServer"`
	MetricsServer Server       `yaml:"metricsServer"`
	AgentRuntime  AgentRuntime `yaml:"agentRuntime"`
	Auth          Auth         `yaml:"auth"`
	WebDAV        WebDAV       `yaml:"webdav"`
	Audit         Audit        `yaml:"audit"`
	Limits        Limits       `yaml:"limits"`
	Kubernetes    Kubernetes   `yaml:"kubernetes"`
}

// Server is one listener. An empty metricsServer.address disables it.
type Server struct {
	Address string `yaml:"address"`
}

// Defaults of the httpServer timeouts.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyReadTimeout   = 10 * time.Second
	DefaultBodyIdleTimeout   = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultWatchHeartbeat    = 15 * time.Second
)

// HTTPServer is the main listener and how long it waits for clients. A
// client that trickles bytes holds a connection only this long.
type HTTPServer struct {
	Address string `yaml:"address"`
	// ReadHeaderTimeout bounds reading a request's line and headers.
	ReadHeaderTimeout *time.Duration `yaml:"readHeaderTimeout,omitempty"`
	// BodyReadTimeout bounds the whole body of a request that is not
	// authenticated (the login; what a refused client sends).
	BodyReadTimeout *time.Duration `yaml:"bodyReadTimeout,omitempty"`
	// BodyIdleTimeout bounds each read of an authenticated request's body:
	// an upload is never cut while it makes progress.
	BodyIdleTimeout *time.Duration `yaml:"bodyIdleTimeout,omitempty"`
	// IdleTimeout bounds a kept-alive connection between requests.
	IdleTimeout *time.Duration `yaml:"idleTimeout,omitempty"`
	// WatchHeartbeat is the interval of a live-change stream's keep-alive
	// comment; at each one the stream's credentials are checked again (a
	// signed-out session, a removed operator end it).
	WatchHeartbeat *time.Duration `yaml:"watchHeartbeat,omitempty"`
}

// Heartbeat is httpServer.watchHeartbeat or its default.
func (s HTTPServer) Heartbeat() time.Duration {
	return orDefault(s.WatchHeartbeat, DefaultWatchHeartbeat)
}

func orDefault(d *time.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return *d
}

// ReadHeader is httpServer.readHeaderTimeout or its default.
func (s HTTPServer) ReadHeader() time.Duration {
	return orDefault(s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
}

// BodyRead is httpServer.bodyReadTimeout or its default.
func (s HTTPServer) BodyRead() time.Duration {
	return orDefault(s.BodyReadTimeout, DefaultBodyReadTimeout)
}

// BodyIdle is httpServer.bodyIdleTimeout or its default.
func (s HTTPServer) BodyIdle() time.Duration {
	return orDefault(s.BodyIdleTimeout, DefaultBodyIdleTimeout)
}

// Idle is httpServer.idleTimeout or its default.
func (s HTTPServer) Idle() time.Duration { return orDefault(s.IdleTimeout, DefaultIdleTimeout) }

// AgentRuntime lists the statically configured agents.
type AgentRuntime struct {
	DefaultAgent string           `yaml:"defaultAgent"`
	Agents       map[string]Agent `yaml:"agents"`
	// SidecarTLS is the gateway's side of the mutual TLS with every
	// sidecar (required when an agent has a sidecar): the sidecars accept
	// only this client certificate.
	SidecarTLS *SidecarTLS `yaml:"sidecarTLS"`
	// Discovery finds more agents through the Kubernetes API.
	Discovery Discovery `yaml:"discovery"`
}

// SidecarTLS names the gateway's client certificate and key and the CA
// bundle the sidecars' serving certificates chain to (PEM files, re-read
// when they change). Each sidecar must present a certificate naming its
// agent (<agent-id>.sidecar.agent-workspace).
type SidecarTLS struct {
	CertFile string `yaml:"certFile"`
	KeyFile  string `yaml:"keyFile"`
	CAFile   string `yaml:"caFile"`
}

// Agent is one managed agent. A nil Sidecar means the agent has no file
// management (project_management_enabled=false).
type Agent struct {
	Provider       string          `yaml:"provider"`
	CodexAppServer *CodexAppServer `yaml:"codexAppServer"`
	Sidecar        *Sidecar        `yaml:"sidecar"`
}

// CodexAppServer is the agent's app-server; the gateway never calls it and
// only accepts the key so one agentRuntime block can serve several programs.
type CodexAppServer struct {
	Endpoint string `yaml:"endpoint"`
}

// Sidecar is the agent's agent-sidecar: Endpoint is its gRPC address
// (host:port), DavEndpoint the https:// base URL of its WebDAV server. Both
// are reached over mutual TLS (agentRuntime.sidecarTLS).
type Sidecar struct {
	Endpoint    string         `yaml:"endpoint"`
	DavEndpoint string         `yaml:"davEndpoint"`
	Timeout     *time.Duration `yaml:"timeout"`
	// CheckpointTimeout is the deadline of checkpoint calls (create,
	// restore, compare, list, delete; project and recursive deletes, which
	// take one first). The sidecar abandons such a call at its deadline
	// and keeps nothing of it.
	CheckpointTimeout *time.Duration `yaml:"checkpointTimeout"`
}

// CheckpointCallTimeout is the deadline of this sidecar's checkpoint calls.
func (s *Sidecar) CheckpointCallTimeout() time.Duration {
	if s == nil || s.CheckpointTimeout == nil {
		return max(DefaultCheckpointTimeout, s.CallTimeout())
	}
	return *s.CheckpointTimeout
}

// CallTimeout is the per-call deadline for this sidecar.
func (s *Sidecar) CallTimeout() time.Duration {
	if s == nil || s.Timeout == nil {
		return DefaultSidecarTimeout
	}
	return *s.Timeout
}

// Auth holds the static tokens and the optional trusted proxy.
type Auth struct {
	Tokens []Token `yaml:"tokens"`
	// TokensFile names a YAML file holding more tokens, in the same form as
	// auth.tokens (a list of {operator, role, sha256}; a mapping with a
	// single "tokens" key is accepted too), so that the hashes can come
	// from a Kubernetes Secret instead of the ConfigMap. Load reads it.
	TokensFile   string        `yaml:"tokensFile"`
	TrustedProxy *TrustedProxy `yaml:"trustedProxy"`
	Session      Session       `yaml:"session"`
	// FileTokens are the tokens read from TokensFile (not a YAML key).
	FileTokens []Token `yaml:"-"`
	// tokensFileErr is the problem reading TokensFile, reported by Validate.
	tokensFileErr error
}

// LoadTokensFile reads auth.tokensFile (when set) into FileTokens. Problems
// are kept for Validate, so that they are reported with the others.
func (c *Config) LoadTokensFile() {
	c.Auth.FileTokens, c.Auth.tokensFileErr = nil, nil
	if c.Auth.TokensFile != "" {
		c.Auth.FileTokens, c.Auth.tokensFileErr = readTokens(c.Auth.TokensFile)
	}
}

func readTokens(path string) ([]Token, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil, err
	}
	if len(node.Content) == 0 {
		return nil, nil
	}
	var wrapped struct {
		Tokens []Token `yaml:"tokens"`
	}
	target := any(&wrapped.Tokens) // a list of tokens
	if node.Content[0].Kind == yaml.MappingNode {
		target = &wrapped
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(target); err != nil {
		return nil, err
	}
	return wrapped.Tokens, nil
}

// Token is one static token, stored only as the SHA-256 hex of its value.
type Token struct {
	Operator string `yaml:"operator"`
	Role     string `yaml:"role"`
	SHA256   string `yaml:"sha256"`
}

// TrustedProxy names an authenticating reverse proxy (oauth2-proxy, see
// docs/sso.md) whose identity headers are believed only when the TCP peer
// is inside CIDRs (127.0.0.1/32 for a proxy in the gateway's pod).
type TrustedProxy struct {
	CIDRs        []string `yaml:"cidrs"`
	UserHeader   string   `yaml:"userHeader"`
	GroupsHeader string   `yaml:"groupsHeader"`
	// AdminGroup and AdminGroups map groups to the admin role: a member
	// of any of them is an admin, everyone else is refused (403).
	AdminGroup  string   `yaml:"adminGroup"`
	AdminGroups []string `yaml:"adminGroups"`
	// SignOutPath is where the portal sends the browser to sign out of
	// the proxy, with the proxy's rd parameter back to the portal;
	// default DefaultSignOutPath.
	SignOutPath string `yaml:"signOutPath"`
}

// DefaultSignOutPath is oauth2-proxy's sign-out endpoint.
const DefaultSignOutPath = "/oauth2/sign_out"

// Admins returns the groups whose members get the admin role (adminGroup
// and adminGroups together); call only after Validate succeeded.
func (p *TrustedProxy) Admins() []string {
	var out []string
	for _, g := range append([]string{p.AdminGroup}, p.AdminGroups...) {
		if g = strings.TrimSpace(g); g != "" && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// SignOut returns SignOutPath or its default.
func (p *TrustedProxy) SignOut() string {
	if p.SignOutPath == "" {
		return DefaultSignOutPath
	}
	return p.SignOutPath
}

// Prefixes parses CIDRs; call only after Validate succeeded.
func (p *TrustedProxy) Prefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, c := range p.CIDRs {
		if pfx, err := netip.ParsePrefix(strings.TrimSpace(c)); err == nil {
			out = append(out, pfx.Masked())
		}
	}
	return out
}

// WebDAV configures the /dav/ view.
type WebDAV struct {
	Writable bool `yaml:"writable"`
	// UnconditionalWrites says what happens to a write that replaces or
	// removes an existing resource without If-Match, If: entity tags or a
	// held lock: UnconditionalKeep (the default of a writable view) lets
	// it through once the sidecar kept what it replaces as a per-file
	// version (sync clients: rclone, gio/Nautilus, cadaver, the npm webdav
	// client); a sidecar whose checkpoints are off refuses it with 428,
	// saying so. UnconditionalRefuse answers 428 always. Keep needs
	// writable: true.
	UnconditionalWrites string `yaml:"unconditionalWrites"`
}

// webdav.unconditionalWrites values.
const (
	UnconditionalRefuse = "refuse"
	UnconditionalKeep   = "keep"
)

// KeepUnconditional reports whether unconditional writes are kept: on a
// writable view, unless webdav.unconditionalWrites is refuse.
func (w WebDAV) KeepUnconditional() bool {
	return w.UnconditionalWrites == UnconditionalKeep || (w.Writable && w.UnconditionalWrites == "")
}

// Audit configures the optional JSON-lines audit file.
type Audit struct {
	File string `yaml:"file"`
}

// Load reads and parses a config file. It does not validate.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, err := Parse(f)
	if err != nil {
		return nil, err
	}
	c.LoadTokensFile()
	return c, nil
}

// Parse decodes YAML strictly: unknown keys are an error. Defaults are
// applied; Validate is separate.
func Parse(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: %w", err)
	}
	if c.HTTPServer.Address == "" {
		c.HTTPServer.Address = ":8080"
	}
	return &c, nil
}

var (
	agentIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	hexRe     = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	headerRe  = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
)

// Validate reports every problem, one error per problem, joined.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	c.validateListeners(bad)
	c.AgentRuntime.validateAgents(bad)
	c.AgentRuntime.validateTLS(bad)
	c.AgentRuntime.Discovery.validate(bad)
	if _, ok := c.AgentRuntime.Agents[c.AgentRuntime.DefaultAgent]; !ok && c.AgentRuntime.DefaultAgent != "" && !c.AgentRuntime.Discovery.Enabled {
		bad("agentRuntime.defaultAgent", "%q is not a key of agentRuntime.agents", c.AgentRuntime.DefaultAgent)
	}
	c.Auth.validateTokens(bad)
	if p := c.Auth.TrustedProxy; p != nil {
		p.validate(bad)
	}
	c.WebDAV.validate(bad)
	c.Limits.validate(bad)
	c.Kubernetes.validate(bad)
	errs = append(errs, c.Auth.Session.validate()...)
	if len(c.Auth.Tokens) == 0 && c.Auth.TokensFile == "" && c.Auth.TrustedProxy == nil {
		bad("auth", "configure auth.tokens, auth.tokensFile or auth.trustedProxy: otherwise nobody can sign in")
	}
	return errors.Join(errs...)
}

// checkAddr requires a host:port listen address.
func checkAddr(bad func(key, format string, args ...any), key, addr string) {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		bad(key, "must be host:port (for example \":8080\" or \"127.0.0.1:0\"), got %q", addr)
	}
}

// positive checks an optional duration.
func positive(bad func(key, format string, args ...any), key string, d *time.Duration) {
	if d != nil && *d <= 0 {
		bad(key, "must be > 0 (for example 10s)")
	}
}

// validateListeners checks httpServer and metricsServer.
func (c *Config) validateListeners(bad func(key, format string, args ...any)) {
	checkAddr(bad, "httpServer.address", c.HTTPServer.Address)
	positive(bad, "httpServer.readHeaderTimeout", c.HTTPServer.ReadHeaderTimeout)
	positive(bad, "httpServer.bodyReadTimeout", c.HTTPServer.BodyReadTimeout)
	positive(bad, "httpServer.bodyIdleTimeout", c.HTTPServer.BodyIdleTimeout)
	positive(bad, "httpServer.idleTimeout", c.HTTPServer.IdleTimeout)
	positive(bad, "httpServer.watchHeartbeat", c.HTTPServer.WatchHeartbeat)
	if c.MetricsServer.Address != "" {
		checkAddr(bad, "metricsServer.address", c.MetricsServer.Address)
	}
}

// validateAgents checks agentRuntime.agents, in the order of their ids.
func (r AgentRuntime) validateAgents(bad func(key, format string, args ...any)) {
	if len(r.Agents) == 0 && !r.Discovery.Enabled {
		bad("agentRuntime.agents", "at least one agent is required (or agentRuntime.discovery.enabled: true)")
	}
	for _, id := range slices.Sorted(maps.Keys(r.Agents)) {
		a := r.Agents[id]
		key := "agentRuntime.agents." + id
		if !agentIDRe.MatchString(id) {
			bad(fmt.Sprintf("agentRuntime.agents[%q]", id), "agent id must be 1-63 characters of letters, digits, '.', '_' or '-', starting with a letter or digit")
			continue
		}
		if strings.TrimSpace(a.Provider) == "" {
			bad(key+".provider", "required (for example codex_app_server)")
		}
		if a.Sidecar != nil {
			a.Sidecar.validate(bad, key+".sidecar")
		}
	}
}

// validate checks one agent's sidecar; key is its prefix
// (agentRuntime.agents.<id>.sidecar).
func (s *Sidecar) validate(bad func(key, format string, args ...any), key string) {
	if s.Endpoint == "" {
		bad(key+".endpoint", "required (host:port of the sidecar's gRPC server)")
	} else if strings.Contains(s.Endpoint, "://") && !strings.HasPrefix(s.Endpoint, "dns:") && !strings.HasPrefix(s.Endpoint, "passthrough:") && !strings.HasPrefix(s.Endpoint, "unix:") {
		bad(key+".endpoint", "must be host:port, not a URL")
	} else if !strings.Contains(s.Endpoint, ":") {
		bad(key+".endpoint", "must be host:port")
	}
	if s.DavEndpoint != "" {
		u, err := url.Parse(s.DavEndpoint)
		switch {
		case err == nil && u.Scheme == "http":
			bad(key+".davEndpoint", "must be https:// (the sidecar serves only mutual TLS), got http://")
		case err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
			bad(key+".davEndpoint", "must be an https:// URL without credentials, query or fragment")
		}
	}
	positive(bad, key+".timeout", s.Timeout)
	positive(bad, key+".checkpointTimeout", s.CheckpointTimeout)
	if s.CheckpointTimeout != nil && *s.CheckpointTimeout > 0 && *s.CheckpointTimeout < s.CallTimeout() {
		bad(key+".checkpointTimeout", "must be at least sidecar.timeout (%v)", s.CallTimeout())
	}
}

// validateTokens checks auth.tokens and the tokens of auth.tokensFile; a
// token hash may appear only once across both.
func (a Auth) validateTokens(bad func(key, format string, args ...any)) {
	seenHash := map[string]bool{}
	checkToken := func(key string, t Token) {
		if strings.TrimSpace(t.Operator) == "" {
			bad(key+".operator", "required")
		}
		if t.Role == "" {
			bad(key+".role", "required (admin grants access; any other role is refused everywhere)")
		}
		if !hexRe.MatchString(t.SHA256) {
			bad(key+".sha256", "must be 64 hex characters (the SHA-256 of the token, never the token itself)")
		} else if h := strings.ToLower(t.SHA256); seenHash[h] {
			bad(key+".sha256", "duplicate token hash")
		} else {
			seenHash[h] = true
		}
	}
	for i, t := range a.Tokens {
		checkToken(fmt.Sprintf("auth.tokens[%d]", i), t)
	}
	if a.tokensFileErr != nil {
		bad("auth.tokensFile", "%v", a.tokensFileErr)
	}
	for i, t := range a.FileTokens {
		checkToken(fmt.Sprintf("auth.tokensFile[%d]", i), t)
	}
}

// validate checks auth.trustedProxy.
func (p *TrustedProxy) validate(bad func(key, format string, args ...any)) {
	if len(p.CIDRs) == 0 {
		bad("auth.trustedProxy.cidrs", "at least one CIDR is required")
	}
	for i, cidr := range p.CIDRs {
		if _, err := netip.ParsePrefix(strings.TrimSpace(cidr)); err != nil {
			bad(fmt.Sprintf("auth.trustedProxy.cidrs[%d]", i), "%q is not a CIDR (for example 10.0.0.0/8)", cidr)
		}
	}
	if !headerRe.MatchString(p.UserHeader) {
		bad("auth.trustedProxy.userHeader", "required header name (for example X-Forwarded-User)")
	}
	if !headerRe.MatchString(p.GroupsHeader) {
		bad("auth.trustedProxy.groupsHeader", "required header name (for example X-Forwarded-Groups)")
	}
	if strings.ContainsAny(p.AdminGroup, GroupSeparators) {
		bad("auth.trustedProxy.adminGroup", "%q: a group name cannot hold commas, semicolons or spaces (the groups header is split on them)", p.AdminGroup)
	}
	for i, g := range p.AdminGroups {
		if g == "" || strings.ContainsAny(g, GroupSeparators) {
			bad(fmt.Sprintf("auth.trustedProxy.adminGroups[%d]", i), "%q: a group name cannot be empty or hold commas, semicolons or spaces (the groups header is split on them)", g)
		}
	}
	if len(p.Admins()) == 0 {
		bad("auth.trustedProxy.adminGroups", "name at least one group whose members are admins (adminGroup or adminGroups): with none, every user of the proxy is refused")
	}
	if sp := p.SignOutPath; sp != "" && (!strings.HasPrefix(sp, "/") || strings.HasPrefix(sp, "//") || strings.ContainsAny(sp, "?#\\ ")) {
		bad("auth.trustedProxy.signOutPath", "%q must be a path on the portal's origin without a query (for example %s)", sp, DefaultSignOutPath)
	}
}

// GroupSeparators split the trusted proxy's groups header into groups.
const GroupSeparators = ", ;\t"

// validate checks webdav.unconditionalWrites.
func (w WebDAV) validate(bad func(key, format string, args ...any)) {
	switch w.UnconditionalWrites {
	case "", UnconditionalRefuse:
	case UnconditionalKeep:
		if !w.Writable {
			bad("webdav.unconditionalWrites", "keep needs webdav.writable: true")
		}
	default:
		bad("webdav.unconditionalWrites", "must be refuse or keep, got %q", w.UnconditionalWrites)
	}
}

// validateTLS requires agentRuntime.sidecarTLS's three files when an agent
// has a sidecar.
func (r AgentRuntime) validateTLS(bad func(key, format string, args ...any)) {
	needed := r.Discovery.Enabled || slices.ContainsFunc(slices.Collect(maps.Values(r.Agents)), func(a Agent) bool { return a.Sidecar != nil })
	if !needed && r.SidecarTLS == nil {
		return
	}
	t := r.SidecarTLS
	if t == nil {
		t = &SidecarTLS{}
	}
	for _, f := range []struct{ key, path, what string }{
		{"certFile", t.CertFile, "the gateway's client certificate (PEM)"},
		{"keyFile", t.KeyFile, "the key of certFile (PEM)"},
		{"caFile", t.CAFile, "the CA bundle the sidecars' certificates chain to (PEM)"},
	} {
		if f.path == "" {
			bad("agentRuntime.sidecarTLS."+f.key, "required: the path of %s; sidecars accept only mutual TLS (agent-gateway certs generates them)", f.what)
		}
	}
}

// HashToken returns the SHA-256 hex of a token as stored in auth.tokens.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
