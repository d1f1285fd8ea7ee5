package k8s

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BinDir returns the directory holding the Kubernetes commands built by
// deploy/scripts/k8s-tools.sh (kubectl 1.37, kube-apiserver, kubelet, ...):
// $K8S_BIN when set, otherwise what the script prints, which builds them
// first if its cache outside the repository lacks them (minutes when cold,
// instant when warm). It never falls back to a kubectl from PATH: a
// different version renders and admits differently.
func BinDir() (string, error) {
	if d := os.Getenv("K8S_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "kubectl")); err != nil {
			return "", fmt.Errorf("K8S_BIN=%s has no kubectl: %w", d, err)
		}
		return d, nil
	}
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "scripts", "k8s-tools.sh")
	var stderr bytes.Buffer
	cmd := exec.Command(script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
}
