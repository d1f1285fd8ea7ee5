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

func TestSessionSignOutConfigMap(t *testing.T) {
	k := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	parse := func(block string) *Config {
		t.Helper()
		c, err := Parse(strings.NewReader(strings.Replace(good, "auth:\n", "auth:\n  session:\n"+block, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ok := parse("    keys: [\"" + k + "\"]\n    signOutConfigMap: agent-gateway-signouts\n")
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if ok.Auth.Session.SignOutConfigMap != "agent-gateway-signouts" {
		t.Errorf("signOutConfigMap = %q", ok.Auth.Session.SignOutConfigMap)
	}
	for _, tc := range []struct {
		name, block string
		want        []string
	}{
		// The peer protocol was removed: its key is refused by name, in
		// one line that says what replaces it, whatever its value.
		{"peers", "    keys: [\"" + k + "\"]\n    peers: [\"agent-gateway-peers:9090\"]\n", []string{PeersRemoved}},
		{"empty peers", "    keys: [\"" + k + "\"]\n    peers: []\n", []string{PeersRemoved}},
		{"not a name", "    keys: [\"" + k + "\"]\n    signOutConfigMap: Sign_Outs\n",
			[]string{"auth.session.signOutConfigMap: \"Sign_Outs\" is not a ConfigMap name"}},
		{"no keys", "    signOutConfigMap: agent-gateway-signouts\n",
			[]string{"auth.session.signOutConfigMap: needs auth.session.keys or auth.session.keysFile"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parse(tc.block).Validate()
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
			if strings.Contains(err.Error(), k) {
				t.Errorf("error shows a key: %v", err)
			}
		})
	}
}
