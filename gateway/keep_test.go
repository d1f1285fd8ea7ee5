package gateway_test

// webdav.unconditionalWrites: keep (issue #15, "Sync clients without
// preconditions") with the real clients it is for: rclone sync, gio (the
// GNOME gvfs WebDAV backend Nautilus uses) and the npm `webdav` client,
// through the real gateway and agent-sidecar binaries on 127.0.0.1 with
// t.TempDir() volumes. Each write without a precondition that replaces or
// removes something is accepted only once what it replaced is kept as a
// per-file version, which is then restored over REST and compared byte for
// byte. With refuse (the default) the same writes get 428 and change
// nothing. Nothing outside the project ever changes.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

type keepStack struct {
	sc       *sidecartest.Sidecar
	g        *gatewaytest.Gateway
	projects string
	outside  string // beside the volume: must never change
}

// startKeep starts a sidecar (checkpoints on or off) serving project demo
// (files: rel → content) and project other, and a writable gateway with
// webdav.unconditionalWrites mode ("" leaves the key out).
func startKeep(t *testing.T, mode string, checkpoints bool, files map[string]string) *keepStack {
	t.Helper()
	k := &keepStack{projects: t.TempDir(), outside: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(k.projects, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		ckFile(t, k.projects, "demo/"+rel, content)
	}
	ckFile(t, k.projects, "other/untouched.txt", "another project\n")
	if err := os.WriteFile(filepath.Join(k.outside, "canary.txt"), []byte("outside the volume\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k.sc = sidecartest.Start(t, sidecartest.Options{ProjectsDir: k.projects, Configure: func(c *sidecar.Config) {
		c.Services.Checkpoints.Enabled = checkpoints
	}})
	k.g = gatewaytest.Start(t, gatewaytest.Options{
		Agents:    []gatewaytest.Agent{{ID: "codex-a", RPCAddr: k.sc.RPCAddr, DavURL: k.sc.DavURL}},
		Writable:  true,
		Configure: func(c *gateway.Config) { c.WebDAV.UnconditionalWrites = mode },
	})
	return k
}

// outsideState is everything but project demo: the other project, the
// volume's other names, and a directory beside it (the checkpoint store is
// not on the volume).
func (k *keepStack) outsideState(t *testing.T) testtree.Snapshot {
	t.Helper()
	m := testtree.Snap(t, k.projects, testtree.WithoutRoot(), testtree.SkipTop("demo"))
	for rel, v := range testtree.Snap(t, k.outside, testtree.WithoutRoot()) {
		m["../outside/"+rel] = v
	}
	return m
}

func (k *keepStack) demo(t *testing.T) testtree.Snapshot {
	t.Helper()
	return testtree.Snap(t, filepath.Join(k.projects, "demo"), testtree.WithoutRoot())
}

const demoQuery = "workspace.scope=PROJECT&workspace.project_name=demo"

type ckListed struct {
	ID       string `json:"id"`
	Reason   string `json:"reason"`
	Label    string `json:"label"`
	RootPath string `json:"root_path"`
	Operator string `json:"operator"`
}

// versions lists the per-file versions that hold rel (the path filter).
func (k *keepStack) versions(t *testing.T, rel string) []ckListed {
	t.Helper()
	var list struct{ Checkpoints []ckListed }
	ckJSON(t, admin(t, k.g, http.MethodGet, api+"/agents/codex-a/checkpoints?"+demoQuery+"&path="+url.QueryEscape(rel), ""), 200, &list)
	var out []ckListed
	for _, c := range list.Checkpoints {
		if c.Reason == "CHECKPOINT_REASON_BEFORE_WEBDAV_WRITE" {
			out = append(out, c)
		}
	}
	return out
}

// restoreVersion restores rel from the newest per-file version holding it
// (compare first for the plan, as the portal does) and returns the bytes
// it put back.
func (k *keepStack) restoreVersion(t *testing.T, rel string) string {
	t.Helper()
	vs := k.versions(t, rel)
	if len(vs) == 0 {
		t.Fatalf("no version holds %s", rel)
	}
	v := vs[0]
	base := api + "/agents/codex-a/checkpoints/" + v.ID
	var cmp struct {
		PlanToken string `json:"plan_token"`
	}
	ckJSON(t, admin(t, k.g, http.MethodGet, base+"/compare?"+demoQuery+"&path="+url.QueryEscape(rel), ""), 200, &cmp)
	ws := `"workspace":{"scope":"PROJECT","project_name":"demo"}`
	ckJSON(t, admin(t, k.g, http.MethodPost, base+":restore", `{`+ws+`,"path":"`+rel+`","plan_token":"`+cmp.PlanToken+`"}`), 200, nil)
	b, err := os.ReadFile(filepath.Join(k.projects, "demo", rel))
	if err != nil {
		t.Fatalf("%s after its restore: %v", rel, err)
	}
	return string(b)
}

// unconditionalAudits returns the audited WebDAV writes marked
// unconditional: action → the checkpoint IDs they carry.
func (k *keepStack) unconditionalAudits(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range k.g.AuditRecords(t) {
		if u, _ := r["unconditional"].(bool); u {
			a, _ := r["action"].(string)
			id, _ := r["checkpoint_id"].(string)
			out[a] = append(out[a], id)
		}
	}
	return out
}

// refused428 reports whether the gateway audited action on path (in the
// demo project) as refused with 428 PRECONDITION_REQUIRED.
func (k *keepStack) refused428(t *testing.T, action, path string) bool {
	t.Helper()
	// The record is written as the request ends, which can be just after
	// the client has its answer (and has exited): wait up to 5 s.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, r := range k.g.AuditRecords(t) {
			a, _ := r["action"].(string)
			p, _ := r["source_path"].(string)
			st, _ := r["http_status"].(float64)
			reason, _ := r["reason"].(string)
			if a == action && p == path && st == 428 && reason == "PRECONDITION_REQUIRED" {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func (k *keepStack) rclone(t *testing.T, args ...string) error {
	t.Helper()
	_, err := k.rcloneAt(t, k.g.URL+"/dav/", args...)
	return err
}

// rcloneAt runs rclone with remote gw: at the WebDAV URL u and returns
// its standard output.
func (k *keepStack) rcloneAt(t *testing.T, u string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("rclone")
	if err != nil {
		t.Fatal("rclone is not installed: run `make setup` (deploy/scripts/setup.sh installs it)")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "rclone.conf")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	obscured, err := exec.Command(bin, "--config", conf, "obscure", k.g.AdminToken).Output()
	if err != nil {
		t.Fatalf("rclone obscure: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--config", conf, "--low-level-retries", "1", "--retries", "1"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir,
		"RCLONE_CONFIG_GW_TYPE=webdav", "RCLONE_CONFIG_GW_URL="+u,
		"RCLONE_CONFIG_GW_VENDOR=other", "RCLONE_CONFIG_GW_USER=rclone",
		"RCLONE_CONFIG_GW_PASS="+strings.TrimSpace(string(obscured)))
	var errb, outb bytes.Buffer
	cmd.Stderr, cmd.Stdout = &errb, &outb
	err = cmd.Run()
	if err != nil {
		t.Logf("rclone %v: %v\n%s", args, err, errb.String())
	}
	return outb.String(), err
}

func writeLocal(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeepRcloneSync: rclone sync of a local tree, then changes and deletes
// synced again. With keep (the default of a writable view: the key left
// out) the second sync succeeds, every version records the operator, the live tree is the
// local one and every overwritten or deleted file's previous bytes come
// back from its version; with refuse it fails with 428 and changes nothing.
func TestKeepRcloneSync(t *testing.T) {
	first := map[string]string{
		"a.txt": "A one\n", "b.txt": "B one\n", "sub/c.txt": "C one\n", "gone/e.txt": "E one\n", "same.txt": "unchanged\n",
	}
	for _, mode := range []string{"default", "refuse"} {
		t.Run(mode, func(t *testing.T) {
			k := startKeep(t, strings.TrimPrefix(mode, "default"), true, nil)
			local := t.TempDir()
			writeLocal(t, local, first)
			dst := "gw:codex-a/projects/demo"
			if err := k.rclone(t, "sync", local, dst); err != nil {
				t.Fatalf("first sync (creates only): %v", err)
			}
			testtree.Same(t, "after the first sync", testtree.Snap(t, local, testtree.WithoutRoot()), k.demo(t))
			outside, synced := k.outsideState(t), k.demo(t)

			// Change (new sizes: rclone compares sizes on a plain WebDAV
			// server), delete a file and a whole folder.
			writeLocal(t, local, map[string]string{"a.txt": "A two, longer\n", "sub/c.txt": "C two, longer\n"})
			for _, rel := range []string{"b.txt", "gone"} {
				if err := os.RemoveAll(filepath.Join(local, rel)); err != nil {
					t.Fatal(err)
				}
			}
			err := k.rclone(t, "sync", local, dst)
			testtree.Same(t, "outside the project", outside, k.outsideState(t))
			if mode == "refuse" {
				if err == nil {
					t.Fatal("the second sync succeeded without preconditions under refuse")
				}
				testtree.Same(t, "after a refused sync", synced, k.demo(t))
				if !strings.Contains(k.sc.Logs(), `"status":428`) {
					t.Error("no 428 in the sidecar's log")
				}
				return
			}
			if err != nil {
				t.Fatalf("second sync under keep: %v", err)
			}
			testtree.Same(t, "after the second sync", testtree.Snap(t, local, testtree.WithoutRoot()), k.demo(t))
			// Every PUT and DELETE went ahead keeping a version, except the
			// DELETE of gone/, which rclone removes once it emptied it: a
			// folder holding no file needs none.
			for _, r := range k.g.AuditRecords(t) {
				a, _ := r["action"].(string)
				p, _ := r["source_path"].(string)
				id, _ := r["checkpoint_id"].(string)
				if u, _ := r["unconditional"].(bool); !u || (a != "webdav.PUT" && a != "webdav.DELETE") {
					continue
				}
				if (id == "") != (a == "webdav.DELETE" && p == "gone") {
					t.Errorf("audit of unconditional %s of %s: checkpoint_id %q", a, p, id)
				}
			}
			if audits := k.unconditionalAudits(t); len(audits["webdav.PUT"]) == 0 || len(audits["webdav.DELETE"]) < 2 {
				t.Errorf("audits of unconditional writes: %q", audits)
			}
			for _, rel := range []string{"a.txt", "b.txt", "sub/c.txt", "gone/e.txt"} {
				vs := k.versions(t, rel)
				if len(vs) != 1 || !strings.HasPrefix(vs[0].Label, "WebDAV ") || vs[0].Operator != gatewaytest.AdminOperator {
					t.Errorf("versions of %s: %+v (want one, by %s)", rel, vs, gatewaytest.AdminOperator)
				}
				if got := k.restoreVersion(t, rel); got != first[rel] {
					t.Errorf("%s restored from its version = %q, want %q", rel, got, first[rel])
				}
			}
			if vs := k.versions(t, "same.txt"); len(vs) != 0 {
				t.Errorf("an untouched file has versions: %+v", vs)
			}
			testtree.Same(t, "outside the project after the restores", outside, k.outsideState(t))
		})
	}
}

// TestKeepRcloneSyncKeepsSkippedNames: rclone sync removes a remote
// folder it does not have locally; the folder holds .git/config, which a
// version never keeps (and WebDAV never lists). The files rclone sees go
// (each kept), the folder's DELETE is refused with 428 and .git/config
// stays.
func TestKeepRcloneSyncKeepsSkippedNames(t *testing.T) {
	k := startKeep(t, "keep", true, map[string]string{"held/x.txt": "x\n", "held/.git/config": "[core]\n", "keep.txt": "keep\n"})
	local := t.TempDir()
	writeLocal(t, local, map[string]string{"keep.txt": "keep\n"})
	// rclone counts a failed removal of an emptied folder as no error of
	// the sync, so its exit status says nothing here: the audit does.
	syncErr := k.rclone(t, "sync", local, "gw:codex-a/projects/demo")
	if got, err := os.ReadFile(filepath.Join(k.projects, "demo", "held", ".git", "config")); err != nil || string(got) != "[core]\n" {
		t.Fatalf("held/.git/config after the sync: %q %v (rclone: %v)", got, err, syncErr)
	}
	if !k.refused428(t, "webdav.DELETE", "held") {
		t.Error("no audited 428 PRECONDITION_REQUIRED for the DELETE of held/")
	}
	if got := k.restoreVersion(t, "held/x.txt"); got != "x\n" {
		t.Errorf("held/x.txt restored from its version = %q", got)
	}
}

// TestKeepNpmWebdav drives the npm webdav client (5.11.0, pinned in
// portal's devDependencies): putFileContents over a file, deleteFile, and
// moveFile onto an existing name with overwrite, none with a precondition.
func TestKeepNpmWebdav(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make setup`")
	}
	portal, _ := filepath.Abs("../portal")
	if _, err := os.Stat(filepath.Join(portal, "node_modules", "webdav", "package.json")); err != nil {
		t.Fatal("the npm webdav client is not installed: run `make setup` (npm ci in portal/)")
	}
	script, _ := filepath.Abs("testdata/webdav-client.mjs")
	files := map[string]string{
		"notes.txt": "notes v1\n", "old.txt": "old, to be deleted\n", "draft.txt": "the draft\n", "final.txt": "the previous final\n",
	}
	for _, mode := range []string{"keep", "refuse"} {
		t.Run(mode, func(t *testing.T) {
			k := startKeep(t, mode, true, files)
			outside, before := k.outsideState(t), k.demo(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, node, script, portal, k.g.URL+"/dav/codex-a/projects/demo", k.g.AdminToken).Output()
			if err != nil {
				t.Fatalf("node: %v", err)
			}
			var res struct {
				OK     bool   `json:"ok"`
				Step   string `json:"step"`
				Status int    `json:"status"`
			}
			if err := json.Unmarshal(bytes.TrimSpace(out), &res); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			testtree.Same(t, "outside the project", outside, k.outsideState(t))
			if mode == "refuse" {
				if res.OK || res.Step != "putFileContents" || res.Status != 428 {
					t.Fatalf("under refuse: %s (want putFileContents refused with 428)", out)
				}
				testtree.Same(t, "after refused writes", before, k.demo(t))
				return
			}
			if !res.OK {
				t.Fatalf("under keep: %s", out)
			}
			testtree.Same(t, "after the client's writes", testtree.Of(t, map[string]string{
				"notes.txt": "notes v2 from the npm client\n", "final.txt": "the draft\n",
			}).Snap(testtree.WithoutRoot()), k.demo(t))
			audits := k.unconditionalAudits(t)
			for _, a := range []string{"webdav.PUT", "webdav.DELETE", "webdav.MOVE"} {
				if len(audits[a]) != 1 || audits[a][0] == "" {
					t.Errorf("audit of unconditional %s: %q", a, audits[a])
				}
			}
			for _, rel := range []string{"notes.txt", "old.txt", "final.txt"} {
				if got := k.restoreVersion(t, rel); got != files[rel] {
					t.Errorf("%s restored from its version = %q, want %q", rel, got, files[rel])
				}
			}
			if vs := k.versions(t, "draft.txt"); len(vs) != 0 {
				t.Errorf("a moved source needs no version: %+v", vs)
			}
		})
	}
}

// TestKeepNeedsCheckpoints: with keep at the gateway but checkpoints
// disabled on the agent, a write without a precondition is still 428 and
// says keeping is off; a client cannot ask for keeping itself.
func TestKeepNeedsCheckpoints(t *testing.T) {
	k := startKeep(t, "keep", false, map[string]string{"notes.txt": "v1\n"})
	put := func(extra map[string]string) response {
		req := k.g.NewRequest(t, http.MethodPut, "/dav/codex-a/projects/demo/notes.txt", strings.NewReader("v2\n"))
		for h, v := range extra {
			req.Header.Set(h, v)
		}
		return do(t, req)
	}
	r := put(nil)
	if r.Status != 428 || !strings.Contains(string(r.Body), "keeping replaced content") || !strings.Contains(string(r.Body), "services.checkpoints.enabled") {
		t.Fatalf("PUT with checkpoints off: %d %s", r.Status, r.Body)
	}
	if b, _ := os.ReadFile(filepath.Join(k.projects, "demo/notes.txt")); string(b) != "v1\n" {
		t.Fatalf("notes.txt = %q", b)
	}

	// Under refuse, the client's own copy of the gateway-only header is
	// stripped: still 428, nothing written, nothing kept.
	k = startKeep(t, "refuse", true, map[string]string{"notes.txt": "v1\n"})
	r = put(map[string]string{"X-Workspace-Unconditional-Writes": "keep"})
	if r.Status != 428 || strings.Contains(string(r.Body), "keeping") {
		t.Fatalf("PUT with a forged keep header: %d %s", r.Status, r.Body)
	}
	if _, ok := r.Header["X-Workspace-Kept-Versions"]; ok {
		t.Error("the kept-versions header reached the client")
	}
	if vs := k.versions(t, "notes.txt"); len(vs) != 0 {
		t.Errorf("versions under refuse: %+v", vs)
	}
}

// TestKeepGio drives gio (the gvfs WebDAV backend that Nautilus uses)
// under its own D-Bus session: it mounts the project over dav://, then
// `gio copy` overwrites a file and `gio remove` deletes one.
func TestKeepGio(t *testing.T) {
	for _, tool := range []string{"gio", "dbus-run-session"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: run `make setup` (deploy/scripts/setup.sh installs gvfs and dbus)", tool)
		}
	}
	files := map[string]string{"notes.txt": "notes v1\n", "old.txt": "old, to be removed\n"}
	// "default": the key left out, a writable view keeps.
	for _, mode := range []string{"default", "refuse"} {
		t.Run(mode, func(t *testing.T) {
			k := startKeep(t, strings.TrimPrefix(mode, "default"), true, files)
			outside, before := k.outsideState(t), k.demo(t)
			src := filepath.Join(t.TempDir(), "notes.txt")
			if err := os.WriteFile(src, []byte("notes v2 from gio\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(k.g.URL)
			mount := "dav://gio@" + u.Host + "/dav/codex-a/projects/demo"
			res := gio(t, mount, k.g.AdminToken, src)
			testtree.Same(t, "outside the project", outside, k.outsideState(t))
			if !res.mounted {
				t.Fatalf("gio mount failed: %s", res.log)
			}
			if mode == "refuse" {
				if res.copied || res.removed {
					t.Fatalf("gio wrote without preconditions under refuse: %s", res.log)
				}
				testtree.Same(t, "after refused writes", before, k.demo(t))
				// Refused for the reason under test, not because gio
				// failed some other way.
				for action, path := range map[string]string{"webdav.PUT": "notes.txt", "webdav.DELETE": "old.txt"} {
					if !k.refused428(t, action, path) {
						t.Errorf("no audited 428 PRECONDITION_REQUIRED for %s of %s; gio: %s", action, path, res.log)
					}
				}
				return
			}
			if !res.copied || !res.removed {
				t.Fatalf("gio under keep: %s", res.log)
			}
			testtree.Same(t, "after gio's writes", testtree.Of(t, map[string]string{"notes.txt": "notes v2 from gio\n"}).Snap(testtree.WithoutRoot()), k.demo(t))
			for _, rel := range []string{"notes.txt", "old.txt"} {
				if got := k.restoreVersion(t, rel); got != files[rel] {
					t.Errorf("%s restored from its version = %q, want %q", rel, got, files[rel])
				}
			}
		})
	}
}

type gioResult struct {
	mounted, copied, removed bool
	log                      string
}

// gio runs mount, copy, remove and unmount in one private D-Bus session
// (gvfsd is started by D-Bus activation in it) with HOME and the XDG
// directories in a temp dir; the password goes to `gio mount` on stdin.
func gio(t *testing.T, mount, password, src string) gioResult {
	t.Helper()
	home := t.TempDir()
	script := `
printf '%s\n' "$GIO_PASSWORD" | gio mount "$GIO_MOUNT" && echo MOUNTED
gio copy "$GIO_SRC" "$GIO_MOUNT/notes.txt" && echo COPIED
gio remove "$GIO_MOUNT/old.txt" && echo REMOVED
gio mount -u "$GIO_MOUNT"
exit 0
`
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "dbus-run-session", "--", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_RUNTIME_DIR="+home, "XDG_CACHE_HOME="+home+"/cache",
		"XDG_CONFIG_HOME="+home+"/config", "XDG_DATA_HOME="+home+"/data", "GIO_USE_VFS=gvfs",
		"GIO_MOUNT="+mount, "GIO_PASSWORD="+password, "GIO_SRC="+src)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("dbus-run-session: %v", err)
	}
	s := string(out)
	return gioResult{
		mounted: strings.Contains(s, "MOUNTED"), copied: strings.Contains(s, "COPIED"),
		removed: strings.Contains(s, "REMOVED"), log: strings.ReplaceAll(s, password, "[token]"),
	}
}
