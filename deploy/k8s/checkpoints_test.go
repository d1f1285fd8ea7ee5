package k8s

import (
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The checkpoint store's volume (issue #23, part 2): its own RWO claim,
// mounted into agent-sidecar only; the codex-app-server container mounts
// neither it nor anything under its path.
func TestAgentManifestCheckpointsVolume(t *testing.T) {
	r := render(t)
	for _, a := range agents {
		t.Run(a, func(t *testing.T) {
			d := r.deployments[a+"-agent"]
			if d == nil {
				t.Fatalf("no Deployment %s-agent", a)
			}
			claim := ""
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == "checkpoints" && v.PersistentVolumeClaim != nil {
					claim = v.PersistentVolumeClaim.ClaimName
				}
			}
			if claim != a+"-checkpoints" {
				t.Fatalf("volume checkpoints must use claim %s-checkpoints, got %q", a, claim)
			}
			pvc := r.pvcs[claim]
			if pvc == nil || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce {
				t.Fatalf("PersistentVolumeClaim %s missing or not ReadWriteOnce", claim)
			}
			if got := mountPath(container(t, d, "agent-sidecar"), "checkpoints"); got != "/data/checkpoints" {
				t.Errorf("agent-sidecar must mount checkpoints at /data/checkpoints, got %q", got)
			}
			app := container(t, d, "codex-app-server")
			for _, m := range app.VolumeMounts {
				if m.Name == "checkpoints" || under(m.MountPath, "/data/checkpoints") {
					t.Errorf("codex-app-server mounts %s at %s: the checkpoint store must not be reachable from the agent's container", m.Name, m.MountPath)
				}
			}
			if d.Spec.Template.Spec.ShareProcessNamespace != nil && *d.Spec.Template.Spec.ShareProcessNamespace {
				t.Errorf("shareProcessNamespace would expose the sidecar's root (and the store) through /proc")
			}
			var cfgMap string
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == "sidecar-config" && v.ConfigMap != nil {
					cfgMap = v.ConfigMap.Name
				}
			}
			cm := r.configMaps[cfgMap]
			if cm == nil || !strings.Contains(cm.Data["sidecar.yaml"], "dir: /data/checkpoints/store") || strings.Contains(cm.Data["sidecar.yaml"], "onAgentVolume") {
				t.Errorf("sidecar.yaml must put services.checkpoints.dir on the checkpoints volume (and never opt into onAgentVolume)")
			}
		})
	}
}

func under(p, dir string) bool {
	p, dir = path.Clean(p), path.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+"/")
}
