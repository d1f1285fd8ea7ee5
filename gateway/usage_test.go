package gateway_test

// Usage (issue #25) through the real gateway and agent-sidecar binaries:
// REST GET /agents/{id}/usage, RFC 4331 quota properties on the gateway's
// WebDAV view read by `rclone about`, the cache made stale by writes, and
// `cadaver put` over an existing file on the default writable view (kept
// as a version by the operator). Nothing outside the project changes.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/testtree"
)

type usageAnswer struct {
	Workspaces []struct {
		Workspace   struct{ Scope, ProjectName string } `json:"workspace"`
		Bytes       string                              `json:"bytes"`
		Files       string                              `json:"files"`
		ErrorReason string                              `json:"error_reason"`
	}
	ProjectsVolume struct {
		Known     bool   `json:"known"`
		SizeBytes string `json:"size_bytes"`
		FreeBytes string `json:"free_bytes"`
	} `json:"projects_volume"`
}

func (k *keepStack) usage(t *testing.T, query string) usageAnswer {
	t.Helper()
	var u usageAnswer
	r := admin(t, k.g, http.MethodGet, api+"/agents/codex-a/usage?"+query, "")
	if r.Status != 200 || json.Unmarshal(r.Body, &u) != nil {
		t.Fatalf("usage: %d %s", r.Status, r.Body)
	}
	return u
}

func TestUsageRESTAndQuota(t *testing.T) {
	k := startKeep(t, "", true, map[string]string{"a.txt": "12345", "sub/b.txt": "1234567890"})
	outside := k.outsideState(t)
	u := k.usage(t, "project_names=demo&project_names=missing&global=true")
	if len(u.Workspaces) != 3 {
		t.Fatalf("workspaces: %+v", u.Workspaces)
	}
	if w := u.Workspaces[0]; w.Bytes != "15" || w.Files != "2" || w.ErrorReason != "" {
		t.Errorf("demo: %+v", w)
	}
	if w := u.Workspaces[1]; w.ErrorReason != "PROJECT_NOT_FOUND" || w.Bytes != "" {
		t.Errorf("a missing project: %+v (want its reason, no figures)", w)
	}
	if !u.ProjectsVolume.Known || u.ProjectsVolume.SizeBytes == "" || u.ProjectsVolume.FreeBytes == "" {
		t.Errorf("volume: %+v", u.ProjectsVolume)
	}

	// rclone about on a remote at the project: RFC 4331 through the gateway.
	out, err := k.rcloneAt(t, k.g.URL+"/dav/codex-a/projects/demo/", "about", "gw:", "--json")
	if err != nil {
		t.Fatalf("rclone about: %v", err)
	}
	var about struct {
		Used *int64 `json:"used"`
		Free *int64 `json:"free"`
	}
	if err := json.Unmarshal([]byte(out), &about); err != nil || about.Used == nil || about.Free == nil {
		t.Fatalf("rclone about --json: %q %v", out, err)
	}
	if *about.Used != 15 || *about.Free <= 0 {
		t.Errorf("rclone about: used %d free %d, want used 15", *about.Used, *about.Free)
	}

	// A write through WebDAV makes the cached totals stale.
	req, _ := http.NewRequest(http.MethodPut, k.g.URL+"/dav/codex-a/projects/demo/c.txt", strings.NewReader("abc"))
	req.SetBasicAuth("x", k.g.AdminToken)
	if r := do(t, req); r.Status != 201 && r.Status != 204 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	if w := k.usage(t, "project_names=demo").Workspaces[0]; w.Bytes != "18" || w.Files != "3" {
		t.Errorf("after a PUT: %+v", w)
	}
	// As does one through REST.
	if r := admin(t, k.g, http.MethodPost, api+"/agents/codex-a/projects/entries", `{"workspace":{"scope":"PROJECT","project_name":"demo"},"parent_path":"","name":"empty.txt","type":"ENTRY_TYPE_FILE"}`); r.Status != 200 {
		t.Fatalf("create entry: %d %s", r.Status, r.Body)
	}
	if w := k.usage(t, "project_names=demo").Workspaces[0]; w.Files != "4" {
		t.Errorf("after a REST create: %+v", w)
	}
	// A PROPFIND that does not name them carries no quota property.
	pf, _ := http.NewRequest("PROPFIND", k.g.URL+"/dav/codex-a/projects/demo/", nil)
	pf.SetBasicAuth("x", k.g.AdminToken)
	pf.Header.Set("Depth", "0")
	if r := do(t, pf); r.Status != 207 || strings.Contains(string(r.Body), "quota") {
		t.Errorf("allprop: %d %s", r.Status, r.Body)
	}
	// The sidecar's gauges: bounded labels (scope, volume), the figures above.
	resp, err := http.Get(k.sc.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`sidecar_usage_bytes{scope="project"} 18`, `sidecar_usage_files{scope="project"} 4`,
		`sidecar_volume_size_bytes{volume="projects"}`, `sidecar_volume_free_bytes{volume="global"}`, "sidecar_usage_scans_total"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), `project="demo"`) {
		t.Error("a metric is labelled by project")
	}
	testtree.Same(t, "outside the project", outside, k.outsideState(t))
}

// cadaver put over an existing file on the default writable view: kept as
// a version by the operator, the new bytes on disk.
func TestCadaverPutKept(t *testing.T) {
	bin, err := exec.LookPath("cadaver")
	if err != nil {
		t.Fatal("cadaver is not installed: run `make setup` (deploy/scripts/setup.sh installs it)")
	}
	k := startKeep(t, "", true, map[string]string{"notes.txt": "v1\n"})
	outside := k.outsideState(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine 127.0.0.1 login cadaver password "+k.g.AdminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(home, "notes.txt")
	if err := os.WriteFile(local, []byte("v2 from cadaver\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, k.g.URL+"/dav/codex-a/projects/demo/")
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Dir = home
	cmd.Stdin = strings.NewReader("put notes.txt notes.txt\nquit\n")
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("cadaver did not end: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "succeeded") {
		t.Fatalf("cadaver put: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(k.projects, "demo", "notes.txt")); string(b) != "v2 from cadaver\n" {
		t.Errorf("on disk: %q", b)
	}
	vs := k.versions(t, "notes.txt")
	if len(vs) != 1 || vs[0].Operator != gatewaytest.AdminOperator {
		t.Fatalf("versions of notes.txt: %+v (want one, by %s)", vs, gatewaytest.AdminOperator)
	}
	if got := k.restoreVersion(t, "notes.txt"); got != "v1\n" {
		t.Errorf("restored %q", got)
	}
	testtree.Same(t, "outside the project", outside, k.outsideState(t))
}
