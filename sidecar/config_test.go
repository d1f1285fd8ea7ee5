package sidecar

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseConfigDefaults(t *testing.T) {
	for _, in := range []string{"", "{}\n", "services: {}\n"} {
		cfg, err := ParseConfig([]byte(in))
		if err != nil {
			t.Fatalf("ParseConfig(%q): %v", in, err)
		}
		if !reflect.DeepEqual(cfg, DefaultConfig()) {
			t.Errorf("ParseConfig(%q) = %+v, want defaults", in, cfg)
		}
		// tls has no default: the defaults miss exactly its three keys.
		err = cfg.Validate()
		want := []string{
			"tls.certFile: must be set: the path of this sidecar's serving certificate (PEM); rpcServer and davServer serve only mutual TLS",
			"tls.keyFile: must be set: the path of the key of tls.certFile (PEM); rpcServer and davServer serve only mutual TLS",
			"tls.clientCAFile: must be set: the path of the CA bundle the gateway's client certificate chains to (PEM); rpcServer and davServer serve only mutual TLS",
		}
		if err == nil || !reflect.DeepEqual(strings.Split(err.Error(), "\n"), want) {
			t.Errorf("defaults: Validate = %v, want the three tls lines", err)
		}
		withTLS(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("defaults with tls do not validate: %v", err)
		}
	}
}

// withTLS sets the three tls keys (Validate does not open the files).
func withTLS(c *Config) {
	c.TLS = TLSConfig{CertFile: "/etc/agent-sidecar/tls/tls.crt", KeyFile: "/etc/agent-sidecar/tls/tls.key", ClientCAFile: "/etc/agent-sidecar/tls/ca.crt"}
}

func TestParseConfigTLS(t *testing.T) {
	cfg, err := ParseConfig([]byte("tls: { certFile: /t/tls.crt, keyFile: /t/tls.key, clientCAFile: /t/ca.crt }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS != (TLSConfig{CertFile: "/t/tls.crt", KeyFile: "/t/tls.key", ClientCAFile: "/t/ca.crt"}) {
		t.Errorf("tls: %+v", cfg.TLS)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	cfg.TLS.KeyFile = ""
	if err := cfg.Validate(); err == nil || err.Error() != "tls.keyFile: must be set: the path of the key of tls.certFile (PEM); rpcServer and davServer serve only mutual TLS" {
		t.Errorf("Validate without tls.keyFile: %v", err)
	}
	if _, err := ParseConfig([]byte("tls: { caFile: /x }\n")); err == nil || !strings.Contains(err.Error(), "tls.caFile: unknown key") {
		t.Errorf("unknown tls key: %v", err)
	}
}

func TestParseConfigDefaultsExample(t *testing.T) {
	// Every default of README's "Configuration reference" (agent-sidecar's
	// files, listeners and log) written out as YAML.
	const in = `
rpcServer:     { address: ":9091" }
davServer:     { address: ":9092" }
metricsServer: { address: ":9090" }     # /metrics, /healthz, /readyz
log:           { level: info, format: json }
services:
  project:
    projectsRootDir: /data/projects
    codexHomeDir: /home/node/.codex
    maxEditableFileSize: 1048576
    maxUploadSize: 104857600            # WebDAV PUT bodies (any bytes); larger → 413, nothing written
    maxPageSize: 500
    maxPathLength: 4096
    maxPathDepth: 64
    deniedDirectories: [.git, .hg, .svn, node_modules, .venv, venv, vendor, dist, build, .next, .cache, __pycache__]
`
	cfg, err := ParseConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, DefaultConfig()) {
		t.Errorf("got %+v, want the defaults (the example equals them)", cfg)
	}
}

func TestParseConfigOverrides(t *testing.T) {
	cfg, err := ParseConfig([]byte("services:\n  project:\n    maxPageSize: 7\n    deniedDirectories: [secret]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Services.Project
	if p.MaxPageSize != 7 || !reflect.DeepEqual(p.DeniedDirectories, []string{"secret"}) || p.MaxPathDepth != 64 {
		t.Errorf("got %+v", p)
	}
}

func TestParseConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"unknown top-level key", "rpcserver: {address: ':1'}\n", []string{"rpcserver: unknown key (line 1)"}},
		{"unknown nested keys", "services:\n  project:\n    maxPageSise: 3\n    foo: 1\n  other: {}\n",
			[]string{"services.project.maxPageSise: unknown key (line 3)", "services.project.foo: unknown key (line 4)", "services.other: unknown key (line 5)"}},
		{"wrong type", "services:\n  project:\n    maxPageSize: many\n", []string{"config: line 3: cannot unmarshal"}},
		{"not YAML", "rpcServer: [\n", []string{"config: yaml:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string // one line each, in order
	}{
		{"ok", func(*Config) {}, nil},
		{"ports zero may repeat", func(c *Config) {
			c.RPCServer.Address, c.DavServer.Address, c.MetricsServer.Address = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		}, nil},
		{"addresses", func(c *Config) {
			c.RPCServer.Address, c.DavServer.Address, c.MetricsServer.Address = "", "localhost", ":9092"
		}, []string{
			"rpcServer.address: must be set (host:port)",
			`davServer.address: must be host:port (got "localhost")`,
		}},
		{"duplicate address", func(c *Config) { c.DavServer.Address = ":9091" },
			[]string{`davServer.address: same address as rpcServer.address (":9091")`}},
		{"bad port", func(c *Config) { c.MetricsServer.Address = ":99999" },
			[]string{`metricsServer.address: port must be a number between 0 and 65535 (got "99999")`}},
		{"log", func(c *Config) { c.Log.Level, c.Log.Format = "loud", "xml" }, []string{
			`log.level: must be one of trace, debug, info, warn, error (got "loud")`,
			`log.format: must be json or text (got "xml")`,
		}},
		{"everything in services.project", func(c *Config) {
			p := &c.Services.Project
			p.ProjectsRootDir, p.CodexHomeDir = "", "relative/dir"
			p.MaxEditableFileSize, p.MaxUploadSize, p.MaxPageSize, p.MaxPathLength, p.MaxPathDepth = 0, -1, 10001, 0, 2000
			p.DeniedDirectories = []string{"ok", "", "..", "a/b"}
		}, []string{
			"services.project.projectsRootDir: must be set",
			`services.project.codexHomeDir: must be an absolute path (got "relative/dir")`,
			"services.project.maxEditableFileSize: must be between 1 and 67108864 bytes (got 0)",
			"services.project.maxUploadSize: must be at least 1 byte (got -1)",
			"services.project.maxPageSize: must be between 1 and 10000 (got 10001)",
			"services.project.maxPathLength: must be between 1 and 65536 (got 0)",
			"services.project.maxPathDepth: must be between 1 and 1024 (got 2000)",
			"services.project.deniedDirectories[1]: must not be empty",
			`services.project.deniedDirectories[2]: must not be ".."`,
			`services.project.deniedDirectories[3]: must be a single name without '/' or NUL (got "a/b")`,
		}},
		{"overlapping roots", func(c *Config) { c.Services.Project.CodexHomeDir = "/data/projects/x/.codex" },
			[]string{"services.project.codexHomeDir: must not overlap services.project.projectsRootDir"}},
		{"root dir", func(c *Config) { c.Services.Project.ProjectsRootDir = "/" },
			[]string{"services.project.projectsRootDir: must not be the file system root"}},
		// WebDAV lock caps (issue #23): one operator cannot fill the table
		// for an hour.
		{"lock caps at their limits", func(c *Config) { c.DavServer.MaxLocksPerOperator, c.DavServer.MaxLockTimeout = 1024, "24h" }, nil},
		{"lock caps", func(c *Config) { c.DavServer.MaxLocksPerOperator, c.DavServer.MaxLockTimeout = 1025, "48h" }, []string{
			"davServer.maxLocksPerOperator: must be between 1 and 1024 (the lock table's size) (got 1025)",
			`davServer.maxLockTimeout: must be a duration between 1s and 24h such as 10m (got "48h")`,
		}},
		{"lock caps unset", func(c *Config) { c.DavServer.MaxLocksPerOperator, c.DavServer.MaxLockTimeout = 0, "soon" }, []string{
			"davServer.maxLocksPerOperator: must be between 1 and 1024 (the lock table's size) (got 0)",
			`davServer.maxLockTimeout: must be a duration between 1s and 24h such as 10m (got "soon")`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			withTLS(&cfg)
			tc.edit(&cfg)
			err := cfg.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate: no error")
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Validate:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
