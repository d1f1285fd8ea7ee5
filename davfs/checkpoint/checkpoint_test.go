package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
)

// Checkpoints (issue #15): create, list, compare, restore, delete; the
// traps of the confined walk; limits; persistence; a writer running.

func ckEnv(t *testing.T, layout []string, tweak func(*testConfig)) *secEnv {
	t.Helper()
	return secNewEnv(t, "", layout, func(c *testConfig) {
		c.Checkpoints = Config{Dir: filepath.Join(filepath.Dir(c.ProjectsRoot), "store"), Automatic: true}
		if tweak != nil {
			tweak(c)
		}
	})
}

func ckWrite(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func ckKinds(cs []CheckpointChange) map[string]CheckpointChangeKind {
	out := map[string]CheckpointChangeKind{}
	for _, c := range cs {
		out[c.Path] = c.Kind
	}
	return out
}

func ckCreate(t *testing.T, e *secEnv, ws davfs.Workspace, opts CheckpointOptions) Checkpoint {
	t.Helper()
	c, err := e.fs.CreateCheckpoint(context.Background(), ws, opts)
	if err != nil {
		t.Fatalf("CreateCheckpoint: %v", err)
	}
	return c
}

func ckEqual(t *testing.T, what string, want, got map[string]sectree.Node) {
	t.Helper()
	if d := sectree.Diff(want, got, nil); len(d) > 0 {
		t.Fatalf("%s:\n%s", what, strings.Join(d, "\n"))
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	e := ckEnv(t, []string{"projects/p/okdir/deep/x.bin"}, nil)
	ctx := context.Background()
	ws := sectree.Project("p")
	proj := filepath.Join(e.projects(), "p")
	ckWrite(t, filepath.Join(proj, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	before := sectree.Snapshot(t, proj)
	outside := sectree.Snapshot(t, filepath.Join(e.base, "outside"))

	c := ckCreate(t, e, ws, CheckpointOptions{Label: "known good", Operator: "alice"})
	if c.Files != 4 || c.Dirs != 2 || c.Label != "known good" || c.Operator != "alice" || c.Reason != CheckpointManual {
		t.Fatalf("checkpoint = %+v", c)
	}

	// The agent edits, adds, deletes and chmods.
	ckWrite(t, filepath.Join(proj, "ok.txt"), []byte("content of projects/p/ok.txt\nmore\n"), 0o644)
	ckWrite(t, filepath.Join(proj, "new/added.txt"), []byte("new\n"), 0o600)
	if err := os.Remove(filepath.Join(proj, "okdir/inner.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(proj, "run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	edited := sectree.Snapshot(t, proj)

	cmp, err := e.fs.CompareCheckpoint(ctx, ws, c.ID, "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]CheckpointChangeKind{
		"ok.txt": CheckpointModified, "new": CheckpointAdded, "new/added.txt": CheckpointAdded,
		"okdir/inner.txt": CheckpointRemoved, "run.sh": CheckpointModified,
	}
	if got := ckKinds(cmp.Changes); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes = %v, want %v", got, want)
	}
	for _, ch := range cmp.Changes {
		switch ch.Path {
		case "ok.txt":
			if ch.DiffState != DiffIncluded || !strings.Contains(ch.Diff, "+more\n") || !strings.Contains(ch.Diff, "--- a/ok.txt") {
				t.Errorf("ok.txt diff (%v): %q", ch.DiffState, ch.Diff)
			}
		case "run.sh":
			if ch.OldMode&0o777 != 0o755 || ch.NewMode&0o777 != 0o644 || ch.Diff != "" {
				t.Errorf("run.sh change = %+v", ch)
			}
		}
	}

	res, err := e.fs.RestoreCheckpoint(ctx, ws, c.ID, "", RestoreOptions{PlanToken: cmp.PlanToken})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if len(res.Changes) != len(cmp.Changes) || res.AutoCheckpoint == "" {
		t.Fatalf("restore result = %+v", res)
	}
	ckEqual(t, "after restore", before, sectree.Snapshot(t, proj))
	ckEqual(t, "outside", outside, sectree.Snapshot(t, filepath.Join(e.base, "outside")))

	// The restore is undone by its automatic checkpoint.
	list, err := e.fs.ListCheckpoints(ctx, ws)
	if err != nil || len(list) != 2 || list[0].ID != res.AutoCheckpoint || list[0].Reason != CheckpointBeforeRestore {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if _, err := e.fs.RestoreCheckpoint(ctx, ws, res.AutoCheckpoint, "", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	ckEqual(t, "after undo", edited, sectree.Snapshot(t, proj))

	// One file, then one directory.
	if _, err := e.fs.RestoreCheckpoint(ctx, ws, c.ID, "ok.txt", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "ok.txt")); string(b) != "content of projects/p/ok.txt\n" {
		t.Fatalf("ok.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(proj, "new/added.txt")); err != nil {
		t.Fatalf("a one-file restore touched another file: %v", err)
	}
	if _, err := e.fs.RestoreCheckpoint(ctx, ws, c.ID, "okdir", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(proj, "okdir/inner.txt")); err != nil {
		t.Fatal(err)
	}

	// Compare two checkpoints; delete one.
	c2 := ckCreate(t, e, ws, CheckpointOptions{})
	cmp2, err := e.fs.CompareCheckpoint(ctx, ws, c.ID, c2.ID, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := ckKinds(cmp2.Changes); fmt.Sprint(got) != fmt.Sprint(map[string]CheckpointChangeKind{"new": CheckpointAdded, "new/added.txt": CheckpointAdded, "run.sh": CheckpointModified}) {
		t.Fatalf("checkpoint vs checkpoint = %v", got)
	}
	if err := e.fs.DeleteCheckpoint(ctx, ws, c2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.GetCheckpoint(ctx, ws, c2.ID); davfs.ReasonOf(err) != davfs.ReasonCheckpointNotFound {
		t.Fatalf("deleted checkpoint: %v", err)
	}
}

// The traps: nothing but single-link regular files and directories with
// visible names is captured, and a restore never writes through or over
// what it did not capture.
func TestCheckpointTraps(t *testing.T) {
	layout := []string{
		"projects/p/link => /outside/canary.txt",
		"projects/p/dirlink => /outside/dir",
		"projects/p/hard == outside/canary.txt",
		"projects/p/fifo |",
		"projects/p/node_modules/secret.js",
		"projects/p/.git/config",
		"projects/p/sub/",
		"codex/skills/tool.md",
		"codex/skills/auth => /codex/auth.json",
		"codex/skills/hard == codex/auth.json",
	}
	for _, openat2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("openat2=%v", openat2), func(t *testing.T) {
			e := ckEnv(t, layout, func(c *testConfig) { c.DisableOpenat2 = !openat2 })
			ctx := context.Background()
			all := sectree.Snapshot(t, e.base)
			notStore := func(k string) bool { return sectree.Under(k, "store") }

			c := ckCreate(t, e, sectree.Project("p"), CheckpointOptions{})
			// ok.txt, okdir/, okdir/inner.txt, sub/
			if c.Files != 2 || c.Dirs != 2 || c.Skipped != 6 {
				t.Fatalf("project checkpoint = %+v", c)
			}
			g := ckCreate(t, e, davfs.Workspace{Scope: davfs.ScopeGlobal}, CheckpointOptions{})
			// skills/, skills/ok.md, skills/tool.md, AGENTS.md
			if g.Files != 3 || g.Dirs != 1 || g.Skipped != 2 {
				t.Fatalf("global checkpoint = %+v", g)
			}
			// No secret byte reached the store.
			filepath.Walk(filepath.Join(e.base, "store"), func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() {
					b, _ := os.ReadFile(p)
					sectree.NoSecret(t, "store file", b)
				}
				return nil
			})
			ckEqual(t, "checkpoints changed the volumes", all, secSnapshotSkip(t, e.base, notStore))

			// A compare of the untouched tree shows nothing.
			cmp, err := e.fs.CompareCheckpoint(ctx, sectree.Project("p"), c.ID, "", "", true)
			if err != nil || len(cmp.Changes) != 0 {
				t.Fatalf("compare = %+v, %v", cmp.Changes, err)
			}

			// The agent puts traps where the checkpoint has files.
			proj := filepath.Join(e.projects(), "p")
			os.RemoveAll(filepath.Join(proj, "okdir"))
			if err := os.Symlink(filepath.Join(e.base, "outside/dir"), filepath.Join(proj, "okdir")); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(proj, "ok.txt"))
			if err := os.Link(filepath.Join(e.base, "outside/canary.txt"), filepath.Join(proj, "ok.txt")); err != nil {
				t.Fatal(err)
			}
			before := secSnapshotSkip(t, e.base, notStore)
			for _, p := range []string{"", "okdir", "ok.txt"} {
				_, err := e.fs.RestoreCheckpoint(ctx, sectree.Project("p"), c.ID, p, RestoreOptions{})
				if davfs.ReasonOf(err) != davfs.ReasonCheckpointConflict {
					t.Fatalf("restore %q over a trap: %v", p, err)
				}
				sectree.CheckDavErr(t, "restore", err, e.base)
			}
			ckEqual(t, "a refused restore changed something", before, secSnapshotSkip(t, e.base, notStore))

			// Global: the planted names stay, AGENTS.md comes back.
			os.Remove(filepath.Join(e.codex(), "AGENTS.md"))
			if _, err := e.fs.RestoreCheckpoint(ctx, davfs.Workspace{Scope: davfs.ScopeGlobal}, g.ID, "", RestoreOptions{}); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(e.codex(), "AGENTS.md")); !bytes.Equal(b, sectree.Content("codex/AGENTS.md")) {
				t.Fatalf("AGENTS.md = %q", b)
			}
			after := sectree.Snapshot(t, e.base)
			for _, k := range []string{"codex/skills/auth", "codex/skills/hard", "codex/auth.json", "outside/canary.txt"} {
				if after[k] != before[k] {
					t.Errorf("%s changed: %v -> %v", k, before[k], after[k])
				}
			}
		})
	}
}

func secSnapshotSkip(t *testing.T, root string, skip func(string) bool) map[string]sectree.Node {
	s := sectree.Snapshot(t, root)
	for k := range s {
		if skip(k) {
			delete(s, k)
		}
	}
	return s
}

func TestCheckpointBadInput(t *testing.T) {
	e := ckEnv(t, nil, nil)
	ctx := context.Background()
	ws := sectree.Project("p")
	c := ckCreate(t, e, ws, CheckpointOptions{})
	before := sectree.Snapshot(t, e.base)
	cases := []struct {
		name   string
		err    error
		reason davfs.Reason
	}{
		{"dot path", func() error {
			_, err := e.fs.CreateCheckpoint(ctx, ws, CheckpointOptions{Path: "okdir/./inner.txt"})
			return err
		}(), davfs.ReasonInvalidPath},
		{"empty segment", func() error {
			_, err := e.fs.RestoreCheckpoint(ctx, ws, c.ID, "okdir//inner.txt", RestoreOptions{})
			return err
		}(), davfs.ReasonInvalidPath},
		{"dotdot", func() error { _, err := e.fs.CompareCheckpoint(ctx, ws, c.ID, "", "../q", false); return err }(), davfs.ReasonInvalidPath},
		{"denylisted", func() error {
			_, err := e.fs.CreateCheckpoint(ctx, ws, CheckpointOptions{Path: "node_modules"})
			return err
		}(), davfs.ReasonDenylisted},
		{"label", func() error {
			_, err := e.fs.CreateCheckpoint(ctx, ws, CheckpointOptions{Label: "a\nb"})
			return err
		}(), davfs.ReasonInvalidArgument},
		{"id", func() error {
			_, err := e.fs.RestoreCheckpoint(ctx, ws, "../../x", "", RestoreOptions{})
			return err
		}(), davfs.ReasonCheckpointNotFound},
		{"other workspace", func() error {
			_, err := e.fs.RestoreCheckpoint(ctx, sectree.Project("q"), c.ID, "", RestoreOptions{})
			return err
		}(), davfs.ReasonCheckpointNotFound},
		{"outside global", func() error {
			_, err := e.fs.CreateCheckpoint(ctx, davfs.Workspace{Scope: davfs.ScopeGlobal}, CheckpointOptions{Path: "auth.json"})
			return err
		}(), davfs.ReasonOutsideGlobal},
		{"missing", func() error {
			_, err := e.fs.CreateCheckpoint(ctx, ws, CheckpointOptions{Path: "nope"})
			return err
		}(), davfs.ReasonNotFound},
	}
	for _, tc := range cases {
		if davfs.ReasonOf(tc.err) != tc.reason {
			t.Errorf("%s: %v (reason %s), want %s", tc.name, tc.err, davfs.ReasonOf(tc.err), tc.reason)
		}
		sectree.CheckDavErr(t, tc.name, tc.err, e.base)
	}
	ckEqual(t, "bad input changed something", before, sectree.Snapshot(t, e.base))

	// Without a store every call says so.
	d := secNewEnv(t, "", nil, nil)
	if _, err := d.fs.ListCheckpoints(ctx, ws); davfs.ReasonOf(err) != davfs.ReasonCheckpointsDisabled {
		t.Fatalf("disabled: %v", err)
	}
}

func TestCheckpointDedupAndLimits(t *testing.T) {
	e := ckEnv(t, nil, func(c *testConfig) {
		c.Checkpoints.MaxPerWorkspace = 3
		c.Checkpoints.MaxTotalBytes = 64 << 10
	})
	ctx := context.Background()
	ws := sectree.Project("p")
	proj := filepath.Join(e.projects(), "p")
	ckWrite(t, filepath.Join(proj, "big.bin"), bytes.Repeat([]byte("a"), 40<<10), 0o644)
	first := ckCreate(t, e, ws, CheckpointOptions{})
	st1, _ := e.fs.CheckpointStats()
	// Unchanged files cost nothing.
	ckCreate(t, e, ws, CheckpointOptions{})
	st2, _ := e.fs.CheckpointStats()
	if st2.Bytes != st1.Bytes || st2.Checkpoints != 2 {
		t.Fatalf("second checkpoint of an unchanged tree: %+v -> %+v", st1, st2)
	}
	ckWrite(t, filepath.Join(proj, "ok.txt"), []byte("changed\n"), 0o644)
	ckCreate(t, e, ws, CheckpointOptions{})
	st3, _ := e.fs.CheckpointStats()
	if st3.Bytes != st1.Bytes+int64(len("changed\n")) {
		t.Fatalf("one changed file: %d -> %d bytes", st1.Bytes, st3.Bytes)
	}
	// The count limit prunes the oldest.
	ckCreate(t, e, ws, CheckpointOptions{})
	list, _ := e.fs.ListCheckpoints(ctx, ws)
	if len(list) != 3 || list[len(list)-1].ID == first.ID {
		t.Fatalf("count limit: %d checkpoints, oldest %s (first %s)", len(list), list[len(list)-1].ID, first.ID)
	}
	// The byte limit: a new 40 KiB file does not fit beside the old one
	// unless the older checkpoints go; a 70 KiB one never fits.
	ckWrite(t, filepath.Join(proj, "big.bin"), bytes.Repeat([]byte("b"), 40<<10), 0o644)
	ckCreate(t, e, ws, CheckpointOptions{})
	list, _ = e.fs.ListCheckpoints(ctx, ws)
	st4, _ := e.fs.CheckpointStats()
	if len(list) != 1 || st4.Bytes > 64<<10 {
		t.Fatalf("byte limit: %d checkpoints, %d bytes", len(list), st4.Bytes)
	}
	ckWrite(t, filepath.Join(proj, "big.bin"), bytes.Repeat([]byte("c"), 70<<10), 0o644)
	_, err := e.fs.CreateCheckpoint(ctx, ws, CheckpointOptions{})
	if davfs.ReasonOf(err) != davfs.ReasonCheckpointLimit || davfs.CodeOf(err) != davfs.CodeResourceExhausted {
		t.Fatalf("too large: %v", err)
	}
	list2, _ := e.fs.ListCheckpoints(ctx, ws)
	st5, _ := e.fs.CheckpointStats()
	if len(list2) != 1 || list2[0].ID != list[0].ID || st5.Bytes != st4.Bytes {
		t.Fatalf("a refused checkpoint left something: %d checkpoints, %d -> %d bytes", len(list2), st4.Bytes, st5.Bytes)
	}
}

func TestCheckpointRestartKeepsThem(t *testing.T) {
	base := t.TempDir()
	sectree.Build(t, base, sectree.BaseLayout)
	cfg := secConfig(base)
	cfg.Checkpoints = Config{Dir: filepath.Join(base, "projects", ".checkpoints")}
	ctx := context.Background()
	f, err := openTest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.CreateCheckpoint(ctx, sectree.Project("p"), CheckpointOptions{Label: "l"})
	if err != nil {
		t.Fatal(err)
	}
	// The store under the projects root is never a project.
	page, err := f.ListProjects(ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range page.Projects {
		if p.Name == ".checkpoints" {
			t.Fatal("the store is listed as a project")
		}
	}
	if err := f.DeleteProject(ctx, ".checkpoints", ".checkpoints"); err == nil {
		t.Fatal("the store could be deleted as a project")
	}
	f.Close()
	os.Remove(filepath.Join(base, "projects/p/ok.txt"))

	f, err = openTest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	list, err := f.ListCheckpoints(ctx, sectree.Project("p"))
	if err != nil || len(list) != 1 || list[0].ID != c.ID || list[0].Label != "l" || !list[0].Created.Equal(c.Created) {
		t.Fatalf("after restart: %+v, %v", list, err)
	}
	if _, err := f.RestoreCheckpoint(ctx, sectree.Project("p"), c.ID, "ok.txt", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "projects/p/ok.txt")); !bytes.Equal(b, sectree.Content("projects/p/ok.txt")) {
		t.Fatalf("ok.txt = %q", b)
	}
}

func TestCheckpointStorePlacement(t *testing.T) {
	for _, dir := range []string{"projects/p/ckpt", "codex/ckpt", "codex/skills/ckpt", "projects", "."} {
		t.Run(dir, func(t *testing.T) {
			base := t.TempDir()
			sectree.Build(t, base, sectree.BaseLayout)
			cfg := secConfig(base)
			cfg.Checkpoints = Config{Dir: filepath.Join(base, dir)}
			os.MkdirAll(cfg.Checkpoints.Dir, 0o755)
			// The files are served; the store is refused (issue #23: it
			// never fails the start) and every checkpoint call says so.
			f, err := openTest(cfg)
			if err != nil {
				t.Fatalf("a misplaced store failed the start: %v", err)
			}
			defer f.Close()
			if _, err := f.ListProjects(context.Background(), 0, ""); err != nil {
				t.Fatalf("files with a misplaced store: %v", err)
			}
			for _, err := range []error{f.CheckpointsErr(), f.OpenCheckpoints(), func() error {
				_, err := f.ListCheckpoints(context.Background(), sectree.Project("p"))
				return err
			}()} {
				if davfs.ReasonOf(err) != davfs.ReasonCheckpointsUnavailable || davfs.CodeOf(err) != davfs.CodeUnavailable {
					t.Fatalf("a store at %s was accepted: %v", dir, err)
				}
				sectree.CheckDavErr(t, dir, err, base)
			}
		})
	}
}

// A checkpoint taken while a writer replaces files holds each file whole:
// one of the versions written, never a mix.
func TestCheckpointWriterRunning(t *testing.T) {
	e := ckEnv(t, nil, nil)
	ctx := context.Background()
	ws := sectree.Project("w")
	proj := filepath.Join(e.projects(), "w")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	const files = 20
	version := func(i, n int) []byte {
		return []byte(fmt.Sprintf("v%d:%s\n", n, strings.Repeat(string(rune('a'+n%26)), 1000+n%7*3000)))
	}
	for i := range files {
		ckWrite(t, filepath.Join(proj, fmt.Sprintf("f%02d", i)), version(i, 0), 0o644)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; !stop.Load(); n++ {
			i := n % files
			p := filepath.Join(proj, fmt.Sprintf("f%02d", i))
			// Written under a hidden temp name, then renamed into place,
			// as editors and davfs itself do.
			tmp := filepath.Join(proj, ".davfs-tmp-w")
			os.WriteFile(tmp, version(i, n), 0o644)
			if n%5 == 0 {
				os.Rename(tmp, filepath.Join(proj, "churn"))
				os.Remove(filepath.Join(proj, "churn"))
				continue
			}
			os.Rename(tmp, p)
		}
	}()
	var ids []string
	for range 8 {
		c, err := e.fs.CreateCheckpoint(ctx, ws, CheckpointOptions{})
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	stop.Store(true)
	wg.Wait()
	whole := regexp.MustCompile(`^v(\d+):([a-z])+\n$`)
	for _, id := range ids {
		if _, err := e.fs.RestoreCheckpoint(ctx, ws, id, "", RestoreOptions{}); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(proj)
		for _, de := range ents {
			if strings.HasPrefix(de.Name(), ".davfs-tmp-") {
				continue
			}
			b, _ := os.ReadFile(filepath.Join(proj, de.Name()))
			m := whole.FindSubmatch(b)
			if m == nil {
				t.Fatalf("checkpoint %s: %s is not one whole version: %q", id, de.Name(), sectree.Trunc(b))
			}
			var n int
			fmt.Sscan(string(m[1]), &n)
			if !bytes.Equal(b, version(0, n)) {
				t.Fatalf("checkpoint %s: %s is torn (v%d)", id, de.Name(), n)
			}
		}
	}
}

// The traps of TestCheckpointTraps in a directory large enough that the
// walk lstats its names on parallel workers (prestat): the same names are
// captured and skipped as in a small directory. At least two procs, so
// that the parallel path runs on a one-CPU runner too (what prestat itself
// returns is checked by TestCheckpointPrestatNeverFollowsLinks).
func TestCheckpointTrapsInLargeDirectory(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	traps := []string{
		"link => /outside/canary.txt",
		"dirlink => /outside/dir",
		"hard == outside/canary.txt",
		"fifo |",
		"node_modules/secret.js",
		".git/config",
		"sub/",
		"ok.txt",
	}
	var layout []string
	for _, tr := range traps {
		layout = append(layout, "projects/small/"+tr, "projects/large/"+tr)
	}
	for i := range 100 {
		layout = append(layout, fmt.Sprintf("projects/large/f%03d.txt", i))
	}
	e := ckEnv(t, layout, nil)
	small := ckCreate(t, e, sectree.Project("small"), CheckpointOptions{})
	large := ckCreate(t, e, sectree.Project("large"), CheckpointOptions{})
	if small.Files != 1 || small.Dirs != 1 || small.Skipped != 6 {
		t.Fatalf("small directory checkpoint = %+v", small)
	}
	if large.Files != small.Files+100 || large.Dirs != small.Dirs || large.Skipped != small.Skipped {
		t.Fatalf("large directory checkpoint = %+v, small %+v", large, small)
	}
	filepath.Walk(filepath.Join(e.base, "store"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			sectree.NoSecret(t, "store file", b)
		}
		return nil
	})
}

// The manifest encoding (encoding/json's) reads back as what it wrote,
// names with quotes, backslashes and control bytes included.
func TestCheckpointManifestJSON(t *testing.T) {
	m := &ckManifest{Version: 1, Entries: []ckEntry{
		{Path: "a", Dir: true, Mode: 0o755, Mtime: 5},
		{Path: "a/\"q\"\\\t\n\x01é", Mode: 0o644, Size: 12, Hash: "ab", Mtime: -3, Dev: 1 << 60, Ino: 7, Ctime: 9, Key: true, Pack: "p", Off: 4},
		{Path: "z"},
	}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got ckManifest
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if !reflect.DeepEqual(&got, m) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, *m)
	}
	type plain ckManifest // encoding/json's own encoding, for comparison
	want, _ := json.Marshal((*plain)(m))
	var a, c any
	json.Unmarshal(b, &a)
	json.Unmarshal(want, &c)
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("differs from encoding/json:\n%s\n%s", b, want)
	}
}

// Checkpoint work and its caller's deadline (issue #23): work that would
// keep its result within a second of the deadline is abandoned, and
// nothing of it stays: no checkpoint, no temp file, no object, no change.

func TestCheckpointAbandonedAtItsDeadline(t *testing.T) {
	e := ckEnv(t, nil, nil)
	ws := sectree.Project("p")
	store := filepath.Join(e.base, "store")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := e.fs.CreateCheckpoint(ctx, ws, CheckpointOptions{}); davfs.CodeOf(err) != davfs.CodeUnavailable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a checkpoint within a second of its deadline: %v", err)
	}
	if cs, err := e.fs.ListCheckpoints(context.Background(), ws); err != nil || len(cs) != 0 {
		t.Fatalf("after the abandoned checkpoint: %v %v", cs, err)
	}
	for _, d := range []string{"tmp", "objects", "packs"} {
		var left []string
		filepath.WalkDir(filepath.Join(store, d), func(p string, de os.DirEntry, err error) error {
			if err == nil && !de.IsDir() {
				left = append(left, p)
			}
			return nil
		})
		if len(left) > 0 {
			t.Errorf("the abandoned checkpoint left %q", left)
		}
	}
}
