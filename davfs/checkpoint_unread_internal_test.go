package davfs

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// A checkpoint that cannot be read while a collection lists the store
// (its description, or its whole ws/<key> directory, fails to open: EIO,
// EMFILE) is not collected: a create at the count limit and a delete of
// other checkpoints succeed, free none of its objects or packs and keep
// its manifest; once the fault is gone it compares and restores. (Root
// ignores chmod 000, so the fault is injected through ckReadTestHook.)
func TestCheckpointUnreadableNotCollected(t *testing.T) {
	for _, what := range []string{"description", "directory"} {
		t.Run(what, func(t *testing.T) {
			e := ckfEnv(t, func(c *Config) { c.Checkpoints.MaxPerWorkspace = 1 })
			a, b := proj("a"), proj("b")
			e.write("projects/a/big.bin", ckfRandom("a", 40_000)) // a loose object
			e.write("projects/a/s.txt", "small a")                // packed
			ca, err := e.fs.CreateCheckpoint(bg, a, CheckpointOptions{})
			must(t, err)
			store := filepath.Join(e.dir, "store")
			before := storeFiles(t, store, a)
			fault := ca.ID + ".json"
			if what == "directory" {
				fault = ckWorkspaceKey(a)
			}
			ckReadTestHook = func(name string) error {
				if name == fault {
					return unix.EIO
				}
				return nil
			}
			t.Cleanup(func() { ckReadTestHook = nil })

			e.write("projects/b/x.bin", ckfRandom("b", 30_000))
			_, err = e.fs.CreateCheckpoint(bg, b, CheckpointOptions{})
			must(t, err)
			e.write("projects/b/x.bin", ckfRandom("b2", 30_000))
			cb, err := e.fs.CreateCheckpoint(bg, b, CheckpointOptions{}) // evicts the first (count limit)
			must(t, err)
			must(t, e.fs.DeleteCheckpoint(bg, b, cb.ID))
			if _, err := e.fs.CheckpointStats(); err != nil {
				t.Fatalf("stats: %v", err)
			}
			storeFilesKept(t, store, before, "unreadable")

			ckReadTestHook = nil
			bigBinRestores(t, e, a, ca.ID)
			if got := e.read("projects/a/s.txt"); got != "small a" {
				t.Fatalf("restored s.txt: %q", got)
			}
			// With the fault gone, collection frees again.
			for _, ws := range []Workspace{a, b} {
				l, err := e.fs.ListCheckpoints(bg, ws)
				must(t, err)
				for _, c := range l {
					must(t, e.fs.DeleteCheckpoint(bg, ws, c.ID))
				}
			}
			for _, d := range []string{"objects", "packs"} {
				for name, v := range ckfTree(t, filepath.Join(store, d)) {
					if !strings.HasPrefix(v, "d") {
						t.Fatalf("%s/%s left after every checkpoint was deleted", d, name)
					}
				}
			}
		})
	}
}

// mkdirSynced creates a directory in an O_PATH directory (as the store's
// are) and fsyncs it without error, and accepts (and fsyncs) one that exists. Whether
// the entry survives a crash cannot be tested here: this only runs the path.
func TestCheckpointMkdirSynced(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.Open(dir, oDirPath|oCommon, 0)
	must(t, err)
	defer unix.Close(fd)
	for range 2 {
		must(t, mkdirSynced(fd, "sub"))
	}
	if fi, err := os.Stat(filepath.Join(dir, "sub")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("sub: %v %v", fi, err)
	}
	if err := mkdirSynced(fd, "missing/sub"); !strings.Contains(errnoOf(err).Error(), "no such file") {
		t.Fatalf("mkdir under a missing directory: %v", err)
	}
}

// A description that can be opened but is rejected (here hard-linked as
// a backup, so not single-link) keeps its checkpoint: a collection run
// meanwhile frees none of its objects and keeps its manifest, and once
// the extra link is gone it compares and restores.
func TestCheckpointRejectedDescriptionNotCollected(t *testing.T) {
	e := ckfEnv(t, nil)
	a, b := proj("a"), proj("b")
	e.write("projects/a/big.bin", ckfRandom("a", 40_000))
	e.write("projects/a/s.txt", "small a")
	ca, err := e.fs.CreateCheckpoint(bg, a, CheckpointOptions{})
	must(t, err)
	store := filepath.Join(e.dir, "store")
	before := storeFiles(t, store, a)
	backup := filepath.Join(store, "backup.json")
	must(t, os.Link(filepath.Join(store, "ws", ckWorkspaceKey(a), ca.ID+".json"), backup))
	e.write("projects/b/x.bin", ckfRandom("b", 30_000))
	cb, err := e.fs.CreateCheckpoint(bg, b, CheckpointOptions{})
	must(t, err)
	must(t, e.fs.DeleteCheckpoint(bg, b, cb.ID))
	must(t, os.Remove(backup))
	storeFilesKept(t, store, before, "rejected")
	bigBinRestores(t, e, a, ca.ID)
}

// A description that persistently cannot be read (hard-linked) jams
// collection, with a warning naming its workspace key and ID (no path);
// deleting it by ID removes it, and collection frees again.
func TestCheckpointRejectedDescriptionCanBeDeleted(t *testing.T) {
	var logs strings.Builder
	var logMu sync.Mutex
	e := ckfEnv(t, func(c *Config) {
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: &lockedWriter{w: &logs, mu: &logMu}, Level: hclog.Warn})
	})
	a, b := proj("a"), proj("b")
	e.write("projects/a/big.bin", ckfRandom("a", 40_000))
	ca, err := e.fs.CreateCheckpoint(bg, a, CheckpointOptions{})
	must(t, err)
	store := filepath.Join(e.dir, "store")
	wsA := filepath.Join(store, "ws", ckWorkspaceKey(a))
	must(t, os.Link(filepath.Join(wsA, ca.ID+".json"), filepath.Join(store, "backup.json")))
	e.write("projects/b/x.bin", ckfRandom("b", 30_000))
	cb, err := e.fs.CreateCheckpoint(bg, b, CheckpointOptions{})
	must(t, err)
	must(t, e.fs.DeleteCheckpoint(bg, b, cb.ID))
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if !strings.Contains(out, "workspace_key="+ckWorkspaceKey(a)) || !strings.Contains(out, "checkpoint_id="+ca.ID) ||
		strings.Contains(out, e.dir) {
		t.Fatalf("log: %q", out)
	}
	must(t, e.fs.DeleteCheckpoint(bg, a, ca.ID))
	for _, ext := range []string{".json", ".manifest"} {
		if _, err := os.Lstat(filepath.Join(wsA, ca.ID+ext)); !os.IsNotExist(err) {
			t.Fatalf("%s left: %v", ext, err)
		}
	}
	wantErr(t, e.fs.DeleteCheckpoint(bg, a, ca.ID), CodeNotFound, ReasonCheckpointNotFound)
	for _, d := range []string{"objects", "packs"} {
		for name, v := range ckfTree(t, filepath.Join(store, d)) {
			if !strings.HasPrefix(v, "d") {
				t.Fatalf("%s/%s left after every checkpoint was deleted", d, name)
			}
		}
	}
}

// Over the byte limit with a description that cannot be read, a create
// is refused as not fully readable (retry, or delete the checkpoint),
// naming the checkpoint only when it is of the same workspace.
func TestCheckpointUnreadableOverByteLimit(t *testing.T) {
	e := ckfEnv(t, func(c *Config) { c.Checkpoints.MaxTotalBytes = 60_000 })
	a, b := proj("a"), proj("b")
	e.write("projects/a/big.bin", ckfRandom("a", 40_000))
	ca, err := e.fs.CreateCheckpoint(bg, a, CheckpointOptions{})
	must(t, err)
	ckReadTestHook = func(name string) error {
		if name == ca.ID+".json" {
			return unix.EIO
		}
		return nil
	}
	t.Cleanup(func() { ckReadTestHook = nil })
	e.write("projects/b/x.bin", ckfRandom("b", 30_000))
	_, err = e.fs.CreateCheckpoint(bg, b, CheckpointOptions{})
	wantErr(t, err, CodeResourceExhausted, ReasonCheckpointLimit)
	if msg := err.Error(); !strings.Contains(msg, "not fully readable") || strings.Contains(msg, ca.ID) {
		t.Fatalf("other workspace: %v", err)
	}
	e.write("projects/a/y.bin", ckfRandom("y", 30_000))
	_, err = e.fs.CreateCheckpoint(bg, a, CheckpointOptions{})
	wantErr(t, err, CodeResourceExhausted, ReasonCheckpointLimit)
	if msg := err.Error(); !strings.Contains(msg, "not fully readable") || !strings.Contains(msg, ca.ID) {
		t.Fatalf("same workspace: %v", err)
	}
	ckReadTestHook = nil // readable again: the create prunes a's checkpoint
	_, err = e.fs.CreateCheckpoint(bg, b, CheckpointOptions{})
	must(t, err)
}

// bigBinRestores changes projects/a/big.bin and checks that checkpoint id
// still compares (one change) and restores it byte for byte.
// storeFiles reads the store's objects, packs and ws's checkpoints, which
// must hold a pack and a loose object.
func storeFiles(t *testing.T, store string, ws Workspace) map[string]map[string]string {
	t.Helper()
	files := map[string]map[string]string{}
	for _, d := range []string{"objects", "packs", filepath.Join("ws", ckWorkspaceKey(ws))} {
		files[d] = ckfTree(t, filepath.Join(store, d))
	}
	if len(files["packs"]) < 2 || len(files["objects"]) < 3 {
		t.Fatalf("setup: want a pack and a loose object, got %v", files)
	}
	return files
}

// storeFilesKept fails unless every file storeFiles read is still there,
// unchanged (the store may hold more).
func storeFilesKept(t *testing.T, store string, before map[string]map[string]string, what string) {
	t.Helper()
	for d, want := range before {
		got := ckfTree(t, filepath.Join(store, d))
		for name, v := range want {
			if got[name] != v {
				t.Fatalf("%s/%s of the %s checkpoint was removed or changed", d, name, what)
			}
		}
	}
}

func bigBinRestores(t *testing.T, e *env, a Workspace, id string) {
	t.Helper()
	e.write("projects/a/big.bin", "changed")
	cmp, err := e.fs.CompareCheckpoint(bg, a, id, "", "", false)
	must(t, err)
	if len(cmp.Changes) != 1 {
		t.Fatalf("compare: %+v", cmp.Changes)
	}
	_, err = e.fs.RestoreCheckpoint(bg, a, id, "", RestoreOptions{})
	must(t, err)
	if got := e.read("projects/a/big.bin"); got != ckfRandom("a", 40_000) {
		t.Fatalf("restored big.bin: %d bytes", len(got))
	}
}
