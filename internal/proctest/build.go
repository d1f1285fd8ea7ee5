package proctest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Builder builds one main package of this module at most once per test
// process. A harness keeps one Builder in a package-level variable: that
// once-per-process cache is the only package-level state the harnesses have.
type Builder struct {
	// Pkg is the package to build, relative to the module root
	// ("./sidecar/cmd/agent-sidecar"); the binary is named after its last
	// element.
	Pkg string
	// EnvVar names the variable that, when set, holds a prebuilt binary to
	// use instead ("AGENT_SIDECAR_BIN").
	EnvVar string

	once sync.Once
	bin  string
	err  error
}

// Binary returns $EnvVar if set, else the path of a binary built from Pkg
// (once per test process) into a directory shared by the current user's
// test processes and readable by every user (a sidecar runs as UID 1000).
// The directory is content-addressed: identical sources give an identical
// binary, so test processes reuse one file instead of leaving a copy each;
// binaries unused for a day are pruned.
func (b *Builder) Binary() (string, error) {
	if bin := os.Getenv(b.EnvVar); bin != "" {
		return bin, nil
	}
	b.once.Do(func() { b.bin, b.err = build(b.Pkg) })
	return b.bin, b.err
}

// Path returns bin when it is set (a harness's Options.Binary), else
// Binary(), failing the test when the build fails.
func (b *Builder) Path(t testing.TB, bin string) string {
	t.Helper()
	if bin != "" {
		return bin
	}
	bin, err := b.Binary()
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	return bin
}

func build(pkg string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w (is Go installed? run make setup)", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the module")
	}
	dir := filepath.Join(os.TempDir(), "proctest-bin-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	prune(dir)
	tmp, err := os.CreateTemp(dir, "build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), pkg)
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return "", err
	}
	sum := h.Sum(nil)
	bin := filepath.Join(dir, path.Base(pkg)+"-"+hex.EncodeToString(sum[:8]))
	now := time.Now()
	if _, err := os.Stat(bin); err == nil {
		_ = os.Chtimes(bin, now, now) // in use: keep it from being pruned
		return bin, nil
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// prune removes binaries and stale partial builds older than a day.
func prune(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
