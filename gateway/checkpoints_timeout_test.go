package gateway_test

// Checkpoint deadlines (issue #23: "a first checkpoint outlives the 10 s
// RPC deadline, the client gets 503 and the checkpoint completes anyway"):
// checkpoint calls get agentRuntime.agents.X.sidecar.checkpointTimeout,
// not sidecar.timeout, and a checkpoint over its deadline is abandoned by
// the sidecar with nothing kept. Real gateway and sidecar binaries.

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// storeNames lists the files under the store's dirs (the marker aside).
func storeNames(t *testing.T, store string, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, d := range dirs {
		filepath.WalkDir(filepath.Join(store, d), func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				out = append(out, strings.TrimPrefix(p, store+"/"))
			}
			return nil
		})
	}
	return out
}

func TestCheckpointTimeoutIsItsOwn(t *testing.T) {
	projects := t.TempDir()
	// A project whose first checkpoint takes far longer than the normal
	// call deadline below: 64 MiB to hash and store, and 2,000 files.
	big := make([]byte, 64<<20)
	rand.Read(big)
	ckFile(t, projects, "demo/big.bin", string(big))
	for i := range 2000 {
		ckFile(t, projects, fmt.Sprintf("demo/d%02d/f%04d.txt", i/100, i), fmt.Sprint(i))
	}
	storeBase := t.TempDir()
	sidecartest.Chown(t, storeBase)
	store := filepath.Join(storeBase, "store")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, Configure: func(c *sidecar.Config) {
		c.Services.Checkpoints.Dir = store
	}})
	const normal = 50 * time.Millisecond
	withCheckpointTimeout := func(d time.Duration) gatewaytest.Options {
		return gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL, Timeout: normal}},
			Configure: func(c *gateway.Config) { c.AgentRuntime.Agents["codex-a"].Sidecar.CheckpointTimeout = &d }}
	}
	base := api + "/agents/codex-a/checkpoints"
	ws := `"workspace":{"scope":"PROJECT","project_name":"demo"}`

	// Over its deadline: the client is told, and nothing is kept, not
	// even later (the sidecar abandons the capture; its temp files go).
	short := gatewaytest.Start(t, withCheckpointTimeout(2*normal))
	r := admin(t, short, http.MethodPost, base, `{`+ws+`}`)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "sidecar.checkpointTimeout") {
		t.Fatalf("a checkpoint over its deadline: %d %s", r.Status, r.Body)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(storeNames(t, store, "tmp", "objects", "packs", "ws")) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // and it stays so
	if left := storeNames(t, store, "tmp", "objects", "packs", "ws"); len(left) > 0 {
		t.Fatalf("an abandoned checkpoint left %q in the store", left)
	}

	// Within its own deadline, a checkpoint far slower than sidecar.timeout
	// succeeds.
	long := gatewaytest.Start(t, withCheckpointTimeout(2*time.Minute))
	t0 := time.Now()
	var c ckREST
	ckJSON(t, admin(t, long, http.MethodPost, base, `{`+ws+`}`), 200, &c)
	if took := time.Since(t0); took <= normal {
		t.Fatalf("the checkpoint took %v, not more than sidecar.timeout (%v): the test shows nothing; make the project larger", took, normal)
	}
	var list struct{ Checkpoints []ckREST }
	ckJSON(t, admin(t, long, http.MethodGet, base+"?workspace.scope=PROJECT&workspace.project_name=demo", ""), 200, &list)
	if len(list.Checkpoints) != 1 || list.Checkpoints[0].ID != c.ID {
		t.Fatalf("checkpoints %+v, want only %s", list.Checkpoints, c.ID)
	}
}
