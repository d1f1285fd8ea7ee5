//go:build k8stier

package tier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The node tier's fixed addresses, inside the network namespace the test
// creates (nothing here is visible from the host's network).
const (
	bridgeName = "awfbr0"
	bridgeIP   = "10.244.0.1" // the node's address, the pods' gateway and the cluster DNS
	podCIDR    = "10.244.0.0/24"
	innerEnv   = "AWF_NODE_TIER_DIR"
	nodeNS     = "agent-workspace-dev"
)

// TestNode is the node tier (issue #17). The test re-runs itself as PID 1
// of new network, mount and PID namespaces (unshare): etcd, the API server,
// controller-manager, scheduler, containerd, kubelet, kube-proxy and CoreDNS
// run there, so every iptables chain, mount, network namespace and CNI
// address they create lives and dies with those namespaces, and when the
// inner test exits the kernel ends every process left in them (container
// shims included). The outer test then checks that nothing is left: no
// process naming the work directory, no mount under it, no cgroup the
// kubelet created.
func TestNode(t *testing.T) {
	if dir := os.Getenv(innerEnv); dir != "" {
		inner(t, dir)
		return
	}
	bin := binDir(t)
	images := imagesDir(t)
	for cmd, pkg := range map[string]string{"unshare": "util-linux", "containerd": "containerd", "ctr": "containerd",
		"runc": "runc", "iptables": "iptables", "ip": "iproute2", "conntrack": "conntrack", "openssl": "openssl", "mount": "mount"} {
		need(t, cmd, pkg)
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat("/usr/lib/cni/" + p); err != nil {
			t.Fatalf("CNI plugin %s missing: install containernetworking-plugins (make setup)", p)
		}
	}
	if os.Getuid() != 0 {
		t.Fatal("the node tier needs root (namespaces, containerd, kubelet)")
	}
	// One node tier per machine at a time: the kubelet's cgroups
	// (kubepods) are machine-wide, and this test removes the ones it made.
	lockNodeTier(t)
	dir, err := os.MkdirTemp("", "awf-node-")
	if err != nil {
		t.Fatal(err)
	}
	before := kubeletCgroups()
	hostRules := hostKubeRules(t)
	t.Cleanup(func() {
		cleanupAfterNamespaces(t, dir, before)
		// The node's iptables chains lived in its own network namespace:
		// the host's rules are what they were.
		if after := hostKubeRules(t); after != hostRules {
			t.Errorf("the host's iptables rules naming KUBE-/CNI- changed:\nbefore:\n%s\nafter:\n%s", hostRules, after)
		}
		if out, _ := run(10*time.Second, "ip", "-o", "link", "show", bridgeName); len(out) > 0 && !strings.Contains(string(out), "does not exist") {
			t.Errorf("bridge %s exists on the host: %s", bridgeName, out)
		}
	})

	// The stand-in for the pause and app-server images, built here.
	standin := filepath.Join(dir, "standin")
	if out, err := runEnv(3*time.Minute, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-o", standin, "../cmd/standin"); err != nil {
		t.Fatalf("go build standin: %v\n%s", err, out)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	args := []string{"--net", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private", "--kill-child",
		self, "-test.run", "^TestNode$", "-test.v", "-test.timeout", "24m"}
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Env = append(os.Environ(), innerEnv+"="+dir, "K8S_BIN="+bin, "IMAGES_DIR="+images)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	err = cmd.Run()
	t.Logf("node tier (inside the namespaces) took %.0f s", time.Since(start).Seconds())
	if err != nil {
		t.Fatalf("node tier: %v (logs of every daemon are printed above on failure)", err)
	}
}

// lockNodeTier takes a machine-wide lock for the test's duration, waiting
// at most 30 minutes for another node tier to finish.
func lockNodeTier(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/run/lock/agentworkspace-node-tier.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	deadline := time.Now().Add(30 * time.Minute)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			t.Fatal("another node tier has held /run/lock/agentworkspace-node-tier.lock for 30 minutes")
		}
		time.Sleep(time.Second)
	}
}

// hostKubeRules returns the host's iptables rules and chains that name
// KUBE- or CNI- (the kubelet's, kube-proxy's and the CNI plugins' prefixes).
func hostKubeRules(t *testing.T) string {
	t.Helper()
	out, err := run(30*time.Second, "iptables-save")
	if err != nil {
		t.Fatalf("iptables-save: %v\n%s", err, out)
	}
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "KUBE-") || strings.Contains(l, "CNI-") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// kubeletCgroups lists the cgroup directories the kubelet and containerd
// create (kubepods, k8s.io) under each v1 controller or the v2 root.
func kubeletCgroups() map[string]bool {
	found := map[string]bool{}
	for _, name := range []string{"kubepods", "kubepods.slice", "k8s.io"} {
		ms, _ := filepath.Glob("/sys/fs/cgroup/*/" + name)
		for _, m := range ms {
			found[m] = true
		}
		if fileExists("/sys/fs/cgroup/" + name) {
			found["/sys/fs/cgroup/"+name] = true
		}
	}
	return found
}

// removeCgroupTree removes a cgroup directory depth-first (cgroup
// directories are removed with rmdir; their files are virtual). A cgroup
// still holding a process cannot be removed; its processes are killed by
// PID first.
func removeCgroupTree(root string) error {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		for attempt := 0; ; attempt++ {
			killCgroupProcs(dirs[i])
			err := syscall.Rmdir(dirs[i])
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if attempt == 50 {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

func killCgroupProcs(dir string) {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// cleanupAfterNamespaces runs in the outer test once the namespaces are
// gone: it removes the cgroups the node created (they outlive the PID
// namespace), ends any process still naming the work directory (none is
// expected: the PID namespace's end killed them), checks that no mount is
// left under it, and removes it.
func cleanupAfterNamespaces(t *testing.T, dir string, before map[string]bool) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids := procsMentioning(dir)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("processes outlived the node's namespaces (killed): %v", pids)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for cg := range kubeletCgroups() {
		if before[cg] {
			continue
		}
		if err := removeCgroupTree(cg); err != nil {
			t.Errorf("cgroup cleanup: %v", err)
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir) {
			t.Errorf("mount left on the host: %s", f[4])
			_ = syscall.Unmount(f[4], syscall.MNT_DETACH)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove %s: %v", dir, err)
	}
}

// procsMentioning lists processes whose command line contains s.
func procsMentioning(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inner runs as PID 1 of the node's namespaces.
func inner(t *testing.T, dir string) {
	bin := binDir(t)
	images := imagesDir(t)
	if os.Getpid() != 1 {
		t.Fatal("the inner node test must run as PID 1 of its own PID namespace (run TestNode, not this directly)")
	}
	// Private, empty /run, /var/lib and /var/log for this mount namespace:
	// containerd, CNI and the kubelet write to fixed paths there
	// (/run/netns, /var/lib/cni, /var/log/pods, /var/lib/kubelet/device-plugins).
	for _, m := range []string{"/run", "/var/lib", "/var/log"} {
		if err := syscall.Mount("tmpfs", m, "tmpfs", 0, "mode=755,size=512m"); err != nil {
			t.Fatalf("mount tmpfs on %s: %v", m, err)
		}
	}
	// The network: loopback, and one bridge whose address is the node's.
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", bridgeIP + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
		// The node's own connections to Service addresses need a route
		// before kube-proxy's OUTPUT rules rewrite them (the namespace has
		// no default route: nothing leaves it).
		{"route", "add", "10.96.0.0/16", "dev", bridgeName},
	} {
		mustRun(t, 30*time.Second, "ip", args...)
	}
	writeFile(t, "/proc/sys/net/ipv4/ip_forward", "1\n", 0o644)

	n := &node{t: t, dir: dir, bin: bin}
	n.cp = startControlPlane(t, dir, bin, true)
	n.startContainerd(images)
	n.startKubernetes()
	n.deploy()
	n.acceptance()
	n.checkpointStoreHidden()
	n.podBoundary()
	if n.kubeRouter {
		n.networkPolicy()
	}
	n.discoverThirdAgent()
	n.twoReplicaSignOut()
	n.sso() // last: it rolls the gateway (node_sso_test.go)
}

type node struct {
	t        *testing.T
	dir, bin string
	cp       *controlPlane
	ctrSock  string
	procs    []*proc
	volumes  map[string]string // claim name -> host directory
	// The gateway's Service address and an admin token for it.
	gatewayURL, token string
	// kubeRouter: kube-router enforces NetworkPolicy ($AWF_KUBE_ROUTER).
	kubeRouter bool
}

func (n *node) ctr(args ...string) string {
	n.t.Helper()
	return string(mustRun(n.t, 5*time.Minute, "ctr", append([]string{"--address", n.ctrSock, "--namespace", "k8s.io"}, args...)...))
}

func (n *node) startContainerd(images string) {
	t := n.t
	root := filepath.Join(n.dir, "containerd")
	n.ctrSock = filepath.Join(root, "containerd.sock")
	netd := filepath.Join(n.dir, "cni", "net.d")
	writeFile(t, filepath.Join(netd, "10-awf.conflist"), fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "awf",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]],
             "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}
  }]
}
`, bridgeName, podCIDR, bridgeIP, filepath.Join(n.dir, "cni", "ipam")), 0o644)
	cfg := filepath.Join(root, "config.toml")
	writeFile(t, cfg, fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/awf/pause:1"
  # This VM refuses negative oom_score_adj values.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, filepath.Join(root, "root"), filepath.Join(root, "state"), n.ctrSock, netd), 0o644)
	c := start(t, n.dir, "/usr/bin/containerd", "--config", cfg, "--log-level", "warn")
	n.procs = append(n.procs, c)
	// Registered after containerd's own stop, so it runs before it: every
	// container process is killed by PID (from the kubelet's cgroups)
	// while containerd still runs.
	t.Cleanup(func() {
		for cg := range kubeletCgroups() {
			_ = filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					killCgroupProcs(p)
				}
				return nil
			})
		}
	})
	waitFor(t, "containerd ready", 60*time.Second, func() error {
		_, err := run(10*time.Second, "ctr", "--address", n.ctrSock, "version")
		return err
	}, c)

	standin := filepath.Join(n.dir, "standin")
	pause := filepath.Join(n.dir, "pause.tar")
	if err := writeImageTar(pause, standin, []string{"localhost/awf/pause:1"}, []string{"/standin"}); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(n.dir, "app-server.tar")
	if err := writeImageTar(app, standin, []string{"registry.example.internal/agent-codex/app-server:0.1.0"}, []string{"/standin", "-listen", ":4500"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, tar := range []string{pause, app, filepath.Join(images, "agent-sidecar.tar"), filepath.Join(images, "agent-gateway.tar")} {
		n.ctr("images", "import", tar)
	}
	// make images tags agent-*:dev; the overlay names them in its registry.
	n.ctr("images", "tag", "--force", "docker.io/library/agent-sidecar:dev", "registry.example.internal/agent-workspace/agent-sidecar:0.1.0")
	n.ctr("images", "tag", "--force", "docker.io/library/agent-gateway:dev", "registry.example.internal/agent-workspace/agent-gateway:0.1.0")
	t.Logf("images imported into containerd in %.1f s", time.Since(start).Seconds())
}

func (n *node) startKubernetes() {
	t := n.t
	kc := n.cp.kubeconfig
	cm := start(t, n.dir, filepath.Join(n.bin, "kube-controller-manager"), "--kubeconfig="+kc,
		"--controllers=*,-csrsigning,-nodeipam", "--leader-elect=false", "--use-service-account-credentials=false",
		"--service-account-private-key-file="+n.cp.saKey, "--root-ca-file="+filepath.Join(n.cp.certDir, "apiserver.crt"),
		"--bind-address=127.0.0.1", "--allocate-node-cidrs=false", "--v=1")
	sch := start(t, n.dir, filepath.Join(n.bin, "kube-scheduler"), "--kubeconfig="+kc, "--leader-elect=false", "--bind-address=127.0.0.1", "--v=1")

	resolv := filepath.Join(n.dir, "resolv.conf")
	writeFile(t, resolv, "nameserver "+bridgeIP+"\n", 0o644)
	kcfg := filepath.Join(n.dir, "kubelet.yaml")
	writeFile(t, kcfg, fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
address: 127.0.0.1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://%s
clusterDNS: [%q]
clusterDomain: cluster.local
resolvConf: %q
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
serializeImagePulls: false
syncFrequency: 10s
fileCheckFrequency: 10s
`, n.ctrSock, bridgeIP, resolv), 0o644)
	kl := start(t, n.dir, filepath.Join(n.bin, "kubelet"), "--config="+kcfg, "--kubeconfig="+kc,
		"--root-dir="+filepath.Join(n.dir, "kubelet"), "--hostname-override=localhost", "--node-ip="+bridgeIP, "--v=1")

	pcfg := filepath.Join(n.dir, "kube-proxy.yaml")
	writeFile(t, pcfg, fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
hostnameOverride: localhost
mode: iptables
clusterCIDR: %q
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Pods share one bridge: without masquerading, a reply from a Service's pod
# to another pod on the bridge bypasses the node's conntrack unless
# br_netfilter hands bridged frames to iptables. With kube-router enforcing
# NetworkPolicy it stays off (the policy must see the client pod's address,
# not the node's); this host has br_netfilter loaded.
iptables: {masqueradeAll: %t}
# Leave the host-wide conntrack table size alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, kc, podCIDR, os.Getenv("AWF_KUBE_ROUTER") == ""), 0o644)
	kp := start(t, n.dir, filepath.Join(n.bin, "kube-proxy"), "--config="+pcfg, "--v=1")

	corefile := filepath.Join(n.dir, "Corefile")
	writeFile(t, corefile, fmt.Sprintf(`cluster.local:53 in-addr.arpa:53 {
    bind %s
    errors
    ready 127.0.0.1:8181
    health 127.0.0.1:8080
    kubernetes cluster.local in-addr.arpa {
        kubeconfig %s tier
        pods insecure
    }
    cache 5
}
.:53 {
    bind %s
    errors
}
`, bridgeIP, kc, bridgeIP), 0o644)
	dns := start(t, n.dir, filepath.Join(n.bin, "coredns"), "-conf", corefile)
	n.procs = append(n.procs, cm, sch, kl, kp, dns)

	waitFor(t, "node Ready", 180*time.Second, func() error {
		out, err := n.cp.kubectl(20*time.Second, "get", "node", "localhost", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || strings.TrimSpace(string(out)) != "True" {
			return fmt.Errorf("%v %s", err, out)
		}
		return nil
	}, n.procs...)
	if kr := os.Getenv("AWF_KUBE_ROUTER"); kr != "" {
		// NetworkPolicy only: kube-proxy keeps the Services, the bridge
		// plugin the pod network. It reads its Node object at start, so
		// it starts once the node is registered.
		need(t, "ipset", "ipset")
		n.kubeRouter = true
		n.procs = append(n.procs, start(t, n.dir, kr, "--kubeconfig="+kc, "--hostname-override=localhost",
			"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false",
			"--service-cluster-ip-range=10.96.0.0/16", "--enable-ipv4=true", "--enable-ipv6=false",
			"--health-port=20244", "--metrics-port=0", "--v=1"))
	}
	waitFor(t, "CoreDNS ready", 60*time.Second, func() error {
		out, err := run(5*time.Second, "curl", "-sf", "http://127.0.0.1:8181/ready")
		if err != nil {
			return fmt.Errorf("%v %s", err, out)
		}
		return nil
	}, dns)
	waitFor(t, "kube-proxy healthy", 60*time.Second, func() error {
		_, err := run(5*time.Second, "curl", "-sf", "http://127.0.0.1:10256/healthz")
		return err
	}, kp)
}

// resolver asks the cluster DNS directly.
func resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, bridgeIP+":53")
	}}
}
