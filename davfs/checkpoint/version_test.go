package checkpoint

// Reviewer findings on per-file versions (webdav.unconditionalWrites: keep):
// a version could be evicted by another checkpoint while its write still
// ran, or by any non-version checkpoint however young it was, losing the
// only copy of what the write replaced; a failed PUT dropped its version
// even while a restore read it.

import (
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// holdEnv is a store of maxTotalBytes 16 KiB on a clock the test moves,
// with f.txt (6 KiB) and other/x.bin (12 KiB) of random bytes in project
// p: a checkpoint of other/ fits only without a version of f.txt.
// observer, when set, is the store's Observer.
func holdEnv(t *testing.T, observer Observer) (e *env, later func(time.Duration), old string) {
	t.Helper()
	var mu sync.Mutex
	now := time.Now()
	e = ckfEnv(t, func(c *testConfig) {
		c.Checkpoints.MaxTotalBytes = 16 << 10
		c.Checkpoints.Automatic = true
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		c.CheckpointObserver = observer
	})
	later = func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	old = ckfRandom("f", 6<<10)
	e.write("projects/p/f.txt", old)
	e.write("projects/p/other/x.bin", ckfRandom("other", 12<<10))
	return e, later, old
}

// keepUpload is a keep PUT as the WebDAV adapter (sidecar/internal/dav)
// composes it from the core: KeepVersion keeps the current content, the
// body streams into WriteStream over the kept revision, and the hold ends
// once the upload has finished; a failed upload drops the version again
// (DropVersionIfCurrent).
type keepUpload struct {
	pw      *io.PipeWriter
	done    chan error
	version string
}

// keepPut opens a keep PUT of rel in project p.
func keepPut(e *env, rel string) (*keepUpload, error) {
	ws := proj("p")
	st, err := e.fs.Stat(bg, ws, rel)
	if err != nil {
		return nil, err
	}
	id, release, err := e.fs.KeepVersion(bg, ws, rel, st.Revision, "PUT", "")
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	u := &keepUpload{pw: pw, done: make(chan error, 1), version: id}
	go func() {
		_, _, err := e.fs.WriteStream(bg, ws, rel, pr, 0, davfs.Precondition{IfMatch: st.Revision})
		pr.CloseWithError(err)
		if err != nil && id != "" {
			e.fs.DropVersionIfCurrent(ws, rel, id, st.Revision, release)
		}
		release() // before done: the hold has ended once the upload answers
		u.done <- err
	}()
	return u, nil
}

func (u *keepUpload) Write(p []byte) (int, error) { return u.pw.Write(p) }

// Close commits the upload; Abort ends it without committing.
func (u *keepUpload) Close() error { u.pw.Close(); return <-u.done }
func (u *keepUpload) Abort(err error) error {
	u.pw.CloseWithError(err)
	return <-u.done
}

// openKeepPut opens a keep PUT of p/f.txt: the upload, and the one version
// it kept.
func openKeepPut(t *testing.T, e *env) (*keepUpload, string) {
	t.Helper()
	u, err := keepPut(e, "f.txt")
	must(t, err)
	if u.version == "" {
		t.Fatal("the keep PUT kept nothing")
	}
	return u, u.version
}

// keepDelete is a keep DELETE of rel in project p as the WebDAV adapter
// composes it: the moment before the capture bounds what the delete
// removes, the version kept is its automatic checkpoint, and a capture of
// empty directories only lets nothing but directories go.
func keepDelete(e *env, rel string) (version string, err error) {
	ws := proj("p")
	start := time.Now()
	st, err := e.fs.Stat(bg, ws, rel)
	if err != nil {
		return "", err
	}
	id, release, err := e.fs.KeepVersion(bg, ws, rel, st.Revision, "DELETE", "")
	if err != nil {
		return "", err
	}
	defer release()
	opts := DeleteOptions{Delete: davfs.DeleteOptions{Recursive: true, ChangedAfter: start}, Version: id}
	if id == "" && st.Type == davfs.TypeDirectory {
		opts.SkipCheckpoint, opts.Delete.KeptDirsOnly = true, true
	}
	_, err = e.fs.Store.DeleteEntry(bg, ws, rel, st.Revision, opts)
	return id, err
}

// noHolds fails when any checkpoint is still held (a leaked hold keeps a
// version from ever being pruned).
func noHolds(t *testing.T, e *env, what string) {
	t.Helper()
	e.fs.ck.busyMu.Lock()
	defer e.fs.ck.busyMu.Unlock()
	if len(e.fs.ck.busy) != 0 {
		t.Fatalf("%s: checkpoints still held: %v", what, e.fs.ck.busy)
	}
}

// The reviewer's reproduction: while a keep PUT's body streams, a manual
// checkpoint that only fits without the PUT's version is refused
// (CHECKPOINT_LIMIT) instead of evicting it, even once the version is
// older than VersionMinAge (only the hold protects it then); the PUT
// commits and what it replaced can be restored. Once the PUT has
// finished, the hold is gone and the old version can be pruned.
func TestVersionHeldWhileItsWriteStreams(t *testing.T) {
	e, later, old := holdEnv(t, nil)
	ws := proj("p")
	f, version := openKeepPut(t, e)
	_, err := io.WriteString(f, "the client's new ")
	must(t, err)
	if !e.fs.ck.isBusy(version) {
		t.Fatal("the version is not held while its upload streams")
	}
	_, err = e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Path: "other", Label: "during the upload"})
	wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	later(2 * VersionMinAge) // a slow upload: the version is old now
	_, err = e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Path: "other", Label: "during the upload"})
	wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	_, err = e.fs.createCheckpoint(bg, ws, CheckpointOptions{Path: "other"}, CheckpointBeforeDelete)
	wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	_, err = io.WriteString(f, "content\n")
	must(t, err)
	must(t, f.Close())
	if e.read("projects/p/f.txt") != "the client's new content\n" {
		t.Fatal("the PUT did not commit")
	}
	noHolds(t, e, "after the PUT")
	if _, err := e.fs.GetCheckpoint(bg, ws, version); err != nil {
		t.Fatalf("the version was evicted while its upload streamed: %v", err)
	}
	_, err = e.fs.RestoreCheckpoint(bg, ws, version, "", RestoreOptions{})
	must(t, err)
	if e.read("projects/p/f.txt") != old {
		t.Fatal("what the PUT replaced was not restored")
	}
	noHolds(t, e, "after the restore")
	// Released and old: it is what goes now.
	e.write("projects/p/f.txt", "small\n")
	_, err = e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Path: "other"})
	must(t, err)
	if _, err := e.fs.GetCheckpoint(bg, ws, version); davfs.CodeOf(err) != davfs.CodeNotFound {
		t.Fatalf("the released old version was not pruned: %v", err)
	}
}

// The same for a keep DELETE: the version is held from before its
// capture is committed until the delete has finished.
func TestVersionHeldWhileItsDeleteRuns(t *testing.T) {
	var e *env
	var later func(time.Duration)
	armed := false
	var during error
	e, later, _ = holdEnv(t, func(op string, _ time.Duration, _ int64, err error) {
		if op != "create" || !armed || err != nil {
			return
		}
		armed = false
		later(2 * VersionMinAge)
		_, during = e.fs.CreateCheckpoint(bg, proj("p"), CheckpointOptions{Path: "other"})
	})
	old := ckfRandom("d", 6<<10)
	e.write("projects/p/d/f.txt", old)
	armed = true
	version, err := keepDelete(e, "d")
	must(t, err)
	wantErr(t, during, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	noHolds(t, e, "after the DELETE")
	if version == "" {
		t.Fatal("the keep DELETE kept nothing")
	}
	_, err = e.fs.RestoreCheckpoint(bg, proj("p"), version, "", RestoreOptions{})
	must(t, err)
	if e.read("projects/p/d/f.txt") != old {
		t.Fatal("what the DELETE removed was not restored")
	}
}

// No checkpoint evicts a version younger than VersionMinAge, not only a
// newer version: a manual checkpoint, or an automatic one (before a delete
// or restore), that only fits by evicting it fails with CHECKPOINT_LIMIT.
// Once the version is old enough, it is the first to go.
func TestVersionYoungNeverEvicted(t *testing.T) {
	e, later, old := holdEnv(t, nil)
	f, version := openKeepPut(t, e)
	_, err := io.WriteString(f, "v2\n")
	must(t, err)
	must(t, f.Close())
	ids, ws := []string{version}, proj("p")
	noHolds(t, e, "after the PUT")
	later(time.Minute)
	for _, reason := range []string{CheckpointManual, CheckpointBeforeDelete, CheckpointBeforeRestore} {
		_, err := e.fs.createCheckpoint(bg, ws, CheckpointOptions{Path: "other"}, reason)
		wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
		if !strings.Contains(err.Error(), "younger than") {
			t.Fatalf("%s: the refusal does not say why: %v", reason, err)
		}
		if _, err := e.fs.GetCheckpoint(bg, ws, ids[0]); err != nil {
			t.Fatalf("a %s checkpoint evicted a version a minute old: %v", reason, err)
		}
	}
	l, err := e.fs.ListCheckpoints(bg, ws)
	must(t, err)
	if len(l) != 1 {
		t.Fatalf("the refused checkpoints stayed: %+v", l)
	}
	_, err = e.fs.RestoreCheckpoint(bg, ws, ids[0], "f.txt", RestoreOptions{})
	must(t, err)
	if e.read("projects/p/f.txt") != old {
		t.Fatal("the version does not restore what the PUT replaced")
	}
	e.write("projects/p/f.txt", "small\n")
	later(VersionMinAge)
	_, err = e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Path: "other"})
	must(t, err)
	if _, err := e.fs.GetCheckpoint(bg, ws, ids[0]); davfs.CodeOf(err) != davfs.CodeNotFound {
		t.Fatalf("the old version was not pruned: %v", err)
	}
}

// Every path of a keep write ends its version's hold: a PUT committed,
// aborted, refused at commit, a version that does not fit, a DELETE done,
// refused for names a version cannot keep, or of empty directories only.
func TestVersionHoldReleasedOnEveryPath(t *testing.T) {
	e := ckfEnv(t, func(c *testConfig) {
		c.Checkpoints.MaxTotalBytes = 16 << 10
		c.Checkpoints.Automatic = true
	})
	put := func(rel, body string, abort bool) error {
		f, err := keepPut(e, rel)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(f, body); err != nil {
			f.Close()
			return err
		}
		if abort {
			return f.Abort(io.ErrUnexpectedEOF)
		}
		return f.Close()
	}
	del := func(rel string) error {
		_, err := keepDelete(e, rel)
		return err
	}
	e.write("projects/p/f.txt", "v1\n")
	must(t, put("f.txt", "v2\n", false))
	noHolds(t, e, "a committed PUT")
	if err := put("f.txt", "half", true); err == nil {
		t.Fatal("an aborted PUT committed")
	}
	noHolds(t, e, "an aborted PUT")

	f, err := keepPut(e, "f.txt")
	must(t, err)
	e.write("projects/p/f.txt", "the agent's v3\n") // after the version, before the commit
	_, err = io.WriteString(f, "client v3\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	wantErr(t, err, davfs.CodeAborted, davfs.ReasonRevisionMismatch)
	noHolds(t, e, "a PUT refused at commit")

	e.write("projects/p/big.txt", ckfRandom("big", 20<<10))
	wantErr(t, put("big.txt", "small\n", false), davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	wantErr(t, del("big.txt"), davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	noHolds(t, e, "a version too large")

	e.write("projects/p/d/x.txt", "x\n")
	must(t, del("d"))
	noHolds(t, e, "a DELETE")
	e.write("projects/p/g/.git/config", "[core]\n")
	e.write("projects/p/g/x.txt", "x\n")
	if err := del("g"); davfs.ReasonOf(err) != "PRECONDITION_REQUIRED" {
		t.Fatalf("keep DELETE of a directory with .git: %v", err)
	}
	noHolds(t, e, "a DELETE refused for .git")
	must(t, os.MkdirAll(e.projects+"/p/empty/inner", 0o755))
	must(t, del("empty"))
	noHolds(t, e, "a DELETE of empty directories")
}

// A failed PUT does not drop its version while another holds it (a
// restore reading it): the drop is skipped, and the version stays.
func TestVersionDropSkippedWhileHeld(t *testing.T) {
	e := ckfEnv(t, nil)
	ws := proj("p")
	e.write("projects/p/f.txt", "v1\n")
	f, version := openKeepPut(t, e)
	ids := []string{version}
	e.fs.ck.hold(ids[0]) // a restore reading it
	if err := f.Abort(io.ErrUnexpectedEOF); err == nil {
		t.Fatal("an aborted upload reported no error")
	}
	if _, err := e.fs.GetCheckpoint(bg, ws, ids[0]); err != nil {
		t.Fatalf("a held version was dropped: %v", err)
	}
	if !e.fs.ck.isBusy(ids[0]) {
		t.Fatal("the restore's hold was released by the PUT")
	}
	e.fs.ck.release(ids[0])
	noHolds(t, e, "after the restore")
}
