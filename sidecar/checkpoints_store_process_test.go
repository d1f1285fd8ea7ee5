package sidecar_test

// A checkpoint store the agent wrote into (issue #23, "Whatever the store
// holds cannot hurt"), through the real agent-sidecar binary.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// procStatusKiB reads a "Key:   N kB" line of /proc/PID/status.
func procStatusKiB(t *testing.T, pid int, key string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the sidecar's /proc status: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", key, v)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// manifestBomb is the planted manifest: 8 MiB, 2.8 million empty
// entries.
func manifestBomb() []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"entries":[{}`)
	for range 2_800_000 - 1 {
		b.WriteString(`,{}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func TestCheckpointManifestBombThroughTheBinary(t *testing.T) {
	projects := t.TempDir()
	writeFile(t, projects, "demo/a.txt", "A1\n")
	writeFile(t, projects, "demo/src/b.txt", "B1\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects,
		Configure: func(c *sidecar.Config) { c.Services.Checkpoints.MaxPerWorkspace = 2 }})
	cl := workspacev1.NewCheckpointServiceClient(sc.Conn(t))
	ctx := asOperator(ctxT(t), "alice")
	demo := proj("demo")
	if _, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: demo, Label: "old"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, projects, "demo/a.txt", "A2\n")
	bad, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: demo, Label: "bombed"})
	if err != nil {
		t.Fatal(err)
	}

	// The agent (UID 1000, like the sidecar) plants the bomb over the
	// newest checkpoint's manifest, and a second one with a description
	// that claims all of its entries.
	h := sha256.Sum256([]byte("demo"))
	wsDir := filepath.Join(sc.CheckpointsDir, "ws", "p-"+hex.EncodeToString(h[:16]))
	bomb := manifestBomb()
	plant := func(name string, b []byte) {
		p := filepath.Join(wsDir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		sidecartest.Chown(t, p)
	}
	plant(bad.GetId()+".manifest", bomb)
	const planted = "0000000000000001abcdef01"
	plant(planted+".json", []byte(`{"version":1,"id":"`+planted+`","scope":"project","project":"demo","created":"`+
		time.Now().UTC().Format(time.RFC3339Nano)+`","files":2800000,"dirs":0,"size":0,"skipped":0}`))
	plant(planted+".manifest", bomb)

	// A restart drops the manifests the sidecar keeps decoded (those it
	// wrote itself, which the planted file replaced).
	sc.Restart()
	cl = workspacev1.NewCheckpointServiceClient(sc.Conn(t))
	pid := sc.PID()
	if pid == 0 {
		t.Fatal("no sidecar process")
	}
	start := procStatusKiB(t, pid, "VmHWM")

	// Every reader: the damaged checkpoints answer with their reason,
	// the rest of the store keeps working.
	for _, id := range []string{bad.GetId(), planted} {
		_, err := cl.CompareCheckpoint(ctx, &workspacev1.CompareCheckpointRequest{Workspace: demo, CheckpointId: id})
		wantErr(t, err, codes.DataLoss, "CHECKPOINT_DAMAGED")
		_, err = cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: id, PlanToken: "x"})
		wantErr(t, err, codes.DataLoss, "CHECKPOINT_DAMAGED")
	}
	if got := readFile(t, filepath.Join(projects, "demo/a.txt")); got != "A2\n" {
		t.Fatalf("a refused restore changed a.txt: %q", got)
	}
	list, err := cl.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: demo, Path: "a.txt"})
	if err != nil {
		t.Fatalf("list with path: %v", err)
	}
	for _, c := range list.GetCheckpoints() {
		if c.GetId() == bad.GetId() || c.GetId() == planted {
			t.Fatalf("list with path holds the damaged checkpoint %s", c.GetId())
		}
	}
	// A create prunes by count (2), collecting over the bombed manifest;
	// deletes collect again.
	writeFile(t, projects, "demo/a.txt", "A3\n")
	third, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: demo})
	if err != nil {
		t.Fatalf("create (and prune) beside a damaged checkpoint: %v", err)
	}
	if _, err := cl.DeleteCheckpoint(ctx, &workspacev1.DeleteCheckpointRequest{Workspace: demo, CheckpointId: third.GetId()}); err != nil {
		t.Fatalf("delete beside a damaged checkpoint: %v", err)
	}
	if _, err := cl.DeleteCheckpoint(ctx, &workspacev1.DeleteCheckpointRequest{Workspace: demo, CheckpointId: bad.GetId()}); err != nil {
		t.Fatalf("delete of the damaged checkpoint: %v", err)
	}
	peak, now := procStatusKiB(t, pid, "VmHWM"), procStatusKiB(t, pid, "VmRSS")
	t.Logf("sidecar VmHWM %d KiB at the start, %d KiB after; VmRSS %d KiB", start, peak, now)
	if peak > 150<<10 {
		t.Fatalf("the sidecar's peak RSS reached %d MiB over a planted manifest (bound 150 MiB)", peak>>10)
	}
	if logs := sc.Logs(); strings.Contains(logs, projects) {
		t.Fatalf("the sidecar logged a host path")
	}
}

// A restore over a damaged object refuses as a whole and changes nothing;
// a sparse file costs the store what it occupies. Through the binary.
func TestCheckpointDamagedObjectAndSparseThroughTheBinary(t *testing.T) {
	projects := t.TempDir()
	writeFile(t, projects, "demo/a.txt", "A1\n")
	writeFile(t, projects, "demo/b.txt", strings.Repeat("B", 4096))
	sparse := filepath.Join(projects, "demo", "sparse.img")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sidecartest.Chown(t, projects)
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects})
	cl := workspacev1.NewCheckpointServiceClient(sc.Conn(t))
	ctx := asOperator(ctxT(t), "alice")
	demo := proj("demo")
	ck, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: demo})
	if err != nil {
		t.Fatal(err)
	}
	var stored int64 // what the store occupies on its volume
	filepath.WalkDir(sc.CheckpointsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				stored += fi.Sys().(*syscall.Stat_t).Blocks * 512
			}
		}
		return nil
	})
	if stored > 8<<20 {
		t.Errorf("the store occupies %d bytes for a 64 MiB sparse file", stored)
	}

	// The agent changes the files; then every stored object is damaged.
	writeFile(t, projects, "demo/a.txt", "A2\n")
	writeFile(t, projects, "demo/b.txt", "changed\n")
	damaged := 0
	for _, sub := range []string{"objects", "packs"} {
		filepath.WalkDir(filepath.Join(sc.CheckpointsDir, sub), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil || len(b) == 0 {
				return nil
			}
			b[0] ^= 0xff
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			damaged++
			return nil
		})
	}
	if damaged == 0 {
		t.Fatal("no stored object to damage")
	}
	before := testtree.Snap(t, projects, testtree.Modes(), testtree.AllMTimes())
	cmp, err := cl.CompareCheckpoint(ctx, &workspacev1.CompareCheckpointRequest{Workspace: demo, CheckpointId: ck.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: ck.GetId(), PlanToken: cmp.GetPlanToken()})
	wantErr(t, err, codes.DataLoss, "CHECKPOINT_DAMAGED")
	if after := testtree.Snap(t, projects, testtree.Modes(), testtree.AllMTimes()); !maps.Equal(before, after) {
		t.Fatalf("a refused restore changed the project:\nbefore %v\nafter  %v", before, after)
	}
}
