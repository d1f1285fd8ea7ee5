package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
)

// The store's delete composes the automatic checkpoint above the core's:
// only a recursive delete of a directory whose revision matches takes one
// (by the operator named), the core's own refusals come first and take
// none, and SkipCheckpoint deletes without.
func TestDeleteEntryAutomaticCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name      string
		path      string
		recursive bool
		skip      bool
		stale     bool // a revision that no longer matches
		wantAuto  bool
		wantCode  davfs.Code
		wantGone  bool
	}{
		{name: "directory", path: "d", recursive: true, wantAuto: true, wantGone: true},
		{name: "file", path: "d/a.txt", wantGone: true},
		{name: "skipped", path: "d", recursive: true, skip: true, wantGone: true},
		{name: "stale", path: "d", recursive: true, stale: true, wantCode: davfs.CodeAborted},
		{name: "workspace root", path: "", recursive: true, wantCode: davfs.CodePermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ckAutoEnv(t)
			e.write("projects/p/d/a.txt", "a")
			rev := "stale"
			if st, err := e.fs.Stat(bg, proj("p"), tc.path); err == nil && !tc.stale {
				rev = st.Revision
			}
			opts := DeleteOptions{Delete: davfs.DeleteOptions{Recursive: tc.recursive}, SkipCheckpoint: tc.skip, Operator: "alice"}
			auto, err := e.fs.Store.DeleteEntry(bg, proj("p"), tc.path, rev, opts)
			if tc.wantCode != 0 && davfs.CodeOf(err) != tc.wantCode || tc.wantCode == 0 && err != nil {
				t.Fatalf("delete: %v, want code %v", err, tc.wantCode)
			}
			list, err := e.fs.ListCheckpoints(bg, proj("p"))
			must(t, err)
			if (auto != "") != tc.wantAuto || len(list) != map[bool]int{true: 1}[tc.wantAuto] {
				t.Fatalf("automatic checkpoint %q, stored %+v; want one: %v", auto, list, tc.wantAuto)
			}
			if tc.wantAuto && (list[0].ID != auto || list[0].Reason != CheckpointBeforeDelete || list[0].Root != tc.path || list[0].Operator != "alice") {
				t.Fatalf("automatic checkpoint %+v", list[0])
			}
			if gone := !e.exists("projects/p/d/a.txt"); gone != tc.wantGone {
				t.Fatalf("deleted: %v, want %v", gone, tc.wantGone)
			}
		})
	}
}

// A keep delete through the store (DeleteOptions.Version) deletes only
// what the version holds: the agent's rewrite after the capture refuses
// it, even with a ChangedAfter the ctimes cannot help with (a floor in
// the future), and the version is the delete's automatic checkpoint.
func TestDeleteEntryWithVersion(t *testing.T) {
	for _, rewrite := range []bool{true, false} {
		e := ckAutoEnv(t)
		e.write("projects/p/d/a.txt", "a")
		st, err := e.fs.Stat(bg, proj("p"), "d")
		must(t, err)
		id, release, err := e.fs.KeepVersion(bg, proj("p"), "d", st.Revision, "DELETE", "")
		must(t, err)
		if rewrite {
			e.write("projects/p/d/a.txt", "the agent's a2")
		}
		st2, err := e.fs.Stat(bg, proj("p"), "d")
		must(t, err)
		opts := DeleteOptions{Delete: davfs.DeleteOptions{Recursive: true, ChangedAfter: time.Now().Add(time.Hour)}, Version: id}
		auto, err := e.fs.Store.DeleteEntry(bg, proj("p"), "d", st2.Revision, opts)
		release()
		if rewrite {
			wantErr(t, err, davfs.CodeAborted, davfs.ReasonRevisionMismatch)
			if e.read("projects/p/d/a.txt") != "the agent's a2" {
				t.Fatal("the rewritten file was deleted")
			}
			continue
		}
		must(t, err)
		if auto != id || e.exists("projects/p/d") {
			t.Fatalf("automatic checkpoint %q (version %q); still there: %v", auto, id, e.exists("projects/p/d"))
		}
	}
}

// A project delete takes its automatic checkpoint first (by the operator
// named), and a confirmation that differs refuses before any checkpoint.
func TestDeleteProjectAutomaticCheckpoint(t *testing.T) {
	e := ckAutoEnv(t)
	e.write("projects/p/a.txt", "a")
	_, err := e.fs.Store.DeleteProject(bg, "p", "q", DeleteOptions{Operator: "bob"})
	wantErr(t, err, davfs.CodeInvalidArgument, davfs.ReasonConfirmationMismatch)
	if list, _ := e.fs.ListCheckpoints(bg, proj("p")); len(list) != 0 {
		t.Fatalf("a refused delete checkpointed: %+v", list)
	}
	auto, err := e.fs.Store.DeleteProject(bg, "p", "p", DeleteOptions{Operator: "bob"})
	must(t, err)
	list, err := e.fs.ListCheckpoints(bg, proj("p"))
	must(t, err)
	if len(list) != 1 || list[0].ID != auto || list[0].Reason != CheckpointBeforeProjectDelete || list[0].Operator != "bob" || e.exists("projects/p") {
		t.Fatalf("project delete: auto %q, stored %+v", auto, list)
	}
}

func TestCheckpointAutomaticBeforeDeletes(t *testing.T) {
	e := ckEnv(t, []string{"projects/p/okdir/sub/more.txt"}, nil)
	ctx := context.Background()
	ws := sectree.Project("p")
	proj := filepath.Join(e.projects(), "p")
	before := sectree.Snapshot(t, proj)

	st, err := e.fs.Stat(ctx, ws, "okdir")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Store.DeleteEntry(ctx, ws, "okdir", st.Revision, DeleteOptions{Delete: davfs.DeleteOptions{Recursive: true}, Operator: "bob"}); err != nil {
		t.Fatal(err)
	}
	list, _ := e.fs.ListCheckpoints(ctx, ws)
	if len(list) != 1 || list[0].Reason != CheckpointBeforeDelete || list[0].Root != "okdir" || list[0].Operator != "bob" {
		t.Fatalf("after a recursive delete: %+v", list)
	}
	if _, err := e.fs.RestoreCheckpoint(ctx, ws, list[0].ID, "", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	ckEqual(t, "recursive delete undone", before, sectree.Snapshot(t, proj))

	if err := e.fs.DeleteProject(ctx, "p", "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(proj); !os.IsNotExist(err) {
		t.Fatalf("project still there: %v", err)
	}
	list, _ = e.fs.ListCheckpoints(ctx, ws)
	if len(list) < 2 || list[0].Reason != CheckpointBeforeProjectDelete {
		t.Fatalf("after a project delete: %+v", list)
	}
	if _, err := e.fs.RestoreCheckpoint(ctx, ws, list[0].ID, "", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	got := sectree.Snapshot(t, proj)
	delete(before, ".") // the root's mode and times are the new directory's
	delete(got, ".")
	ckEqual(t, "project delete undone", before, got)
}
