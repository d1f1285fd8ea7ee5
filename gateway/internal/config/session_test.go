package config

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSessionKeys(t *testing.T) {
	k1 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	k2 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte("# rotated 2026-12-01\n"+k2+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withSession := func(block string) *Config {
		t.Helper()
		c, err := Parse(strings.NewReader(strings.Replace(good, "auth:\n", "auth:\n  session:\n"+block, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := withSession("    keys: [\"" + k1 + "\"]\n    keysFile: " + file + "\n    lifetime: 2h\n")
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	keys := c.Auth.Session.SealKeys()
	if len(keys) != 2 || keys[0][0] != 2 || keys[1][0] != 1 {
		t.Errorf("keys = %v, want the file's key first, then auth.session.keys", keys)
	}
	if c.Auth.Session.SessionLifetime().String() != "2h0m0s" {
		t.Errorf("lifetime = %v", c.Auth.Session.SessionLifetime())
	}
	for _, tc := range []struct{ block, want string }{
		{"    keys: [\"c2hvcnQ=\"]\n", "auth.session.keys[0]: must decode to 32 bytes"},
		{"    keys: [\"%%%\"]\n", "auth.session.keys[0]: not base64"},
		{"    keysFile: " + filepath.Join(dir, "missing") + "\n", "auth.session.keysFile"},
		{"    lifetime: 1s\n", "auth.session.lifetime"},
		{"    lifetime: 721h\n", "auth.session.lifetime"},
	} {
		err := withSession(tc.block).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: Validate = %v, want %q", tc.block, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), k1) {
			t.Errorf("error shows a key: %v", err)
		}
	}
}

func TestSessionPeers(t *testing.T) {
	k := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	parse := func(metrics, block string) *Config {
		t.Helper()
		y := strings.Replace(good, `metricsServer: { address: "" }`, `metricsServer: { address: "`+metrics+`" }`, 1)
		c, err := Parse(strings.NewReader(strings.Replace(y, "auth:\n", "auth:\n  session:\n"+block, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ok := parse(":9090", "    keys: [\""+k+"\"]\n    peers: [\"agent-gateway-peers:9090\", \"10.0.0.7:9090\", \"[fd00::7]:9090\"]\n")
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(ok.Auth.Session.Peers) != 3 {
		t.Errorf("peers = %v", ok.Auth.Session.Peers)
	}
	for _, tc := range []struct {
		name, metrics, block string
		want                 []string
	}{
		{"no port", ":9090", "    keys: [\"" + k + "\"]\n    peers: [\"agent-gateway-peers\"]\n",
			[]string{"auth.session.peers[0]: must be host:port"}},
		{"bad port, empty host, a URL", ":9090", "    keys: [\"" + k + "\"]\n    peers: [\"ok:9090\", \"h:0\", \":9090\", \"http://h:9090\", \"h:x\"]\n",
			[]string{"auth.session.peers[1]:", "auth.session.peers[2]:", "auth.session.peers[3]:", "auth.session.peers[4]:"}},
		{"no keys", ":9090", "    peers: [\"h:9090\"]\n",
			[]string{"auth.session.peers: needs auth.session.keys or auth.session.keysFile"}},
		{"no metrics listener", "", "    keys: [\"" + k + "\"]\n    peers: [\"h:9090\"]\n",
			[]string{"auth.session.peers: needs metricsServer.address"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parse(tc.metrics, tc.block).Validate()
			if err == nil {
				t.Fatalf("Validate accepted %q", tc.block)
			}
			lines := strings.Split(err.Error(), "\n")
			for _, w := range tc.want {
				n := 0
				for _, l := range lines {
					if strings.HasPrefix(l, w) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("want exactly one line starting %q, got:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "peers[0]") && tc.name != "no port" {
				t.Errorf("a good entry reported: %v", err)
			}
			if strings.Contains(err.Error(), k) {
				t.Errorf("error shows a key: %v", err)
			}
		})
	}
}
