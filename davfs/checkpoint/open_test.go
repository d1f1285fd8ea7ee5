package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/davfs"
)

// A store whose subfolder (objects/, tmp/, ws/, packs/) the agent replaced
// by a symlink (here to a canary folder inside the test's temp dir) never
// fails the start (issue #23): the files are served, every checkpoint call
// and every delete that would take an automatic checkpoint answers
// Unavailable/CHECKPOINTS_UNAVAILABLE naming the folder, nothing is
// deleted without the safety net unless the caller says so, nothing is
// written through the link; once the folder is repaired, OpenCheckpoints
// brings checkpoints back without a restart.
func TestCheckpointStoreSubdirSymlinkDegrades(t *testing.T) {
	for _, sub := range []string{"objects", "tmp", "ws", "packs"} {
		t.Run(sub, func(t *testing.T) {
			e := newEnv(t, nil)
			store := filepath.Join(e.dir, "store")
			e.write("projects/p/d/a.txt", "A")
			first, err := ckoOpen(e, store)
			must(t, err)
			_, err = first.CreateCheckpoint(bg, proj("p"), CheckpointOptions{})
			must(t, err)
			first.Close()

			// The attack: the subfolder moved away, a symlink in its place.
			must(t, os.Rename(filepath.Join(store, sub), filepath.Join(e.dir, "moved-"+sub)))
			e.mkdir("outside/bait")
			e.write("outside/bait/canary.txt", "CANARY")
			e.symlink("outside/bait", "store/"+sub)
			canary := ckfTree(t, e.outside)

			f, err := ckoOpen(e, store)
			if err != nil {
				t.Fatalf("start failed: %v", err)
			}
			err = f.CheckpointsErr()
			wantErr(t, err, davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable)
			if !strings.Contains(err.Error(), "its "+sub+"/ folder is a symbolic link") {
				t.Fatalf("message does not say why: %q", err)
			}
			ckfNoHostPath(t, err, e.dir)

			// Files work.
			_, err = f.CreateEntry(bg, proj("p"), "", "b.txt", davfs.TypeFile)
			must(t, err)
			if _, err := f.ReadFile(bg, proj("p"), "d/a.txt"); err != nil {
				t.Fatalf("read with the store unusable: %v", err)
			}
			// A recursive delete that would take an automatic checkpoint
			// is refused, not done without one; the override deletes.
			st, err := f.Stat(bg, proj("p"), "d")
			must(t, err)
			_, err = f.Store.DeleteEntry(bg, proj("p"), "d", st.Revision, DeleteOptions{Delete: davfs.DeleteOptions{Recursive: true}})
			wantErr(t, err, davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable)
			if !e.exists("projects/p/d/a.txt") {
				t.Fatal("the refused delete deleted")
			}
			ckfSame(t, "through the symlinked "+sub, canary, ckfTree(t, e.outside))

			// Repaired: back without a restart.
			must(t, os.Remove(filepath.Join(store, sub)))
			must(t, os.Rename(filepath.Join(e.dir, "moved-"+sub), filepath.Join(store, sub)))
			must(t, f.OpenCheckpoints())
			must(t, f.CheckpointsErr())
			cs, err := f.ListCheckpoints(bg, proj("p"))
			if err != nil || len(cs) != 1 {
				t.Fatalf("after the repair: %d checkpoints, %v", len(cs), err)
			}
			_, err = f.Store.DeleteEntry(bg, proj("p"), "d", st.Revision, DeleteOptions{Delete: davfs.DeleteOptions{Recursive: true}})
			must(t, err)
			e.checkCanaries()
		})
	}
}

// A store folder that cannot be created (a file where its parent should
// be) is reported, not fatal; OpenCheckpoints creates it once it can.
func TestCheckpointStoreNotCreatableDegrades(t *testing.T) {
	e := newEnv(t, nil)
	e.write("outside/file", "F")
	f, err := ckfOpen(e, filepath.Join(e.dir, "outside", "file", "store"))
	must(t, err)
	wantErr(t, f.CheckpointsErr(), davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable) // stated from the start
	wantErr(t, f.OpenCheckpoints(), davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable)
	wantErr(t, f.CheckpointsErr(), davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable)
	must(t, os.Remove(filepath.Join(e.dir, "outside", "file")))
	must(t, f.OpenCheckpoints())
	if !e.exists("outside/file/store/" + storeMarker) {
		t.Fatal("the store was not created once it could be")
	}
}

// ckoOpen opens davfs over e's roots with the store at dir and automatic
// checkpoints on.
func ckoOpen(e *env, dir string) (*testFS, error) {
	f, err := openTest(testConfig{Config: davfs.Config{ProjectsRoot: e.projects, CodexHome: e.codex}, Checkpoints: Config{Dir: dir, Automatic: true}})
	if err == nil {
		e.t.Cleanup(func() { f.Close() })
	}
	return f, err
}
