package sidecar_test

// Checkpoints (issue #15) through the real agent-sidecar binary: gRPC
// CheckpointService over t.TempDir() volumes on 127.0.0.1.

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/internal/rpcmeta"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

func ckSame(t *testing.T, what string, a, b testtree.Snapshot) {
	t.Helper()
	if d := testtree.Diff(a, b); len(d) > 0 {
		sort.Strings(d)
		t.Fatalf("%s:\n%s", what, strings.Join(d, "\n"))
	}
}

func ckChanges(r interface {
	GetChanges() []*workspacev1.CheckpointChange
}) string {
	var out []string
	for _, c := range r.GetChanges() {
		out = append(out, strings.TrimPrefix(c.GetKind().String(), "CHANGE_KIND_")+" "+c.GetPath())
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// ckPlan compares checkpoint id at path with the current state and returns
// the plan_token a restore of that path needs.
func ckPlan(t *testing.T, cl workspacev1.CheckpointServiceClient, ws *workspacev1.WorkspaceRef, id, path string) string {
	t.Helper()
	cmp, err := cl.CompareCheckpoint(ctxT(t), &workspacev1.CompareCheckpointRequest{Workspace: ws, CheckpointId: id, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.GetPlanToken() == "" {
		t.Fatal("a comparison with the current state returned no plan_token")
	}
	return cmp.GetPlanToken()
}

func asOperator(ctx context.Context, op string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, rpcmeta.Operator, op)
}

func TestCheckpointsThroughTheBinary(t *testing.T) {
	base := t.TempDir()
	projects, codex, outside := filepath.Join(base, "projects"), filepath.Join(base, "codex"), filepath.Join(base, "outside")
	for _, d := range []string{projects, codex, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, outside, "canary.txt", "CANARY outside\n")
	writeFile(t, codex, "auth.json", "CANARY secret\n")
	writeFile(t, codex, "AGENTS.md", "# agents\n")
	writeFile(t, projects, "demo/src/main.go", "package main\n\nfunc main() {}\n")
	writeFile(t, projects, "demo/README.md", "hello\n")
	writeFile(t, projects, "demo/run.sh", "#!/bin/sh\n")
	os.Chmod(filepath.Join(projects, "demo/run.sh"), 0o755)
	writeFile(t, projects, "demo/.git/HEAD", "ref: refs/heads/main\n")
	writeFile(t, projects, "demo/node_modules/x.js", "x\n")
	// Traps, all pointing at canaries inside this test's temp tree.
	if err := os.Symlink(filepath.Join(outside, "canary.txt"), filepath.Join(projects, "demo/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(codex, "auth.json"), filepath.Join(projects, "demo/hard")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(projects, "demo/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sidecartest.Chown(t, base)

	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, CodexHome: codex,
		Configure: func(c *sidecar.Config) { c.Services.Checkpoints.MaxPerWorkspace = 4 }})
	ctx := asOperator(ctxT(t), "alice")
	cl := workspacev1.NewCheckpointServiceClient(sc.Conn(t))
	demo := proj("demo")
	before := testtree.Snap(t, filepath.Join(projects, "demo"), testtree.Modes(), testtree.MTimes(), testtree.WithoutRoot())
	outsideBefore := testtree.Snap(t, base, testtree.Modes(), testtree.MTimes(), testtree.WithoutRoot())

	c, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: demo, Label: "good"})
	if err != nil {
		t.Fatal(err)
	}
	// README.md, run.sh, src/main.go; src/; .git, node_modules, link, hard, fifo skipped.
	if c.GetFileCount() != 3 || c.GetDirectoryCount() != 1 || c.GetSkippedCount() != 5 || c.GetOperator() != "alice" ||
		c.GetReason() != workspacev1.CheckpointReason_CHECKPOINT_REASON_MANUAL || c.GetLabel() != "good" {
		t.Fatalf("checkpoint = %v", c)
	}
	// The store never holds a byte of the secret or the canary.
	filepath.WalkDir(sc.CheckpointsDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("CANARY")) {
				t.Errorf("store file holds canary content")
			}
		}
		return nil
	})
	// The store is no project.
	ps, err := sc.Dial(t).ListProjects(ctx, &workspacev1.ListProjectsRequest{})
	if err != nil || len(ps.GetProjects()) != 1 {
		t.Fatalf("projects = %v, %v", ps, err)
	}

	// The agent edits, adds, deletes.
	writeFile(t, projects, "demo/README.md", "hello\nworld\n")
	writeFile(t, projects, "demo/notes/new.txt", "new\n")
	os.Remove(filepath.Join(projects, "demo/src/main.go"))
	os.Chmod(filepath.Join(projects, "demo/run.sh"), 0o644)
	edited := testtree.Snap(t, filepath.Join(projects, "demo"), testtree.Modes(), testtree.MTimes(), testtree.WithoutRoot())

	cmp, err := cl.CompareCheckpoint(ctx, &workspacev1.CompareCheckpointRequest{Workspace: demo, CheckpointId: c.GetId(), IncludeDiffs: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ckChanges(cmp), "ADDED notes, ADDED notes/new.txt, MODIFIED README.md, MODIFIED run.sh, REMOVED src/main.go"; got != want {
		t.Fatalf("changes = %s, want %s", got, want)
	}
	for _, ch := range cmp.GetChanges() {
		if ch.GetPath() == "README.md" && (ch.GetDiffState() != workspacev1.DiffState_DIFF_STATE_INCLUDED || !strings.Contains(ch.GetDiff(), "+world")) {
			t.Errorf("README.md diff: %v", ch)
		}
		if ch.GetPath() == "run.sh" && (ch.GetOldMode() != 0o755 || ch.GetNewMode() != 0o644) {
			t.Errorf("run.sh modes: %v", ch)
		}
	}

	res, err := cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: c.GetId(), PlanToken: cmp.GetPlanToken()})
	if err != nil {
		t.Fatal(err)
	}
	if ckChanges(res) != ckChanges(cmp) || res.GetUndoCheckpointId() == "" {
		t.Fatalf("restore = %v", res)
	}
	ckSame(t, "restored", before, testtree.Snap(t, filepath.Join(projects, "demo"), testtree.Modes(), testtree.MTimes(), testtree.WithoutRoot()))
	after := testtree.Snap(t, base, testtree.Modes(), testtree.MTimes(), testtree.WithoutRoot())
	for k, v := range outsideBefore {
		if !strings.HasPrefix(k, "projects/") && after[k] != v {
			t.Errorf("outside the workspace %s changed: %q -> %q", k, v, after[k])
		}
	}
	for _, k := range []string{"projects/demo/link", "projects/demo/hard", "projects/demo/fifo", "projects/demo/.git/HEAD", "projects/demo/node_modules/x.js"} {
		if after[k] != outsideBefore[k] {
			t.Errorf("trap %s changed: %q -> %q", k, outsideBefore[k], after[k])
		}
	}

	// Undo the restore with its automatic checkpoint.
	if _, err := cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: res.GetUndoCheckpointId(),
		PlanToken: ckPlan(t, cl, demo, res.GetUndoCheckpointId(), "")}); err != nil {
		t.Fatal(err)
	}
	editedNow := testtree.Snap(t, filepath.Join(projects, "demo"), testtree.Modes(), testtree.MTimes(), testtree.WithoutRoot())
	delete(editedNow, "notes") // a re-created directory has a new mtime; its content counts
	delete(edited, "notes")
	ckSame(t, "restore undone", edited, editedNow)

	// A stale plan and bad input change nothing.
	writeFile(t, projects, "demo/late.txt", "late\n")
	still := testtree.Snap(t, filepath.Join(projects, "demo"), testtree.Modes(), testtree.MTimes(), testtree.WithoutRoot())
	_, err = cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: c.GetId(), PlanToken: cmp.GetPlanToken()})
	wantErr(t, err, codes.Aborted, "REVISION_MISMATCH")
	// Without a plan_token a restore is refused: it would change what
	// nobody was shown.
	_, err = cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: c.GetId()})
	wantErr(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	if !strings.Contains(status.Convert(err).Message(), "plan_token is required") {
		t.Fatalf("restore without plan_token: %v", err)
	}
	_, err = cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: c.GetId(), Path: "src/./main.go", PlanToken: "x"})
	wantErr(t, err, codes.InvalidArgument, "INVALID_PATH")
	_, err = cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: "nope", PlanToken: "x"})
	wantErr(t, err, codes.NotFound, "CHECKPOINT_NOT_FOUND")
	_, err = cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: demo, Path: "link"})
	wantErr(t, err, codes.PermissionDenied, "SYMLINK")
	ckSame(t, "refused calls", still, testtree.Snap(t, filepath.Join(projects, "demo"), testtree.Modes(), testtree.MTimes(), testtree.WithoutRoot()))

	// A recursive delete through WorkspaceService keeps a checkpoint of the
	// directory, named after the operator; restoring it brings it back.
	ws := sc.Dial(t)
	st, err := ws.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: demo})
	if err != nil {
		t.Fatal(err)
	}
	var rev string
	for _, e := range st.GetEntries() {
		if e.GetName() == "notes" {
			rev = e.GetRevision()
		}
	}
	if _, err := ws.DeleteEntry(asOperator(ctxT(t), "bob"), &workspacev1.DeleteEntryRequest{Workspace: demo, Path: "notes", ExpectedRevision: rev, Recursive: true}); err != nil {
		t.Fatal(err)
	}
	list, err := cl.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: demo})
	if err != nil {
		t.Fatal(err)
	}
	auto := list.GetCheckpoints()[0]
	if auto.GetReason() != workspacev1.CheckpointReason_CHECKPOINT_REASON_BEFORE_DELETE || auto.GetRootPath() != "notes" || auto.GetOperator() != "bob" {
		t.Fatalf("automatic checkpoint = %v", auto)
	}
	if _, err := cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: demo, CheckpointId: auto.GetId(),
		PlanToken: ckPlan(t, cl, demo, auto.GetId(), "")}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(projects, "demo/notes/new.txt")); got != "new\n" {
		t.Fatalf("notes/new.txt = %q", got)
	}

	// The count limit (4) pruned the oldest; a restart keeps the rest.
	list, _ = cl.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: demo})
	if n := len(list.GetCheckpoints()); n != 4 {
		t.Fatalf("%d checkpoints, want 4 (the limit)", n)
	}
	sc.Restart()
	cl = workspacev1.NewCheckpointServiceClient(sc.Conn(t))
	again, err := cl.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: demo})
	if err != nil || ckIDs(again) != ckIDs(list) {
		t.Fatalf("after restart: %v, %v (before %v)", ckIDs(again), err, ckIDs(list))
	}
	if v := metric(t, sc, `sidecar_checkpoint_operations_total{op="create",result="success"}`); v == "" {
		t.Errorf("no checkpoint metrics")
	}
	if v := metric(t, sc, `sidecar_checkpoints`); v != "4" {
		t.Errorf("sidecar_checkpoints = %q", v)
	}
	// Delete one.
	if _, err := cl.DeleteCheckpoint(ctx, &workspacev1.DeleteCheckpointRequest{Workspace: demo, CheckpointId: again.GetCheckpoints()[0].GetId()}); err != nil {
		t.Fatal(err)
	}
	_, err = cl.DeleteCheckpoint(ctx, &workspacev1.DeleteCheckpointRequest{Workspace: demo, CheckpointId: again.GetCheckpoints()[0].GetId()})
	wantErr(t, err, codes.NotFound, "CHECKPOINT_NOT_FOUND")
}

func ckIDs(r *workspacev1.ListCheckpointsResponse) string {
	var ids []string
	for _, c := range r.GetCheckpoints() {
		ids = append(ids, c.GetId())
	}
	return strings.Join(ids, ",")
}

func TestCheckpointLimitsThroughTheBinary(t *testing.T) {
	projects := t.TempDir()
	writeFile(t, projects, "big/blob.bin", strings.Repeat("x", 300<<10))
	writeFile(t, projects, "small/a.txt", "a\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects,
		Configure: func(c *sidecar.Config) { c.Services.Checkpoints.MaxTotalBytes = 256 << 10 }})
	cl := workspacev1.NewCheckpointServiceClient(sc.Conn(t))
	ctx := ctxT(t)
	if _, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: proj("small")}); err != nil {
		t.Fatal(err)
	}
	_, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: proj("big")})
	wantErr(t, err, codes.ResourceExhausted, "CHECKPOINT_LIMIT")
	l, _ := cl.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: proj("big")})
	if len(l.GetCheckpoints()) != 0 {
		t.Fatalf("a refused checkpoint is listed: %v", l)
	}
	if v := metric(t, sc, `sidecar_checkpoint_failures_total{op="create",reason="CHECKPOINT_LIMIT"}`); v != "1" {
		t.Errorf("failure metric = %q", v)
	}

	// Disabled: every call says so.
	off := sidecartest.Start(t, sidecartest.Options{Configure: func(c *sidecar.Config) { c.Services.Checkpoints.Enabled = false }})
	_, err = workspacev1.NewCheckpointServiceClient(off.Conn(t)).ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: global})
	wantErr(t, err, codes.FailedPrecondition, "CHECKPOINTS_DISABLED")
}

// A WebDAV DELETE of a collection is a recursive delete: it keeps an
// automatic checkpoint too.
func TestCheckpointBeforeWebDAVDelete(t *testing.T) {
	projects := t.TempDir()
	writeFile(t, projects, "w/dir/a.txt", "a\n")
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects,
		Configure: func(c *sidecar.Config) { c.DavServer.AllowUnconditionalWrites = true }})
	resp, _ := dav(t, "DELETE", sc.PlainDavURL()+"/projects/w/dir/", nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	l, err := workspacev1.NewCheckpointServiceClient(sc.Conn(t)).ListCheckpoints(ctxT(t), &workspacev1.ListCheckpointsRequest{Workspace: proj("w")})
	if err != nil || len(l.GetCheckpoints()) != 1 || l.GetCheckpoints()[0].GetRootPath() != "dir" ||
		l.GetCheckpoints()[0].GetReason() != workspacev1.CheckpointReason_CHECKPOINT_REASON_BEFORE_DELETE {
		t.Fatalf("checkpoints after a WebDAV DELETE: %v, %v", l, err)
	}
}

func TestCheckpointsConfig(t *testing.T) {
	cases := map[string]string{
		"services:\n  checkpoints:\n    dir: relative/path\n":             "services.checkpoints.dir: must be an absolute path",
		"services:\n  checkpoints:\n    dir: /data/projects/p/deep\n":     "services.checkpoints.dir: must not be inside projectsRootDir",
		"services:\n  checkpoints:\n    dir: /home/node/.codex/ckpt\n":    "services.checkpoints.dir: must not be inside codexHomeDir",
		"services:\n  checkpoints:\n    dir: /data\n":                     "services.checkpoints.dir: must not contain",
		"services:\n  checkpoints:\n    maxAge: soon\n":                   "services.checkpoints.maxAge",
		"services:\n  checkpoints:\n    maxEntries: 0\n":                  "services.checkpoints.maxEntries: must be between 1 and 10000000",
		"services:\n  checkpoints:\n    maxEntries: 1000\n":               "",
		"services:\n  checkpoints:\n    maxPerWorkspace: 0\n":             "services.checkpoints.maxPerWorkspace",
		"services:\n  checkpoints:\n    maxVersionsPerWorkspace: 10001\n": "services.checkpoints.maxVersionsPerWorkspace: must be between 1 and 10000",
		"services:\n  checkpoints:\n    maxVersionsPerWorkspace: 10000\n": "",
		"services:\n  checkpoints:\n    unknownKey: 1\n":                  "services.checkpoints.unknownKey: unknown key",
		// The default store is outside the agent's tree; on the agent's
		// volume only as an explicit, tamperable opt-in (issue #23).
		"services:\n  checkpoints:\n    dir: /data/projects/.agent-checkpoints\n":                           "services.checkpoints.dir: is on the agent's volume",
		"services:\n  checkpoints:\n    dir: \"\"\n":                                                        "services.checkpoints.dir: must be set",
		"services:\n  checkpoints:\n    dir: \"\"\n    onAgentVolume: true\n":                               "",
		"services:\n  checkpoints:\n    enabled: false\n    dir: \"\"\n":                                    "",
		"services:\n  checkpoints:\n    dir: /data/projects/.agent-checkpoints/\n    onAgentVolume: true\n": "",
		"services:\n  checkpoints:\n    onAgentVolume: true\n":                                              "services.checkpoints.onAgentVolume: true needs services.checkpoints.dir empty or projectsRootDir/.agent-checkpoints",
		"services:\n  checkpoints:\n    dir: /srv/ckpt\n    maxAge: 1h\n":                                   "",
		// Any other name in the projects root is, or can become, a project
		// (opening the store would sweep it).
		"services:\n  checkpoints:\n    dir: /data/projects/.ckpt\n":                      "services.checkpoints.dir: must not be inside projectsRootDir",
		"services:\n  checkpoints:\n    dir: /data/projects/q\n    onAgentVolume: true\n": "services.checkpoints.onAgentVolume: true needs",
		"services:\n  checkpoints:\n    dir: /data/projects/.agent-checkpoints/x\n":       "services.checkpoints.dir: must not be inside projectsRootDir",
	}
	for in, want := range cases {
		cfg, err := sidecar.ParseConfig([]byte(in))
		if err == nil {
			cfg.TLS = sidecar.TLSConfig{CertFile: "/t/tls.crt", KeyFile: "/t/tls.key", ClientCAFile: "/t/ca.crt"}
			err = cfg.Validate()
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}
