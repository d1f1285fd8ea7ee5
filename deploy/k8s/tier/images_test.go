//go:build k8stier

package tier

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// imagesDir holds the docker-archive tarballs of make images.
func imagesDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("IMAGES_DIR")
	if d == "" {
		d = "../../../bin/images"
	}
	d, _ = filepath.Abs(d)
	for _, img := range []string{"agent-sidecar.tar", "agent-gateway.tar"} {
		if _, err := os.Stat(filepath.Join(d, img)); err != nil {
			t.Fatalf("%s missing: run make images first: %v", img, err)
		}
	}
	return d
}

// docker is a private dockerd for one test: its own data and exec roots
// under the test's directory, no bridge, no iptables, no forwarding, in a
// private mount namespace (its mounts vanish with it), stopped by PID.
type docker struct {
	t    *testing.T
	host string
	d    *proc
}

func startDocker(t *testing.T, dir string) *docker {
	t.Helper()
	need(t, "dockerd", "docker.io")
	need(t, "docker", "docker.io")
	need(t, "unshare", "util-linux")
	sock := filepath.Join(dir, "docker.sock")
	d := start(t, dir, "/usr/bin/unshare", "--mount", "--propagation", "private",
		"dockerd", "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"-H", "unix://"+sock, "--pidfile", filepath.Join(dir, "docker.pid"),
		"--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-forward=false", "--ip-masq=false",
		"--userland-proxy=false", "--log-level=warn")
	dk := &docker{t: t, host: "unix://" + sock, d: d}
	waitFor(t, "dockerd ready", 90*time.Second, func() error {
		_, err := dk.run(10*time.Second, "info")
		return err
	}, d)
	return dk
}

func (dk *docker) run(timeout time.Duration, args ...string) ([]byte, error) {
	return run(timeout, "docker", append([]string{"-H", dk.host}, args...)...)
}

func (dk *docker) must(args ...string) string {
	dk.t.Helper()
	out, err := dk.run(3*time.Minute, args...)
	if err != nil {
		dk.t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// rm removes a container at cleanup, before dockerd stops.
func (dk *docker) cleanupContainer(name string) {
	dk.t.Cleanup(func() { _, _ = dk.run(time.Minute, "rm", "-f", name) })
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// curlIn runs curl inside the network namespace of process pid (a
// container with no network of its own), so the test reaches its loopback.
func curlIn(t *testing.T, pid string, args ...string) (status int, body string) {
	t.Helper()
	out, err := run(30*time.Second, "nsenter", append([]string{"-t", pid, "-n", "curl", "-sS", "-m", "20", "-o", "/dev/stdout", "-w", "\n%{http_code}"}, args...)...)
	if err != nil {
		t.Fatalf("curl %v in the container's network: %v\n%s", args, err, out)
	}
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndex(s, "\n")
	status, _ = strconv.Atoi(s[i+1:])
	if i < 0 {
		return status, ""
	}
	return status, s[:i]
}

// TestImages is the image tier (issue #17): the images make images built
// run under a private dockerd. The sidecar runs read-only as UID 1000 with
// no capabilities and no network; the gateway image shares its network
// namespace (and so reaches it on loopback), answers /readyz, and creates
// a project through the sidecar, whose git init runs inside the image.
func TestImages(t *testing.T) {
	images := imagesDir(t)
	need(t, "nsenter", "util-linux")
	need(t, "curl", "curl")
	dir, err := os.MkdirTemp("", "awf-images-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	dk := startDocker(t, dir)
	for _, img := range []string{"agent-sidecar", "agent-gateway"} {
		dk.must("load", "-q", "-i", filepath.Join(images, img+".tar"))
	}

	// The dev overlay's single sign-on container runs /oauth2-proxy from the
	// gateway image (docs/sso.md): the pinned release, read-only, as 65532.
	t.Run("gateway image carries the pinned oauth2-proxy", func(t *testing.T) {
		out := dk.must("run", "--rm", "--read-only", "--network", "none", "--cap-drop", "ALL", "--user", "65532:65532",
			"--entrypoint", "/oauth2-proxy", "agent-gateway:dev", "--version")
		if !strings.Contains(out, "oauth2-proxy v7.15.6") {
			t.Errorf("/oauth2-proxy --version = %q, want v7.15.6 (deploy/k8s/tools/oauth2-proxy/go.mod)", out)
		}
	})

	t.Run("sidecar image is small", func(t *testing.T) {
		size, _ := strconv.ParseInt(dk.must("image", "inspect", "-f", "{{.Size}}", "agent-sidecar:dev"), 10, 64)
		t.Logf("agent-sidecar:dev is %d MB", size/1e6)
		if size > 260e6 {
			t.Errorf("agent-sidecar:dev is %d MB: apt caches left in it?", size/1e6)
		}
		left := dk.must("run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", "agent-sidecar:dev", "-c",
			"find /var/cache/apt /var/lib/apt/lists -type f ! -name lock ! -name partial 2>/dev/null | head")
		if left != "" {
			t.Errorf("apt caches in the sidecar image:\n%s", left)
		}
		gsize, _ := strconv.ParseInt(dk.must("image", "inspect", "-f", "{{.Size}}", "agent-gateway:dev"), 10, 64)
		t.Logf("agent-gateway:dev is %d MB", gsize/1e6)
	})

	// Volumes as the pod has them: owned by UID/GID 1000.
	projects, home, cfg := filepath.Join(dir, "projects"), filepath.Join(dir, "codex-home"), filepath.Join(dir, "sidecar-config")
	ckpt := filepath.Join(dir, "checkpoints") // the sidecar's own volume (services.checkpoints.dir in it)
	for _, d := range []string{projects, home, ckpt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	sidecarYAML, err := os.ReadFile("../base/agent/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cfg, "sidecar.yaml"), string(sidecarYAML), 0o644)
	// The Secrets' files as the pod mounts them: the sidecar's under
	// /etc/agent-sidecar/tls (its key for UID 1000), the gateway's under
	// /etc/agent-gateway/sidecar-tls (its key for UID 65532).
	pki := sidecarCerts(t, dir, "codex-a")
	gwCfg := filepath.Join(dir, "gateway-config")
	for _, m := range []struct {
		dir, cert, key string
		uid            int
	}{
		{filepath.Join(cfg, "tls"), "sidecar-codex-a.crt", "sidecar-codex-a.key", 1000},
		{filepath.Join(gwCfg, "sidecar-tls"), "gateway.crt", "gateway.key", 65532},
	} {
		for src, dst := range map[string]string{m.cert: "tls.crt", m.key: "tls.key", "ca.crt": "ca.crt"} {
			data, err := os.ReadFile(filepath.Join(pki, src))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(m.dir, dst), string(data), 0o644)
		}
		if err := os.Chmod(filepath.Join(m.dir, "tls.key"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(m.dir, "tls.key"), m.uid, m.uid); err != nil {
			t.Fatal(err)
		}
	}

	dk.cleanupContainer("sidecar")
	dk.must("run", "-d", "--name", "sidecar", "--read-only", "--user", "1000:1000", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--network", "none", "--tmpfs", "/tmp:size=64m,mode=1777",
		"-v", projects+":/data/projects", "-v", home+":/home/node/.codex", "-v", ckpt+":/data/checkpoints", "-v", cfg+":/etc/agent-sidecar:ro",
		"agent-sidecar:dev")
	pid := dk.must("inspect", "-f", "{{.State.Pid}}", "sidecar")
	logs := func(name string) string {
		out, _ := dk.run(time.Minute, "logs", "--tail", "30", name)
		return string(out)
	}

	waitFor(t, "sidecar /readyz", 60*time.Second, func() error {
		if st := dk.must("inspect", "-f", "{{.State.Status}}", "sidecar"); st != "running" {
			t.Fatalf("sidecar container %s:\n%s", st, logs("sidecar"))
		}
		if code, body := curlIn(t, pid, "http://127.0.0.1:9090/readyz"); code != 200 {
			return fmt.Errorf("status %d %s", code, body)
		}
		return nil
	})

	t.Run("sidecar runs read-only as 1000 with no capabilities and no network", func(t *testing.T) {
		var hc struct {
			ReadonlyRootfs bool
			NetworkMode    string
			CapDrop        []string
		}
		if err := json.Unmarshal([]byte(dk.must("inspect", "-f", "{{json .HostConfig}}", "sidecar")), &hc); err != nil {
			t.Fatal(err)
		}
		if !hc.ReadonlyRootfs || hc.NetworkMode != "none" {
			t.Errorf("HostConfig: %+v", hc)
		}
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(status), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) >= 2 && (f[0] == "Uid:" || f[0] == "Gid:") && (f[1] != "1000" || f[2] != "1000"):
				t.Errorf("sidecar process %s", l)
			case len(f) == 2 && (f[0] == "CapEff:" || f[0] == "CapPrm:" || f[0] == "CapBnd:") && f[1] != "0000000000000000":
				t.Errorf("sidecar process %s", l)
			}
		}
		ifaces, _ := run(10*time.Second, "nsenter", "-t", pid, "-n", "ip", "-o", "link")
		if n := strings.Count(strings.TrimSpace(string(ifaces)), "\n") + 1; n != 1 || !strings.Contains(string(ifaces), "lo:") {
			t.Errorf("the sidecar's network namespace has more than loopback:\n%s", ifaces)
		}
		if out, err := dk.run(time.Minute, "exec", "sidecar", "touch", "/usr/local/bin/x"); err == nil {
			t.Errorf("the sidecar's root file system is writable: %s", out)
		}
	})

	token := randomHex(24)
	sum := sha256.Sum256([]byte(token))
	// The dev gateway.yaml, pointed at the sidecar on the shared loopback;
	// metrics on 9190 because the sidecar's 9090 is taken in this namespace.
	writeFile(t, filepath.Join(gwCfg, "gateway.yaml"), fmt.Sprintf(`httpServer:    { address: "127.0.0.1:8080" }
metricsServer: { address: "127.0.0.1:9190" }
agentRuntime:
  defaultAgent: codex-a
  sidecarTLS:
    certFile: /etc/agent-gateway/sidecar-tls/tls.crt
    keyFile: /etc/agent-gateway/sidecar-tls/tls.key
    caFile: /etc/agent-gateway/sidecar-tls/ca.crt
  agents:
    codex-a:
      provider: codex_app_server
      codexAppServer: { endpoint: "ws://127.0.0.1:4500" }
      sidecar:
        endpoint: "127.0.0.1:9091"
        davEndpoint: "https://127.0.0.1:9092"
        timeout: 10s
auth:
  tokens:
    - { operator: tier-admin, role: admin, sha256: %q }
webdav: { writable: false }
audit:  { file: "" }
`, hex.EncodeToString(sum[:])), 0o644)
	dk.cleanupContainer("gateway")
	dk.must("run", "-d", "--name", "gateway", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--network", "container:sidecar", "-v", gwCfg+":/etc/agent-gateway:ro", "agent-gateway:dev")
	waitFor(t, "gateway /readyz", 60*time.Second, func() error {
		if st := dk.must("inspect", "-f", "{{.State.Status}}", "gateway"); st != "running" {
			t.Fatalf("gateway container %s:\n%s", st, logs("gateway"))
		}
		if code, body := curlIn(t, pid, "http://127.0.0.1:8080/readyz"); code != 200 {
			return fmt.Errorf("status %d %s", code, body)
		}
		return nil
	})
	if u := dk.must("inspect", "-f", "{{.Config.User}}", "gateway"); u != "65532:65532" {
		t.Errorf("gateway image runs as %q", u)
	}

	t.Run("create a project through the gateway image (git init in the sidecar image)", func(t *testing.T) {
		code, body := curlIn(t, pid, "-X", "POST", "-H", "Authorization: Bearer "+token, "-H", "Content-Type: application/json",
			"-d", `{"name":"demo"}`, "http://127.0.0.1:8080/api/v1/agent-gateway/agents/codex-a/projects")
		if code != 200 {
			t.Fatalf("create project: %d %s\nsidecar:\n%s\ngateway:\n%s", code, body, logs("sidecar"), logs("gateway"))
		}
		var p map[string]any
		_ = json.Unmarshal([]byte(body), &p)
		if p["name"] != "demo" || p["git_initialized"] != true {
			t.Fatalf("created project: %s", body)
		}
		fi, err := os.Stat(filepath.Join(projects, "demo", ".git", "HEAD"))
		if err != nil {
			t.Fatalf("no demo/.git/HEAD on the volume: %v", err)
		}
		if st := statOwner(fi); st != "1000:1000" {
			t.Errorf(".git/HEAD owned by %s, want 1000:1000", st)
		}
		if code, _ := curlIn(t, pid, "-H", "Authorization: Bearer "+token, "http://127.0.0.1:8080/api/v1/agent-gateway/agents/codex-a/projects"); code != 200 {
			t.Errorf("list projects: %d", code)
		}
		if code, _ := curlIn(t, pid, "-X", "PROPFIND", "-H", "Depth: 1", "-u", "admin:"+token, "http://127.0.0.1:8080/dav/codex-a/projects/"); code != 207 {
			t.Errorf("WebDAV PROPFIND through the gateway: %d", code)
		}
	})
}
