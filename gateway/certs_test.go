package gateway_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway"
)

// agent-gateway certs writes what is missing, prints file names only, and
// is idempotent.
func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	var out, errOut bytes.Buffer
	if code := gateway.Main([]string{"certs", "--dir", dir, "--agent", "codex-a", "--agent", "codex-b"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, name := range []string{"ca.crt", "ca.key", "gateway.crt", "gateway.key", "sidecar-codex-a.crt", "sidecar-codex-a.key", "sidecar-codex-b.crt", "sidecar-codex-b.key"} {
		if !strings.Contains(out.String(), "created "+name+"\n") {
			t.Errorf("output does not name %s:\n%s", name, out.String())
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	if strings.Contains(out.String()+errOut.String(), "PRIVATE KEY") || strings.Contains(out.String()+errOut.String(), "BEGIN") {
		t.Errorf("the command printed key or certificate material:\n%s", out.String())
	}
	out.Reset()
	if code := gateway.Main([]string{"certs", "--dir", dir, "--agent", "codex-a"}, &out, &errOut); code != 0 || out.String() != "nothing to do: every file exists\n" {
		t.Errorf("second run: exit %d, %q", code, out.String())
	}
	if code := gateway.Main([]string{"certs"}, &out, &errOut); code != 2 {
		t.Errorf("certs without --dir: exit %d", code)
	}
	os.Remove(filepath.Join(dir, "sidecar-codex-b.key"))
	errOut.Reset()
	if code := gateway.Main([]string{"certs", "--dir", dir, "--agent", "codex-b"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "sidecar-codex-b.crt exists without sidecar-codex-b.key") {
		t.Errorf("half a pair: exit %d, %q", code, errOut.String())
	}
}
