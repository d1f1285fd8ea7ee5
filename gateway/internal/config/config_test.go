package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `
httpServer: { address: "127.0.0.1:0" }
metricsServer: { address: "" }
agentRuntime:
  defaultAgent: codex-a
  sidecarTLS: { certFile: /etc/agent-gateway/sidecar-tls/tls.crt, keyFile: /etc/agent-gateway/sidecar-tls/tls.key, caFile: /etc/agent-gateway/sidecar-tls/ca.crt }
  agents:
    codex-a:
      provider: codex_app_server
      codexAppServer: { endpoint: "ws://agent-codex-a:4500" }
      sidecar:
        endpoint: "agent-codex-a-sidecar:9091"
        davEndpoint: "https://agent-codex-a-sidecar:9092"
        timeout: 10s
    codex-b:
      provider: codex_app_server
auth:
  tokens:
    - { operator: alice, role: admin, sha256: "0000000000000000000000000000000000000000000000000000000000000000" }
  trustedProxy:
    cidrs: ["10.0.0.0/8"]
    userHeader: X-Forwarded-User
    groupsHeader: X-Forwarded-Groups
    adminGroup: workspace-admins
webdav: { writable: false }
audit:  { file: "" }
`

func TestExampleIsValid(t *testing.T) {
	c, err := Parse(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got := c.AgentRuntime.Agents["codex-a"].Sidecar.CallTimeout().String(); got != "10s" {
		t.Errorf("timeout = %s", got)
	}
	if got := c.AgentRuntime.Agents["codex-a"].Sidecar.CheckpointCallTimeout(); got != DefaultCheckpointTimeout {
		t.Errorf("checkpoint timeout = %s, want the default %s", got, DefaultCheckpointTimeout)
	}
	if c.AgentRuntime.Agents["codex-b"].Sidecar != nil {
		t.Error("codex-b must have no sidecar")
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(string) string
		want []string // substrings, one per expected line
	}{
		{"bad http address", r(`address: "127.0.0.1:0"`, `address: "nope"`), []string{"httpServer.address"}},
		{"bad metrics address", r(`metricsServer: { address: "" }`, `metricsServer: { address: "x" }`), []string{"metricsServer.address"}},
		{"unknown default", r(`defaultAgent: codex-a`, `defaultAgent: codex-z`), []string{"agentRuntime.defaultAgent"}},
		{"empty provider", r(`provider: codex_app_server
      codexAppServer`, `provider: ""
      codexAppServer`), []string{"agentRuntime.agents.codex-a.provider"}},
		{"zero timeout", r(`timeout: 10s`, `timeout: 0s`), []string{"agentRuntime.agents.codex-a.sidecar.timeout"}},
		{"negative timeout", r(`timeout: 10s`, `timeout: -5s`), []string{"agentRuntime.agents.codex-a.sidecar.timeout"}},
		{"zero checkpoint timeout", r(`timeout: 10s`, "timeout: 10s\n        checkpointTimeout: 0s"), []string{"agentRuntime.agents.codex-a.sidecar.checkpointTimeout"}},
		{"checkpoint timeout below timeout", r(`timeout: 10s`, "timeout: 10s\n        checkpointTimeout: 5s"), []string{"agentRuntime.agents.codex-a.sidecar.checkpointTimeout: must be at least sidecar.timeout"}},
		{"empty endpoint", r(`endpoint: "agent-codex-a-sidecar:9091"`, `endpoint: ""`), []string{"agentRuntime.agents.codex-a.sidecar.endpoint"}},
		{"url endpoint", r(`endpoint: "agent-codex-a-sidecar:9091"`, `endpoint: "http://x:1"`), []string{"sidecar.endpoint"}},
		{"bad dav endpoint", r(`davEndpoint: "https://agent-codex-a-sidecar:9092"`, `davEndpoint: "ftp://x"`), []string{"sidecar.davEndpoint"}},
		{"plain http dav endpoint", r(`davEndpoint: "https://agent-codex-a-sidecar:9092"`, `davEndpoint: "http://agent-codex-a-sidecar:9092"`),
			[]string{"agentRuntime.agents.codex-a.sidecar.davEndpoint: must be https:// (the sidecar serves only mutual TLS), got http://"}},
		{"no sidecarTLS", func(s string) string {
			return r("  sidecarTLS: { certFile: /etc/agent-gateway/sidecar-tls/tls.crt, keyFile: /etc/agent-gateway/sidecar-tls/tls.key, caFile: /etc/agent-gateway/sidecar-tls/ca.crt }\n", "")(s)
		}, []string{"agentRuntime.sidecarTLS.certFile: required", "agentRuntime.sidecarTLS.keyFile: required", "agentRuntime.sidecarTLS.caFile: required"}},
		{"sidecarTLS without caFile", r(`, caFile: /etc/agent-gateway/sidecar-tls/ca.crt }`, ` }`), []string{"agentRuntime.sidecarTLS.caFile: required"}},
		{"bad agent id", r(`    codex-b:`, `    "bad id!":`), []string{`agentRuntime.agents["bad id!"]`}},
		{"short hash", r(`sha256: "0000000000000000000000000000000000000000000000000000000000000000"`, `sha256: "abc"`), []string{"auth.tokens[0].sha256"}},
		{"no operator", r(`operator: alice`, `operator: ""`), []string{"auth.tokens[0].operator"}},
		{"no role", r(`role: admin`, `role: ""`), []string{"auth.tokens[0].role"}},
		{"bad cidr", r(`["10.0.0.0/8"]`, `["10.0.0.0/8", "nope"]`), []string{"auth.trustedProxy.cidrs[1]"}},
		{"no admin group", r(`adminGroup: workspace-admins`, `adminGroup: ""`), []string{"auth.trustedProxy.adminGroups: name at least one group"}},
		{"empty adminGroups", r(`adminGroup: workspace-admins`, `adminGroups: []`), []string{"auth.trustedProxy.adminGroups: name at least one group"}},
		{"bad adminGroups entry", r(`adminGroup: workspace-admins`, `adminGroups: [ops, "a,b", ""]`), []string{"auth.trustedProxy.adminGroups[1]", "auth.trustedProxy.adminGroups[2]"}},
		{"adminGroup with a space", r(`adminGroup: workspace-admins`, `adminGroup: "workspace admins"`), []string{"auth.trustedProxy.adminGroup: \"workspace admins\""}},
		{"signOutPath not a path", r(`adminGroup: workspace-admins`, "adminGroup: workspace-admins\n    signOutPath: https://evil.example/"), []string{"auth.trustedProxy.signOutPath"}},
		{"keep without writable", r(`webdav: { writable: false }`, `webdav: { writable: false, unconditionalWrites: keep }`), []string{"webdav.unconditionalWrites"}},
		{"bad unconditionalWrites", r(`webdav: { writable: false }`, `webdav: { writable: true, unconditionalWrites: allow }`), []string{"webdav.unconditionalWrites"}},
		{"bad kubernetes namespace", r(`audit:  { file: "" }`, "audit:  { file: \"\" }\nkubernetes: { namespace: Agent_NS }"), []string{"kubernetes.namespace: \"Agent_NS\" is not a namespace name"}},
		{"kubeconfig with spaces", r(`audit:  { file: "" }`, "audit:  { file: \"\" }\nkubernetes: { kubeconfig: \" /k \" }"), []string{"kubernetes.kubeconfig"}},
		{"several at once", func(s string) string {
			s = r(`timeout: 10s`, `timeout: 0s`)(s)
			s = r(`defaultAgent: codex-a`, `defaultAgent: x`)(s)
			return r(`sha256: "0000000000000000000000000000000000000000000000000000000000000000"`, `sha256: "zz"`)(s)
		}, []string{"sidecar.timeout", "defaultAgent", "sha256"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse(strings.NewReader(c.edit(good)))
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(c.want) {
				t.Errorf("%d lines, want %d:\n%s", len(lines), len(c.want), err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no line names %s:\n%s", w, err)
				}
			}
		})
	}
}

func TestUnconditionalWrites(t *testing.T) {
	// Left out, a writable view keeps (the default since issue #25).
	for v, keep := range map[string]bool{"": true, "refuse": false, "keep": true} {
		cfg, err := Parse(strings.NewReader(r(`webdav: { writable: false }`, `webdav: { writable: true, unconditionalWrites: "`+v+`" }`)(good)))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil || cfg.WebDAV.KeepUnconditional() != keep {
			t.Errorf("unconditionalWrites %q: %v, keep %v", v, err, cfg.WebDAV.KeepUnconditional())
		}
	}
	cfg, err := Parse(strings.NewReader(good))
	if err != nil || cfg.WebDAV.Writable || cfg.WebDAV.KeepUnconditional() {
		t.Errorf("a read-only view keeps unconditional writes: %v", err)
	}
}

func TestNoAgentsNoAuth(t *testing.T) {
	c, err := Parse(strings.NewReader("httpServer: { address: \":8080\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "agentRuntime.agents") || !strings.Contains(err.Error(), "auth:") {
		t.Errorf("Validate = %v", err)
	}
}

func TestUnknownKeysRejected(t *testing.T) {
	for _, doc := range []string{
		"httpServer: { address: \":1\", extra: 1 }\n",
		strings.Replace(good, "timeout: 10s", "timeout: 10s\n        token: abc", 1),
		"bogus: true\n",
	} {
		if _, err := Parse(strings.NewReader(doc)); err == nil {
			t.Errorf("accepted unknown key in:\n%s", doc)
		}
	}
}

func TestHashToken(t *testing.T) {
	// echo -n secret | sha256sum
	if got := HashToken("secret"); got != "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b" {
		t.Errorf("HashToken = %s", got)
	}
}

func r(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("test edit does not apply: " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
}

func TestTokensFile(t *testing.T) {
	dir := t.TempDir()
	h1, h2 := HashToken("one"), HashToken("two")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := write("list.yaml", "- { operator: alice, role: admin, sha256: \""+h1+"\" }\n- { operator: bob, role: user, sha256: \""+h2+"\" }\n")
	mapping := write("map.yaml", "tokens:\n  - { operator: alice, role: admin, sha256: \""+h1+"\" }\n")
	badHash := write("bad.yaml", "- { operator: alice, role: admin, sha256: \"nope\" }\n")
	unknown := write("unknown.yaml", "- { operator: alice, role: admin, sha256: \""+h1+"\", token: plaintext }\n")
	cases := []struct {
		file    string
		tokens  int
		wantErr string
	}{
		{list, 2, ""},
		{mapping, 1, ""},
		{badHash, 1, "auth.tokensFile[0].sha256"},
		{unknown, 0, "auth.tokensFile"},
		{filepath.Join(dir, "missing.yaml"), 0, "auth.tokensFile"},
	}
	for _, c := range cases {
		doc := strings.Replace(good, "  tokens:\n    - { operator: alice, role: admin, sha256: \"0000000000000000000000000000000000000000000000000000000000000000\" }\n", "  tokensFile: "+c.file+"\n", 1)
		cfgPath := write("gw.yaml", doc)
		cfg, err := Load(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Auth.Tokens) != 0 || len(cfg.Auth.FileTokens) != c.tokens {
			t.Errorf("%s: %d inline, %d file tokens", c.file, len(cfg.Auth.Tokens), len(cfg.Auth.FileTokens))
		}
		err = cfg.Validate()
		if c.wantErr == "" && err != nil {
			t.Errorf("%s: %v", c.file, err)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: Validate = %v, want %s", c.file, err, c.wantErr)
		}
	}
}

// The deploy manifests' gateway configs parse (their token and session key
// files live in Secrets, so only those keys may be reported).
func TestDeployConfigsParse(t *testing.T) {
	for _, p := range []string{"../../../deploy/k8s/base/gateway/gateway.yaml", "../../../deploy/k8s/overlays/dev/gateway.yaml"} {
		if _, err := os.Stat(p); err != nil {
			continue // the deploy tree is optional for this package
		}
		cfg, err := Load(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		err = cfg.Validate()
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "auth.tokensFile:") && !strings.HasPrefix(line, "auth.session.keysFile:") {
					t.Errorf("%s: %s", p, line)
				}
			}
		}
	}
}

// httpServer's timeouts: defaults when omitted, parsed as durations when
// set, and each refused when not positive, naming its key.
func TestHTTPServerTimeouts(t *testing.T) {
	c, err := Parse(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	h := c.HTTPServer
	if h.ReadHeader() != DefaultReadHeaderTimeout || h.BodyRead() != DefaultBodyReadTimeout ||
		h.BodyIdle() != DefaultBodyIdleTimeout || h.Idle() != DefaultIdleTimeout {
		t.Errorf("defaults: %v %v %v %v", h.ReadHeader(), h.BodyRead(), h.BodyIdle(), h.Idle())
	}
	set := strings.Replace(good, `httpServer: { address: "127.0.0.1:0" }`,
		`httpServer: { address: "127.0.0.1:0", readHeaderTimeout: 3s, bodyReadTimeout: 4s, bodyIdleTimeout: 2m, idleTimeout: 90s }`, 1)
	c, err = Parse(strings.NewReader(set))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	h = c.HTTPServer
	if got := []string{h.ReadHeader().String(), h.BodyRead().String(), h.BodyIdle().String(), h.Idle().String()}; strings.Join(got, " ") != "3s 4s 2m0s 1m30s" {
		t.Errorf("set: %v", got)
	}
	bad := strings.Replace(good, `httpServer: { address: "127.0.0.1:0" }`,
		`httpServer: { address: "127.0.0.1:0", readHeaderTimeout: 0s, bodyReadTimeout: -1s, bodyIdleTimeout: 0s, idleTimeout: -5m }`, 1)
	c, err = Parse(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("non-positive timeouts accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	for _, key := range []string{"httpServer.readHeaderTimeout", "httpServer.bodyReadTimeout", "httpServer.bodyIdleTimeout", "httpServer.idleTimeout"} {
		if !strings.Contains(err.Error(), key+": must be > 0") {
			t.Errorf("%s not refused: %v", key, err)
		}
	}
	if len(lines) != 4 {
		t.Errorf("%d lines, want 4: %v", len(lines), err)
	}
	if _, err := Parse(strings.NewReader(strings.Replace(good, `address: "127.0.0.1:0"`, `address: "127.0.0.1:0", bodyReadTimeout: soon`, 1))); err == nil {
		t.Error("a timeout that is not a duration parsed")
	}
}

func TestKubernetesBlock(t *testing.T) {
	cfg, err := Parse(strings.NewReader(good + "kubernetes: { kubeconfig: /k/config, namespace: agent-workspace }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil || cfg.Kubernetes.Namespace != "agent-workspace" || cfg.Kubernetes.Kubeconfig != "/k/config" {
		t.Fatalf("%v %+v", err, cfg.Kubernetes)
	}
	if _, err := Parse(strings.NewReader(good + "kubernetes: { context: x }\n")); err == nil {
		t.Fatal("unknown key under kubernetes accepted")
	}
}

func TestDiscoveryBlock(t *testing.T) {
	noAgents := "httpServer: { address: \"127.0.0.1:0\" }\nauth: { tokens: [{ operator: a, role: admin, sha256: \"0000000000000000000000000000000000000000000000000000000000000000\" }] }\n"
	cfg, err := Parse(strings.NewReader(noAgents + "agentRuntime: { discovery: { enabled: true } }\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil || strings.Contains(err.Error(), "agentRuntime.agents") || !strings.Contains(err.Error(), "agentRuntime.sidecarTLS.certFile: required") {
		t.Fatalf("discovery without agents needs sidecarTLS only: %v", err)
	}
	d := cfg.AgentRuntime.Discovery
	if d.Label() != DefaultDiscoveryLabelKey || d.GRPCPort() != "grpc" || d.DavPort() != "webdav" {
		t.Fatalf("defaults: %s %s %s", d.Label(), d.GRPCPort(), d.DavPort())
	}
	tlsBlock := "  sidecarTLS: { certFile: /c, keyFile: /k, caFile: /ca }\n"
	for _, tc := range []struct{ block, want string }{
		{"  discovery: { enabled: true }\n", ""},
		{"  discovery: { enabled: true, labelKey: \"bad key!\" }\n", "agentRuntime.discovery.labelKey"},
		{"  discovery: { enabled: true, grpcPortName: GRPC_PORT }\n", "agentRuntime.discovery.grpcPortName"},
		{"  discovery: { enabled: true, davPortName: grpc }\n", "agentRuntime.discovery.davPortName: must differ"},
		{"  discovery: { enabled: true, timeout: 0s }\n", "agentRuntime.discovery.timeout"},
		{"  discovery: { enabled: true, timeout: 10s, checkpointTimeout: 1s }\n", "agentRuntime.discovery.checkpointTimeout"},
	} {
		cfg, err := Parse(strings.NewReader(noAgents + "agentRuntime:\n" + tlsBlock + tc.block))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") != 0) {
			t.Errorf("%s: %v, want one line naming %q", strings.TrimSpace(tc.block), err, tc.want)
		}
	}
}
