package sidecar_test

// Where the checkpoint store lives (issue #23, part 2): by default outside
// the agent's tree, on a volume only the sidecar mounts; on the agent's
// volume only as the explicit, tamperable services.checkpoints.onAgentVolume.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

const (
	warnOnAgentVolume = "checkpoint store on the agent's volume"
	warnLegacyStore   = "a checkpoint store of an earlier version is on the agent's volume"
)

// checkpointDemo creates project demo with one file and a checkpoint of it.
func checkpointDemo(t *testing.T, sc *sidecartest.Sidecar) {
	t.Helper()
	ctx := asOperator(ctxT(t), "alice")
	if _, err := sc.Dial(t).CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "demo"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sc.ProjectsDir, "demo/a.txt", "a\n")
	sidecartest.Chown(t, sc.ProjectsDir)
	cl := workspacev1.NewCheckpointServiceClient(sc.Conn(t))
	if _, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: proj("demo")}); err != nil {
		t.Fatal(err)
	}
}

func nonEmptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("store %s: %d entries, %v", filepath.Base(dir), len(ents), err)
	}
}

func TestCheckpointStorePlacement(t *testing.T) {
	t.Run("default: outside the projects tree", func(t *testing.T) {
		sc := sidecartest.Start(t, sidecartest.Options{})
		if strings.HasPrefix(sc.CheckpointsDir, sc.ProjectsDir+"/") || strings.HasPrefix(sc.CheckpointsDir, sc.CodexHome+"/") {
			t.Fatalf("harness store %s is inside a volume", sc.CheckpointsDir)
		}
		checkpointDemo(t, sc)
		nonEmptyDir(t, sc.CheckpointsDir)
		if _, err := os.Lstat(filepath.Join(sc.ProjectsDir, sidecar.DefaultCheckpointDirName)); !os.IsNotExist(err) {
			t.Fatalf("a store appeared on the agent's volume: %v", err)
		}
		if strings.Contains(sc.Logs(), warnOnAgentVolume) || strings.Contains(sc.Logs(), warnLegacyStore) {
			t.Fatal("a placement warning without cause")
		}
	})
	t.Run("onAgentVolume: the old layout, with a warning", func(t *testing.T) {
		sc := sidecartest.Start(t, sidecartest.Options{Configure: func(c *sidecar.Config) {
			c.Services.Checkpoints.Dir, c.Services.Checkpoints.OnAgentVolume = "", true
		}})
		if !sc.WaitLog(warnOnAgentVolume, 5*time.Second) {
			t.Fatalf("no warning at start; logs:\n%s", sc.Logs())
		}
		checkpointDemo(t, sc)
		nonEmptyDir(t, filepath.Join(sc.ProjectsDir, sidecar.DefaultCheckpointDirName))
		ps, err := sc.Dial(t).ListProjects(asOperator(ctxT(t), "alice"), &workspacev1.ListProjectsRequest{})
		if err != nil || len(ps.GetProjects()) != 1 || ps.GetProjects()[0].GetName() != "demo" {
			t.Fatalf("the store is listed as a project: %v, %v", ps, err)
		}
	})
	t.Run("a store left on the agent's volume is reported", func(t *testing.T) {
		projects := t.TempDir()
		if err := os.Mkdir(filepath.Join(projects, sidecar.DefaultCheckpointDirName), 0o700); err != nil {
			t.Fatal(err)
		}
		sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects})
		if !sc.WaitLog(warnLegacyStore, 5*time.Second) {
			t.Fatalf("no warning for the old store; logs:\n%s", sc.Logs())
		}
		if strings.Contains(sc.Logs(), projects) {
			t.Fatal("the warning names a host path")
		}
	})
}
