//go:build k8stier

package tier

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkpointStoreHidden (issue #23, part 2): on the real kubelet, the
// checkpoint store's volume is mounted into the agent-sidecar container
// only. From inside the codex-app-server container (its root and mount
// table, read through /proc/PID on the node) the store path does not exist
// and nothing of the volume is mounted; the sidecar container has it, and
// the store an automatic checkpoint (acceptance's project delete) created
// is on that volume, not on the projects volume.
func (n *node) checkpointStoreHidden() {
	n.t.Run("the checkpoint store is not in the agent's container", func(t *testing.T) {
		// codex-a only: step 9 of the acceptance scaled codex-b to zero, so
		// it has no container to look into.
		for _, a := range []string{"codex-a"} {
			vol := n.volumes[a+"-checkpoints"]
			pod := n.podName(a)
			app, side := n.containerPID(t, pod, "codex-app-server"), n.containerPID(t, pod, "agent-sidecar")
			if _, err := os.Lstat(filepath.Join("/proc", app, "root", "data", "checkpoints")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: /data/checkpoints in codex-app-server: %v (want: does not exist)", a, err)
			}
			if _, err := os.Lstat(filepath.Join("/proc", app, "root", "data", "projects")); err != nil {
				t.Fatalf("%s: the probe cannot see codex-app-server's /data/projects: %v", a, err)
			}
			if mountsOf(t, app, vol) {
				t.Errorf("%s: codex-app-server mounts the checkpoints volume", a)
			}
			if !mountsOf(t, side, vol) {
				t.Errorf("%s: agent-sidecar does not mount the checkpoints volume", a)
			}
			if _, err := os.Lstat(filepath.Join("/proc", side, "root", "data", "checkpoints")); err != nil {
				t.Errorf("%s: /data/checkpoints in agent-sidecar: %v", a, err)
			}
			if _, err := os.Lstat(filepath.Join(n.volumes[a+"-projects"], ".agent-checkpoints")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: a checkpoint store on the projects volume: %v", a, err)
			}
		}
		// acceptance deleted codex-a's project demo: its automatic
		// checkpoint is in the store, on the sidecar's volume.
		if _, err := os.Stat(filepath.Join(n.volumes["codex-a-checkpoints"], "store", "CHECKPOINT-STORE")); err != nil {
			t.Errorf("codex-a's store on its checkpoints volume: %v", err)
		}
	})
}

// containerPID is the node PID of container name in pod (containerd's task).
func (n *node) containerPID(t *testing.T, pod, name string) string {
	t.Helper()
	id := strings.TrimSpace(n.cp.mustKubectl("-n", nodeNS, "get", "pod", pod, "-o",
		`jsonpath={.status.containerStatuses[?(@.name=="`+name+`")].containerID}`))
	id = strings.TrimPrefix(id, "containerd://")
	for _, l := range strings.Split(n.ctr("task", "ls"), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && id != "" && f[0] == id {
			return f[1]
		}
	}
	t.Fatalf("no task for container %s of %s (%q)", name, pod, id)
	return ""
}

// mountsOf reports whether process pid's mount table holds anything of the
// node directory dir. A bind mount's root field is its source path within
// the source's file system (which may be mounted elsewhere on the node, a
// tmpfs /tmp), so it is matched by dir's last two components,
// volumes/<agent>-<claim>, which no other mount has.
func mountsOf(t *testing.T, pid, dir string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", pid, "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	tail := "/" + filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (strings.HasSuffix(f[3], tail) || strings.Contains(f[3], tail+"/")) {
			return true
		}
	}
	return false
}
