package sidecar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/sidecar/internal/dav"
)

// Config is the sidecar's YAML configuration. The keys are part of the
// product's interface (docs/architecture.md "Configuration"; every key in
// README's "Configuration reference"); unknown keys are rejected.
type Config struct {
	RPCServer     ServerConfig    `yaml:"rpcServer"`
	DavServer     DavServerConfig `yaml:"davServer"`
	MetricsServer ServerConfig    `yaml:"metricsServer"`
	Log           LogConfig       `yaml:"log"`
	Services      ServicesConfig  `yaml:"services"`
	TLS           TLSConfig       `yaml:"tls"`
}

// TLSConfig is the mutual TLS of the rpcServer and davServer listeners
// (internal/pki): this sidecar's serving certificate and key, and the CA
// bundle the gateway's client certificate must chain to. Required: there
// is no plaintext mode, the agent shares the pod's network. The files are
// re-read when they change (rotation without restart).
type TLSConfig struct {
	CertFile     string `yaml:"certFile"`
	KeyFile      string `yaml:"keyFile"`
	ClientCAFile string `yaml:"clientCAFile"`
}

func (t TLSConfig) validate(bad badFunc) {
	for _, f := range []struct{ key, path, what string }{
		{"tls.certFile", t.CertFile, "this sidecar's serving certificate (PEM)"},
		{"tls.keyFile", t.KeyFile, "the key of tls.certFile (PEM)"},
		{"tls.clientCAFile", t.ClientCAFile, "the CA bundle the gateway's client certificate chains to (PEM)"},
	} {
		if f.path == "" {
			bad(f.key, "must be set: the path of %s; rpcServer and davServer serve only mutual TLS", f.what)
		}
	}
}

// ServerConfig is one listener.
type ServerConfig struct {
	// Address is host:port; port 0 binds a free port (logged as "listening").
	Address string `yaml:"address"`
}

// DavServerConfig is the WebDAV listener.
type DavServerConfig struct {
	Address string `yaml:"address"`
	// AllowUnconditionalWrites lets a WebDAV write replace or remove an
	// existing resource without If-Match, an If: entity tag or a held lock
	// (plain WebDAV semantics, what litmus and rclone expect). Default
	// false: such a write gets 428 Precondition Required. Only for a
	// sidecar no gateway fronts (tests, benchmarks).
	AllowUnconditionalWrites bool `yaml:"allowUnconditionalWrites"`
	// MaxLocksPerOperator bounds the WebDAV locks one operator (the
	// gateway's X-Operator) holds at once; one more is 507 LOCK_LIMIT. The
	// lock table holds at most 1,024 in all.
	MaxLocksPerOperator int `yaml:"maxLocksPerOperator"`
	// MaxLockTimeout caps the timeout a LOCK may ask for (a Go duration;
	// "Infinite" gets it).
	MaxLockTimeout string `yaml:"maxLockTimeout"`
}

// LogConfig selects the hclog level and format.
type LogConfig struct {
	Level  string `yaml:"level"`  // trace, debug, info, warn, error
	Format string `yaml:"format"` // json or text
}

// ServicesConfig groups the sidecar's services.
type ServicesConfig struct {
	Project     ProjectConfig     `yaml:"project"`
	Checkpoints CheckpointsConfig `yaml:"checkpoints"`
	Watch       WatchConfig       `yaml:"watch"`
}

// ProjectConfig is services.project: the volumes and the limits davfs enforces.
type ProjectConfig struct {
	ProjectsRootDir     string   `yaml:"projectsRootDir"`
	CodexHomeDir        string   `yaml:"codexHomeDir"`
	MaxEditableFileSize int64    `yaml:"maxEditableFileSize"`
	MaxUploadSize       int64    `yaml:"maxUploadSize"`
	MaxPageSize         int      `yaml:"maxPageSize"`
	MaxPathLength       int      `yaml:"maxPathLength"`
	MaxPathDepth        int      `yaml:"maxPathDepth"`
	DeniedDirectories   []string `yaml:"deniedDirectories"`
}

// Limits accepted by Validate. They keep a typo (an extra zero) from turning
// into an unbounded allocation.
const (
	maxEditableFileSizeLimit = 64 << 20
	maxPageSizeLimit         = 10000
	maxPathLengthLimit       = 65536
	maxPathDepthLimit        = 1024
)

// DefaultConfig returns the defaults listed in README's "Configuration
// reference"; a YAML file overrides only the keys it sets (a
// deniedDirectories list replaces the default list; ".git" is always denied
// by davfs).
func DefaultConfig() Config {
	return Config{
		RPCServer: ServerConfig{Address: ":9091"},
		DavServer: DavServerConfig{Address: ":9092", MaxLocksPerOperator: dav.DefaultMaxLocksPerOperator,
			MaxLockTimeout: dav.DefaultMaxLockTimeout.String()},
		MetricsServer: ServerConfig{Address: ":9090"},
		Log:           LogConfig{Level: "info", Format: "json"},
		Services: ServicesConfig{Project: ProjectConfig{
			ProjectsRootDir:     "/data/projects",
			CodexHomeDir:        "/home/node/.codex",
			MaxEditableFileSize: davfs.DefaultMaxEditableFileSize,
			MaxUploadSize:       davfs.DefaultMaxUploadSize,
			MaxPageSize:         davfs.DefaultMaxPageSize,
			MaxPathLength:       davfs.DefaultMaxPathLength,
			MaxPathDepth:        davfs.DefaultMaxPathDepth,
			DeniedDirectories:   davfs.DefaultDeniedNames(),
		},
			Checkpoints: DefaultCheckpointsConfig(),
		},
	}
}

// LoadConfig reads the YAML file at path over DefaultConfig. It reports every
// unknown key (by its full dotted name) and every type error; it does not
// call Validate.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(data)
}

// ParseConfig is LoadConfig for YAML already in memory.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	if root.Kind == 0 { // empty document: all defaults
		return cfg, nil
	}
	var errs []error
	checkKeys(root.Content[0], reflect.TypeOf(cfg), "", &errs)
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				errs = append(errs, fmt.Errorf("config: %s", e))
			}
			return Config{}, errors.Join(errs...)
		}
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// checkKeys walks a mapping node against the yaml tags of t so that an
// unknown key is reported with its full dotted name (prefix: the parent's
// name and a dot).
func checkKeys(n *yaml.Node, t reflect.Type, prefix string, errs *[]error) {
	if t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode {
		return
	}
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		ft, ok := fields[k.Value]
		if !ok {
			*errs = append(*errs, fmt.Errorf("%s: unknown key (line %d)", key, k.Line))
			continue
		}
		checkKeys(v, ft, key+".", errs)
	}
}

// Validate reports every problem of c, each on its own line naming the key.
// It is fast and has no side effects: it does not touch the file system or
// the network.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	addrs := map[string]string{}
	for _, s := range []struct {
		key  string
		addr string
	}{
		{"rpcServer.address", c.RPCServer.Address},
		{"davServer.address", c.DavServer.Address},
		{"metricsServer.address", c.MetricsServer.Address},
	} {
		if err := validAddress(s.addr); err != nil {
			bad(s.key, "%v", err)
			continue
		}
		if _, port, _ := net.SplitHostPort(s.addr); port != "0" {
			if other, dup := addrs[s.addr]; dup {
				bad(s.key, "same address as %s (%q)", other, s.addr)
			}
			addrs[s.addr] = s.key
		}
	}
	if !slices.Contains([]string{"trace", "debug", "info", "warn", "error"}, strings.ToLower(c.Log.Level)) {
		bad("log.level", "must be one of trace, debug, info, warn, error (got %q)", c.Log.Level)
	}
	if c.Log.Format != "json" && c.Log.Format != "text" {
		bad("log.format", "must be json or text (got %q)", c.Log.Format)
	}

	c.DavServer.validateLocks(bad)
	c.Services.Watch.validate(bad)
	p := c.Services.Project
	const pre = "services.project."
	for _, d := range []struct{ key, dir string }{
		{pre + "projectsRootDir", p.ProjectsRootDir},
		{pre + "codexHomeDir", p.CodexHomeDir},
	} {
		switch {
		case d.dir == "":
			bad(d.key, "must be set")
		case !filepath.IsAbs(d.dir):
			bad(d.key, "must be an absolute path (got %q)", d.dir)
		case filepath.Clean(d.dir) == "/":
			bad(d.key, "must not be the file system root")
		}
	}
	a, b := filepath.Clean(p.ProjectsRootDir), filepath.Clean(p.CodexHomeDir)
	if filepath.IsAbs(a) && filepath.IsAbs(b) && (within(a, b) || within(b, a)) {
		bad(pre+"codexHomeDir", "must not overlap services.project.projectsRootDir")
	}
	between(bad, pre+"maxEditableFileSize", p.MaxEditableFileSize, maxEditableFileSizeLimit, " bytes")
	if p.MaxUploadSize < 1 {
		bad(pre+"maxUploadSize", "must be at least 1 byte (got %d)", p.MaxUploadSize)
	}
	between(bad, pre+"maxPageSize", p.MaxPageSize, maxPageSizeLimit, "")
	between(bad, pre+"maxPathLength", p.MaxPathLength, maxPathLengthLimit, "")
	between(bad, pre+"maxPathDepth", p.MaxPathDepth, maxPathDepthLimit, "")
	for i, name := range p.DeniedDirectories {
		key := pre + "deniedDirectories[" + strconv.Itoa(i) + "]"
		switch {
		case name == "":
			bad(key, "must not be empty")
		case name == "." || name == "..":
			bad(key, "must not be %q", name)
		case strings.ContainsAny(name, "/\x00"):
			bad(key, "must be a single name without '/' or NUL (got %q)", name)
		}
	}
	c.Services.Checkpoints.validate(p, bad)
	c.TLS.validate(bad)
	return errors.Join(errs...)
}

// maxLockTimeoutLimit: a lock outliving its client by more than a day
// only keeps others out.
const maxLockTimeoutLimit = 24 * time.Hour

func (d DavServerConfig) validateLocks(bad badFunc) {
	between(bad, "davServer.maxLocksPerOperator", d.MaxLocksPerOperator, dav.DefaultMaxLocks, " (the lock table's size)")
	if t, err := time.ParseDuration(d.MaxLockTimeout); err != nil || t < time.Second || t > maxLockTimeoutLimit {
		bad("davServer.maxLockTimeout", "must be a duration between 1s and 24h such as 10m (got %q)", d.MaxLockTimeout)
	}
}

// lockTimeout is davServer.maxLockTimeout (validated).
func (d DavServerConfig) lockTimeout() time.Duration {
	t, _ := time.ParseDuration(d.MaxLockTimeout)
	return t
}

// badFunc reports one problem of a configuration key.
type badFunc func(key, format string, args ...any)

// between reports key unless 1 <= v <= hi; unit follows hi in the message.
func between[T int | int64](bad badFunc, key string, v, hi T, unit string) {
	if v < 1 || v > hi {
		bad(key, "must be between 1 and %d%s (got %d)", hi, unit, v)
	}
}

func validAddress(addr string) error {
	if addr == "" {
		return errors.New("must be set (host:port)")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("must be host:port (got %q)", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port must be a number between 0 and 65535 (got %q)", port)
	}
	return nil
}
