package dav_test

// Per-file versions (webdav.unconditionalWrites: keep): what a WebDAV write
// without a precondition replaces or removes is kept first, bounded apart
// from the operator's checkpoints, listed by path, and a version that
// cannot be stored refuses the write with nothing changed.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/sectree"
	"github.com/agentworkspace/files/sidecar/internal/dav"
)

// keepReq is a WebDAV request's state that asks to keep (method), as the
// sidecar builds it under the gateway's keep header.
func keepReq(method string) (dav.RequestState, *dav.Unconditional) {
	st := wdPre(davfs.Precondition{Required: true, Keep: method})
	st.Kept = &dav.Unconditional{}
	return st, st.Kept
}

func davPut(t *testing.T, e *keepTree, st dav.RequestState, name, body string) error {
	t.Helper()
	f, err := dav.NewFileSystem(e.FS, e.ck, st).OpenFile(context.Background(), name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// davErr is the davfs error a WebDAV FileSystem call returned (nil: none).
func davErr(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := dav.ErrorFromWebDAV(err); ok {
		return e
	}
	return err
}

func readProj(t *testing.T, e *keepTree, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.Projects(), "p", rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestVersionKeptBeforeWebDAVWrites(t *testing.T) {
	e := keepEnv(t, nil)
	ws := sectree.Project("p")
	proj := filepath.Join(e.Projects(), "p")
	keepWrite(t, filepath.Join(proj, "f.txt"), []byte("v1\n"))
	keepWrite(t, filepath.Join(proj, "d/x.txt"), []byte("x\n"))
	bg := context.Background()

	// Without Keep: 428, nothing written, nothing kept.
	refuse := wdPre(davfs.Precondition{Required: true})
	if err := davPut(t, e, refuse, "/projects/p/f.txt", "v2\n"); davfs.ReasonOf(davErr(err)) != "PRECONDITION_REQUIRED" {
		t.Fatalf("unconditional PUT without keep: %v", err)
	}

	st, u := keepReq("PUT")
	if err := davPut(t, e, st, "/projects/p/f.txt", "v2\n"); err != nil {
		t.Fatalf("PUT with keep: %v", err)
	}
	used, ids := u.Used()
	if got := readProj(t, e, "f.txt"); got != "v2\n" || !used || len(ids) != 1 {
		t.Fatalf("after PUT: %q, used %v, versions %v", got, used, ids)
	}
	vs, _, err := e.ck.ListCheckpointsHolding(bg, ws, "f.txt")
	if err != nil || len(vs) != 1 || vs[0].ID != ids[0] || vs[0].Reason != checkpoint.CheckpointBeforeWebDAVWrite || vs[0].Label != "WebDAV PUT" || vs[0].Root != "f.txt" || vs[0].Files != 1 {
		t.Fatalf("versions of f.txt: %+v %v", vs, err)
	}
	if vs, _, _ := e.ck.ListCheckpointsHolding(bg, ws, "d/x.txt"); len(vs) != 0 {
		t.Fatalf("a version of f.txt holds d/x.txt: %+v", vs)
	}

	// A create keeps nothing.
	st, u = keepReq("PUT")
	if err := davPut(t, e, st, "/projects/p/new.txt", "new\n"); err != nil {
		t.Fatal(err)
	}
	if used, ids := u.Used(); used || len(ids) != 0 {
		t.Fatalf("a create kept %v", ids)
	}

	// A recursive delete keeps the directory, once (the version is its
	// automatic checkpoint too).
	st, u = keepReq("DELETE")
	if err := dav.NewFileSystem(e.FS, e.ck, st).RemoveAll(context.Background(), "/projects/p/d"); err != nil {
		t.Fatalf("DELETE with keep: %v", err)
	}
	if _, err := os.Stat(filepath.Join(proj, "d")); !os.IsNotExist(err) {
		t.Fatalf("d still there: %v", err)
	}
	_, ids = u.Used()
	all, _ := e.ck.ListCheckpoints(bg, ws)
	if len(ids) != 1 || len(all) != 2 || all[0].ID != ids[0] || all[0].Root != "d" || all[0].Files != 1 {
		t.Fatalf("after DELETE of d: versions %v, checkpoints %+v", ids, all)
	}
	if vs, _, _ := e.ck.ListCheckpointsHolding(bg, ws, "d/x.txt"); len(vs) != 1 || vs[0].ID != ids[0] {
		t.Fatalf("the directory's version does not list d/x.txt: %+v", vs)
	}
	if _, err := e.ck.RestoreCheckpoint(bg, ws, ids[0], "", checkpoint.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readProj(t, e, "d/x.txt"); got != "x\n" {
		t.Fatalf("d/x.txt restored from the version = %q", got)
	}

	// A MOVE's source loses nothing: it goes ahead, keeping nothing.
	st, u = keepReq("MOVE")
	if err := dav.NewFileSystem(e.FS, e.ck, st).Rename(context.Background(), "/projects/p/new.txt", "/projects/p/moved.txt"); err != nil {
		t.Fatalf("MOVE with keep: %v", err)
	}
	if used, ids := u.Used(); !used || len(ids) != 0 {
		t.Fatalf("MOVE of a source: used %v, versions %v", used, ids)
	}
}

// Versions have their own bound, pruned oldest first once older than
// VersionMinAge, and never evict the operator's checkpoints.
func TestVersionBound(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	e := keepEnv(t, func(c keepConfig) {
		c.Checkpoints.MaxPerWorkspace = 1
		c.Checkpoints.MaxVersionsPerWorkspace = 2
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ws := sectree.Project("p")
	bg := context.Background()
	keepWrite(t, filepath.Join(e.Projects(), "p", "f.txt"), []byte("v0\n"))
	manual := keepCheckpoint(t, e, ws, checkpoint.CheckpointOptions{Label: "known good"})
	var kept []string
	// v3 prunes v1, which is just old enough; v2 and v3 are young.
	for i, v := range []string{"v1\n", "v2\n", "v3\n"} {
		later([]time.Duration{checkpoint.VersionMinAge, checkpoint.VersionMinAge, time.Second}[i])
		st, u := keepReq("PUT")
		if err := davPut(t, e, st, "/projects/p/f.txt", v); err != nil {
			t.Fatal(err)
		}
		_, ids := u.Used()
		kept = append(kept, ids...)
	}
	list, _ := e.ck.ListCheckpoints(bg, ws)
	var got []string
	for _, c := range list {
		got = append(got, c.ID)
	}
	want := []string{kept[2], kept[1], manual.ID}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v (the two newest versions and the manual one)", got, want)
	}

	// Within VersionMinAge of the oldest version (v2), keeping one more
	// would prune it: the write is refused and changes nothing.
	later(time.Second)
	st, u := keepReq("PUT")
	err := davErr(davPut(t, e, st, "/projects/p/f.txt", "v4\n"))
	if davfs.ReasonOf(err) != davfs.ReasonCheckpointLimit || !strings.Contains(err.Error(), "younger than") {
		t.Fatalf("keep PUT that would prune a young version: %v", err)
	}
	if used, _ := u.Used(); used || readProj(t, e, "f.txt") != "v3\n" {
		t.Fatalf("a refused keep PUT: used %v, f.txt %q", used, readProj(t, e, "f.txt"))
	}
	if list, _ := e.ck.ListCheckpoints(bg, ws); len(list) != 3 {
		t.Fatalf("after the refused PUT: %+v", list)
	}
}

// A version that cannot be stored refuses the write, which changes
// nothing; with checkpoints off the write is refused saying keeping is off.
func TestVersionCannotBeKept(t *testing.T) {
	e := keepEnv(t, func(c keepConfig) { c.Checkpoints.MaxTotalBytes = 1 << 10 })
	ws := sectree.Project("p")
	big := strings.Repeat("b", 4<<10)
	keepWrite(t, filepath.Join(e.Projects(), "p", "big.txt"), []byte(big))
	st, u := keepReq("PUT")
	err := davErr(davPut(t, e, st, "/projects/p/big.txt", "small\n"))
	if davfs.ReasonOf(err) != davfs.ReasonCheckpointLimit {
		t.Fatalf("PUT over a file too large to keep: %v", err)
	}
	st, _ = keepReq("DELETE")
	if err := davErr(dav.NewFileSystem(e.FS, e.ck, st).RemoveAll(context.Background(), "/projects/p/big.txt")); davfs.ReasonOf(err) != davfs.ReasonCheckpointLimit {
		t.Fatalf("DELETE of a file too large to keep: %v", err)
	}
	if got := readProj(t, e, "big.txt"); got != big {
		t.Fatal("a refused write changed big.txt")
	}
	if used, _ := u.Used(); used {
		t.Error("a refused write is recorded as unconditional")
	}
	if list, _ := e.ck.ListCheckpoints(context.Background(), ws); len(list) != 0 {
		t.Fatalf("a refused version was kept: %+v", list)
	}

	off := &keepTree{Env: sectree.NewEnv(t, "", nil, nil)} // no store: checkpoints off
	keepWrite(t, filepath.Join(off.Projects(), "p", "f.txt"), []byte("v1\n"))
	st, _ = keepReq("PUT")
	err = davErr(davPut(t, off, st, "/projects/p/f.txt", "v2\n"))
	if davfs.ReasonOf(err) != "PRECONDITION_REQUIRED" || !strings.Contains(err.Error(), "services.checkpoints.enabled") {
		t.Fatalf("keep with checkpoints off: %v", err)
	}
}

// What a write replaces is what was kept: an agent's change between the
// version and the commit makes the commit refuse (REVISION_MISMATCH), and
// the agent's bytes stay.
func TestVersionIsWhatIsReplaced(t *testing.T) {
	e := keepEnv(t, nil)
	p := filepath.Join(e.Projects(), "p", "f.txt")
	keepWrite(t, p, []byte("v1\n"))
	st, _ := keepReq("PUT")
	f, err := dav.NewFileSystem(e.FS, e.ck, st).OpenFile(context.Background(), "/projects/p/f.txt", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	keepWrite(t, p, []byte("the agent's v1.5\n")) // after the version, before the commit
	// Refused when the upload starts (checked before the body streams) or
	// at the commit.
	_, err = io.WriteString(f, "client v2\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err := davErr(err); davfs.ReasonOf(err) != davfs.ReasonRevisionMismatch {
		t.Fatalf("commit over a file changed since it was kept: %v", err)
	}
	if got := readProj(t, e, "f.txt"); got != "the agent's v1.5\n" {
		t.Fatalf("f.txt = %q", got)
	}
}

// A keep DELETE, or an overwriting MOVE/COPY, of a directory holding names
// a version cannot keep (.git, a symlink) is refused: the recursive delete
// would unlink them for good. Nothing is deleted and no version is left.
func TestVersionOfDirectoryWithSkippedNames(t *testing.T) {
	e := keepEnv(t, nil)
	ws := sectree.Project("p")
	proj := filepath.Join(e.Projects(), "p")
	for _, tc := range []struct {
		name  string
		setup func(dir string)
	}{
		{".git", func(dir string) { keepWrite(t, filepath.Join(dir, ".git", "config"), []byte("[core]\n")) }},
		{"symlink", func(dir string) {
			keepWrite(t, filepath.Join(dir, "canary.txt"), []byte("canary\n"))
			if err := os.Symlink("canary.txt", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(proj, "d-"+strings.TrimPrefix(tc.name, "."))
			keepWrite(t, filepath.Join(dir, "x.txt"), []byte("x\n"))
			tc.setup(dir)
			before, _ := e.ck.ListCheckpoints(context.Background(), ws)
			st, u := keepReq("DELETE")
			err := davErr(dav.NewFileSystem(e.FS, e.ck, st).RemoveAll(context.Background(), "/projects/p/"+filepath.Base(dir)))
			if davfs.ReasonOf(err) != "PRECONDITION_REQUIRED" || !strings.Contains(err.Error(), "a version cannot keep") {
				t.Fatalf("keep DELETE of a directory with %s: %v", tc.name, err)
			}
			if got := readProj(t, e, filepath.Base(dir)+"/x.txt"); got != "x\n" {
				t.Fatalf("x.txt after the refused delete: %q", got)
			}
			if used, ids := u.Used(); used || len(ids) != 0 {
				t.Fatalf("a refused delete recorded used %v, versions %v", used, ids)
			}
			if after, _ := e.ck.ListCheckpoints(context.Background(), ws); len(after) != len(before) {
				t.Fatalf("the refused delete left a version: %+v", after)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(proj, "d-git", ".git", "config")); err != nil {
		t.Fatalf(".git/config: %v", err)
	}
}

// The capture/delete race: work the agent does after the version was
// captured is never deleted, even when another client reads the directory
// again (handing its revision out later) before the delete runs.
func TestVersionOfDirectoryRefusesLaterWork(t *testing.T) {
	var e *keepTree
	var armed bool
	ws := sectree.Project("p")
	e = keepEnv(t, func(c keepConfig) {
		c.Options.Observer = func(op string, _ time.Duration, _ int64, err error) {
			if op != "create" || !armed || err != nil {
				return
			}
			armed = false
			time.Sleep(20 * time.Millisecond) // past the kernel's ctime tick
			keepWrite(t, filepath.Join(e.Projects(), "p", "d", "x.txt"), []byte("the agent's x2\n"))
			time.Sleep(20 * time.Millisecond)
			if _, err := e.FS.Stat(context.Background(), ws, "d"); err != nil { // another client's PROPFIND
				t.Error(err)
			}
		}
	})
	keepWrite(t, filepath.Join(e.Projects(), "p", "d", "x.txt"), []byte("x\n"))
	armed = true
	st, _ := keepReq("DELETE")
	err := davErr(dav.NewFileSystem(e.FS, e.ck, st).RemoveAll(context.Background(), "/projects/p/d"))
	if davfs.ReasonOf(err) != davfs.ReasonRevisionMismatch {
		t.Fatalf("keep DELETE over work done after the version: %v", err)
	}
	if got := readProj(t, e, "d/x.txt"); got != "the agent's x2\n" {
		t.Fatalf("d/x.txt = %q", got)
	}
}

// A version never evicts an operator's checkpoint to fit the byte bound:
// when only that would make room, the write is refused (CHECKPOINT_LIMIT)
// and nothing changes.
func TestVersionNeverEvictsManualByBytes(t *testing.T) {
	e := keepEnv(t, func(c keepConfig) { c.Checkpoints.MaxTotalBytes = 12 << 10 })
	ws := sectree.Project("p")
	proj := filepath.Join(e.Projects(), "p")
	keepWrite(t, filepath.Join(proj, "a.txt"), []byte(strings.Repeat("a", 8<<10)))
	manual := keepCheckpoint(t, e, ws, checkpoint.CheckpointOptions{Label: "known good", Path: "a.txt"})
	f := strings.Repeat("f", 6<<10)
	keepWrite(t, filepath.Join(proj, "f.txt"), []byte(f))
	st, u := keepReq("PUT")
	err := davErr(davPut(t, e, st, "/projects/p/f.txt", "v2\n"))
	if davfs.ReasonOf(err) != davfs.ReasonCheckpointLimit {
		t.Fatalf("keep PUT that only the manual checkpoint's bytes would fit: %v", err)
	}
	if got := readProj(t, e, "f.txt"); got != f {
		t.Fatal("a refused keep PUT changed f.txt")
	}
	if used, _ := u.Used(); used {
		t.Error("a refused write is recorded as unconditional")
	}
	list, _ := e.ck.ListCheckpoints(context.Background(), ws)
	if len(list) != 1 || list[0].ID != manual.ID {
		t.Fatalf("checkpoints %+v, want only the manual one", list)
	}
}

// Nothing is kept for a directory holding only empty directories (a sync
// removes every directory it empties), nor for a PUT whose upload is
// aborted: neither uses up the versions' bound.
func TestVersionNotKeptForNothing(t *testing.T) {
	e := keepEnv(t, nil)
	ws := sectree.Project("p")
	proj := filepath.Join(e.Projects(), "p")
	if err := os.MkdirAll(filepath.Join(proj, "empty", "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, u := keepReq("DELETE")
	if err := davErr(dav.NewFileSystem(e.FS, e.ck, st).RemoveAll(context.Background(), "/projects/p/empty")); err != nil {
		t.Fatalf("keep DELETE of empty directories: %v", err)
	}
	if _, err := os.Stat(filepath.Join(proj, "empty")); !os.IsNotExist(err) {
		t.Fatalf("empty/ still there: %v", err)
	}
	if used, ids := u.Used(); !used || len(ids) != 0 {
		t.Fatalf("keep DELETE of empty directories: used %v, versions %v", used, ids)
	}
	if list, _ := e.ck.ListCheckpoints(context.Background(), ws); len(list) != 0 {
		t.Fatalf("empty directories left checkpoints: %+v", list)
	}

	keepWrite(t, filepath.Join(proj, "f.txt"), []byte("v1\n"))
	st, u = keepReq("PUT")
	f, err := dav.NewFileSystem(e.FS, e.ck, st).OpenFile(context.Background(), "/projects/p/f.txt", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "half"); err != nil {
		t.Fatal(err)
	}
	f.(dav.Aborter).Abort(io.ErrUnexpectedEOF)
	if err := f.Close(); err == nil {
		t.Fatal("Close after Abort = nil")
	}
	if got := readProj(t, e, "f.txt"); got != "v1\n" {
		t.Fatalf("f.txt after an aborted PUT = %q", got)
	}
	if _, ids := u.Used(); len(ids) != 0 {
		t.Fatalf("an aborted PUT reports versions %v", ids)
	}
	if list, _ := e.ck.ListCheckpoints(context.Background(), ws); len(list) != 0 {
		t.Fatalf("an aborted PUT left its version: %+v", list)
	}
}

// ListCheckpointsHolding decodes at most MaxHoldingDecodes manifests, the
// newest first, and says when it left older candidates out; a version of
// the path itself answers from its description.
func TestVersionListHoldingBounded(t *testing.T) {
	e := keepEnv(t, func(c keepConfig) { c.Checkpoints.MaxPerWorkspace = checkpoint.MaxHoldingDecodes + 5 })
	ws := sectree.Project("p")
	keepWrite(t, filepath.Join(e.Projects(), "p", "f.txt"), []byte("v1\n"))
	st, u := keepReq("PUT")
	if err := davPut(t, e, st, "/projects/p/f.txt", "v2\n"); err != nil {
		t.Fatal(err)
	}
	_, version := u.Used()
	if len(version) != 1 {
		t.Fatalf("the PUT kept %v", version)
	}
	var full []string
	// Exactly MaxHoldingDecodes candidates: every one is decoded, nothing
	// is left out.
	for i := 0; i < checkpoint.MaxHoldingDecodes; i++ {
		full = append(full, keepCheckpoint(t, e, ws, checkpoint.CheckpointOptions{}).ID)
	}
	got, truncated, err := e.ck.ListCheckpointsHolding(context.Background(), ws, "f.txt")
	if err != nil || truncated || len(got) != checkpoint.MaxHoldingDecodes+1 || got[0].ID != full[len(full)-1] || got[len(got)-1].ID != version[0] {
		t.Fatalf("holding f.txt under the bound: %d checkpoints, truncated %v, %v (want all %d and not truncated)", len(got), truncated, err, checkpoint.MaxHoldingDecodes+1)
	}
	for i := 0; i < 2; i++ {
		full = append(full, keepCheckpoint(t, e, ws, checkpoint.CheckpointOptions{}).ID)
	}
	got, truncated, err = e.ck.ListCheckpointsHolding(context.Background(), ws, "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !truncated || len(got) != checkpoint.MaxHoldingDecodes+1 || got[0].ID != full[len(full)-1] || got[checkpoint.MaxHoldingDecodes-1].ID != full[2] || got[len(got)-1].ID != version[0] {
		t.Fatalf("holding f.txt over the bound: %d checkpoints, truncated %v (want the %d newest full ones and the version, truncated)", len(got), truncated, checkpoint.MaxHoldingDecodes)
	}
	// Without a path nothing is decoded and nothing left out.
	if all, truncated, err := e.ck.ListCheckpointsHolding(context.Background(), ws, ""); err != nil || truncated || len(all) != len(full)+1 {
		t.Fatalf("unfiltered: %d checkpoints, truncated %v, %v", len(all), truncated, err)
	}
}
