package gateway_test

// Issue #23 over REST and WebDAV: a sidecar whose checkpoint store the
// agent replaced by a symlink still serves files through the gateway; its
// checkpoint calls, and deletes that would take an automatic checkpoint,
// answer 503 CHECKPOINTS_UNAVAILABLE with the reason in safe words. Real
// gateway and sidecar binaries on 127.0.0.1, t.TempDir() volumes.

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

func TestCheckpointsUnavailableREST(t *testing.T) {
	base := t.TempDir()
	projects, canary := filepath.Join(base, "projects"), filepath.Join(base, "outside")
	ckFile(t, projects, "demo/notes.txt", "notes\n")
	ckFile(t, projects, "demo/old/a.txt", "A\n")
	ckFile(t, canary, "canary.txt", "CANARY\n")
	store := filepath.Join(base, "checkpoints")
	if err := os.Symlink(canary, store); err != nil {
		t.Fatal(err)
	}
	sidecartest.Chown(t, base)
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects,
		Configure: func(c *sidecar.Config) { c.Services.Checkpoints.Dir = store }})
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	q := "workspace.scope=PROJECT&workspace.project_name=demo"

	// Files work: REST and WebDAV.
	r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/files?"+q+"&path=notes.txt", "")
	if r.Status != 200 || !strings.Contains(string(r.Body), `notes\n`) {
		t.Fatalf("GetProjectFile: %d %s", r.Status, r.Body)
	}
	resp, err := http.DefaultClient.Do(g.NewRequest(t, http.MethodGet, "/dav/codex-a/projects/demo/notes.txt", nil))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "notes\n" {
		t.Fatalf("WebDAV GET through the gateway: %s %q", resp.Status, b)
	}

	// Checkpoints: 503 with the reason, never the host path.
	for _, c := range []struct{ method, url, body string }{
		{http.MethodPost, api + "/agents/codex-a/checkpoints", `{"workspace":{"scope":"PROJECT","project_name":"demo"}}`},
		{http.MethodGet, api + "/agents/codex-a/checkpoints?" + q, ""},
		{http.MethodDelete, deleteEntryURL("demo", "old", entryRevision(t, g, "demo", "", "old"), ""), ""},
	} {
		r := admin(t, g, c.method, c.url, c.body)
		if r.Status != 503 || r.reason(t) != "CHECKPOINTS_UNAVAILABLE" ||
			!strings.Contains(string(r.Body), "the checkpoint store is not usable: it is a symbolic link") || strings.Contains(string(r.Body), base) {
			t.Fatalf("%s %s: %d %s", c.method, c.url, r.Status, r.Body)
		}
	}
	if _, err := os.Stat(filepath.Join(projects, "demo/old/a.txt")); err != nil {
		t.Fatalf("the refused delete deleted: %v", err)
	}
	// The override deletes without the automatic checkpoint.
	r = admin(t, g, http.MethodDelete, deleteEntryURL("demo", "old", entryRevision(t, g, "demo", "", "old"), "&skip_checkpoint=true"), "")
	if r.Status != 200 {
		t.Fatalf("delete with skip_checkpoint: %d %s", r.Status, r.Body)
	}
	if b, err := os.ReadFile(filepath.Join(canary, "canary.txt")); err != nil || string(b) != "CANARY\n" {
		t.Fatalf("canary: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(canary); len(ents) != 1 {
		t.Fatalf("%d names in the canary folder, want 1", len(ents))
	}
}
