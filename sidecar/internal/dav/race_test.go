package dav_test

// Race test (issue 2): one goroutine keeps exchanging a directory with a
// symlink that points outside the root (renameat2 RENAME_EXCHANGE, so the
// name is always one or the other), while workers read, write, move, create
// and delete through davfs. Nothing outside the root may ever be read,
// written or removed: no returned byte is canary content, no listing shows
// an outside-only name, and the outside tree is byte-for-byte unchanged.
// Bounded by iterations AND time so a plain `go test` stays fast.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
	"github.com/agentworkspace/files/sidecar/internal/dav"
	"golang.org/x/sys/unix"
)

const (
	secRaceWorkers    = 3
	secRaceIterations = 4000 // per worker
	secRaceTimeCap    = 800 * time.Millisecond
)

type secRaceScenario struct {
	name    string
	layout  []string
	ws      davfs.Workspace
	prefix  string // workspace path of the swapped dir ("" = the project itself)
	swapA   string // host path (rel to base) of the real dir
	swapB   string // host path of the symlink
	outside string // host path of the canary dir the symlink points at
}

func secRaceScenarios() []secRaceScenario {
	return []secRaceScenario{
		{
			name: "subdirectory",
			layout: []string{
				"projects/p/d/f.txt", "projects/p/d/x.txt",
				"projects/p/swap => ../../outside/d",
				"outside/d/f.txt", "outside/d/x.txt", "outside/d/g.txt", "outside/d/only-outside.txt",
				"outside/d/sub0/", "outside/d/w0.txt",
			},
			ws: sectree.Project("p"), prefix: "d/",
			swapA: "projects/p/d", swapB: "projects/p/swap", outside: "outside/d",
		},
		{
			name: "project directory",
			layout: []string{
				"projects/r/f.txt", "projects/r/x.txt",
				"projects/rswap => ../outside/r",
				"outside/r/f.txt", "outside/r/x.txt", "outside/r/g.txt", "outside/r/only-outside.txt",
			},
			ws: sectree.Project("r"), prefix: "",
			swapA: "projects/r", swapB: "projects/rswap", outside: "outside/r",
		},
		{
			// The name f.txt keeps trading places with a hard link to
			// CODEX_HOME/auth.json: its content must never be served.
			name: "hard link swapped in",
			layout: []string{
				"projects/p/d/f.txt", "projects/p/d/x.txt",
				"projects/p/d/hl == codex/auth.json",
			},
			ws: sectree.Project("p"), prefix: "d/",
			swapA: "projects/p/d/f.txt", swapB: "projects/p/d/hl", outside: "codex",
		},
		{
			name: "global skills subdirectory",
			layout: []string{
				"codex/skills/d/f.txt", "codex/skills/d/x.txt",
				"codex/skills/swap => ..",
				"codex/f.txt", "codex/x.txt", "codex/g.txt", "codex/only-outside.txt",
			},
			ws: sectree.Global, prefix: "skills/d/",
			swapA: "codex/skills/d", swapB: "codex/skills/swap", outside: "codex",
		},
	}
}

func TestSecRaceSymlinkSwap(t *testing.T) {
	sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
		for _, sc := range secRaceScenarios() {
			t.Run(sc.name, func(t *testing.T) { secRunRace(t, sc, tweak) })
		}
	})
}

func secRunRace(t *testing.T, sc secRaceScenario, tweak func(*davfs.Config)) {
	e := sectree.NewEnv(t, "", sc.layout, tweak)
	outsideBefore := sectree.Snapshot(t, filepath.Join(e.Base, "outside"))
	codexBefore := sectree.Snapshot(t, e.Codex())
	qBefore := sectree.Snapshot(t, filepath.Join(e.Projects(), "q"))

	ctx := context.Background()
	stop := make(chan struct{})
	var swaps atomic.Int64
	var swapErr atomic.Value
	var swapWG sync.WaitGroup
	swapWG.Add(1)
	go func() {
		defer swapWG.Done()
		a, b := filepath.Join(e.Base, sc.swapA), filepath.Join(e.Base, sc.swapB)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				swapErr.Store(err)
				return
			}
			swaps.Add(1)
		}
	}()

	var mu sync.Mutex
	stats := map[string]int{}
	count := func(k string) {
		mu.Lock()
		stats[k]++
		mu.Unlock()
	}
	deadline := time.Now().Add(secRaceTimeCap)
	var wg sync.WaitGroup
	for w := range secRaceWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < secRaceIterations && time.Now().Before(deadline); i++ {
				op, err := secRaceOp(ctx, t, e, sc, w, i)
				if err != nil {
					sectree.CheckDavErr(t, op, err, e.Base)
					count(op + " " + string(davfs.ReasonOf(err)))
				} else {
					count(op + " ok")
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	swapWG.Wait()
	if err, _ := swapErr.Load().(error); err != nil {
		t.Fatalf("swapper: %v", err)
	}

	var keys []string
	total := 0
	for k, v := range stats {
		keys = append(keys, fmt.Sprintf("%s=%d", k, v))
		total += v
	}
	sort.Strings(keys)
	t.Logf("%d swaps, %d operations: %s", swaps.Load(), total, strings.Join(keys, " "))
	if swaps.Load() < 100 {
		t.Errorf("only %d swaps happened; the race was not exercised", swaps.Load())
	}
	for _, op := range []string{"ReadFile", "ListEntries"} {
		if stats[op+" ok"] == 0 {
			t.Errorf("no %s ever succeeded: the test exercised nothing (stats %v)", op, keys)
		}
	}
	if stats["UpdateFile ok"]+stats["WriteStream ok"]+stats["CreateEntry ok"] == 0 {
		t.Errorf("no write ever succeeded: the test exercised nothing (stats %v)", keys)
	}

	for _, d := range sectree.Diff(outsideBefore, sectree.Snapshot(t, filepath.Join(e.Base, "outside")), nil) {
		t.Errorf("outside the roots changed: %s", d)
	}
	skipGlobal := func(rel string) bool { return sectree.Under(rel, "skills") || rel == "AGENTS.md" }
	for _, d := range sectree.Diff(codexBefore, sectree.Snapshot(t, e.Codex()), skipGlobal) {
		t.Errorf("CODEX_HOME outside the Global allowlist changed: %s", d)
	}
	for _, d := range sectree.Diff(qBefore, sectree.Snapshot(t, filepath.Join(e.Projects(), "q")), nil) {
		t.Errorf("sibling project changed: %s", d)
	}
}

// secRaceOp runs operation number i of worker w and checks what it returned.
func secRaceOp(ctx context.Context, t *testing.T, e *sectree.Env, sc secRaceScenario, w, i int) (string, error) {
	p := func(name string) string { return sc.prefix + name }
	dir := strings.TrimSuffix(sc.prefix, "/")
	rev := func(name string) string { return sectree.Rev(ctx, e, sc.ws, p(name)) }
	body := []byte(fmt.Sprintf("worker %d iteration %d\n", w, i))
	switch i % 13 {
	case 0:
		var f davfs.File
		err := sectree.Try(func() (err error) { f, err = e.FS.ReadFile(ctx, sc.ws, p("f.txt")); return err })
		sectree.NoSecret(t, "ReadFile", f.Content)
		return "ReadFile", err
	case 1:
		err := sectree.Try(func() error {
			f, _, err := e.FS.OpenRead(ctx, sc.ws, p("x.txt"))
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(f)
			_ = f.Close()
			sectree.NoSecret(t, "OpenRead", b)
			return nil
		})
		return "OpenRead", err
	case 2:
		var pg davfs.Page
		err := sectree.Try(func() (err error) { pg, err = e.FS.ListEntries(ctx, sc.ws, dir, 0, ""); return err })
		for _, en := range pg.Entries {
			if en.Name == "only-outside.txt" {
				t.Errorf("ListEntries showed a name that exists only outside the root")
			}
		}
		return "ListEntries", err
	case 3:
		var es []davfs.Entry
		err := sectree.Try(func() (err error) { es, err = e.FS.ReadDir(ctx, sc.ws, dir); return err })
		for _, en := range es {
			if en.Name == "only-outside.txt" {
				t.Errorf("ReadDir showed a name that exists only outside the root")
			}
		}
		return "ReadDir", err
	case 4:
		r := rev("f.txt")
		return "UpdateFile", sectree.Try(func() error { _, err := e.FS.UpdateFile(ctx, sc.ws, p("f.txt"), body, r); return err })
	case 5:
		return "WriteStream", sectree.Try(func() error {
			_, _, err := e.FS.WriteStream(ctx, sc.ws, p(fmt.Sprintf("w%d.txt", w)), strings.NewReader(string(body)), 1<<20, davfs.Precondition{})
			return err
		})
	case 6:
		src, dst := "x.txt", "g.txt"
		if (i/11)%2 == 1 {
			src, dst = dst, src
		}
		r := rev(src)
		return "MoveEntry", sectree.Try(func() error { _, err := e.FS.MoveEntry(ctx, sc.ws, p(src), p(dst), r); return err })
	case 7:
		r := rev("g.txt")
		return "DeleteEntry", sectree.Try(func() error { return e.FS.DeleteEntry(ctx, sc.ws, p("g.txt"), r, false) })
	case 8:
		return "CreateEntry", sectree.Try(func() error {
			_, err := e.FS.CreateEntry(ctx, sc.ws, dir, fmt.Sprintf("sub%d", w), davfs.TypeDirectory)
			return err
		})
	case 9:
		r := rev(fmt.Sprintf("sub%d", w))
		return "DeleteEntry", sectree.Try(func() error { return e.FS.DeleteEntry(ctx, sc.ws, p(fmt.Sprintf("sub%d", w)), r, true) })
	case 11:
		return "WebDAV.Read", sectree.Try(func() error {
			fh, err := dav.NewFileSystem(e.FS, nil, dav.RequestState{}).OpenFile(ctx, secDavName(sc.ws, p("f.txt")), os.O_RDONLY, 0)
			if err != nil {
				return secDavToDav(err)
			}
			defer fh.Close()
			b, err := io.ReadAll(fh)
			sectree.NoSecret(t, "WebDAV read", b)
			return secDavToDav(err)
		})
	case 12:
		return "WebDAV.Write", sectree.Try(func() error {
			fh, err := dav.NewFileSystem(e.FS, nil, dav.RequestState{}).OpenFile(ctx, secDavName(sc.ws, p(fmt.Sprintf("v%d.txt", w))), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return secDavToDav(err)
			}
			_, werr := fh.Write(body)
			if cerr := fh.Close(); werr == nil {
				werr = cerr
			}
			return secDavToDav(werr)
		})
	default:
		var en davfs.Entry
		err := sectree.Try(func() (err error) { en, err = e.FS.Stat(ctx, sc.ws, p("only-outside.txt")); return err })
		if err == nil {
			t.Errorf("Stat found %q, which exists only outside the root", en.Path)
		}
		return "Stat", err
	}
}

// TestSecRaceRecursiveDelete: the host keeps rebuilding p/t with a subdir
// s that it exchanges with a symlink to an outside canary dir, while
// workers recursively delete (and move then delete) t through davfs. The
// recursive walk must never follow the link: the canary dir survives.
func TestSecRaceRecursiveDelete(t *testing.T) {
	sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
		layout := []string{"outside/t/keep1.txt", "outside/t/deep/keep2.txt", "outside/t/s/keep3.txt"}
		e := sectree.NewEnv(t, "", layout, tweak)
		outsideBefore := sectree.Snapshot(t, filepath.Join(e.Base, "outside"))
		tdir := filepath.Join(e.Projects(), "p", "t")
		rebuild := func() {
			sectree.Build(t, e.Base, []string{"projects/p/t/s/f1.txt", "projects/p/t/s/sub/f2.txt", "projects/p/t/top.txt"})
			_ = unix.Symlink("../../../outside/t", filepath.Join(tdir, "link"))
		}
		rebuild()

		ctx := context.Background()
		P := sectree.Project("p")
		stop := make(chan struct{})
		var swaps, rebuilds atomic.Int64
		var swapWG sync.WaitGroup
		swapWG.Add(1)
		go func() {
			defer swapWG.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(tdir, "s"), unix.AT_FDCWD, filepath.Join(tdir, "link"), unix.RENAME_EXCHANGE)
				if err == nil {
					swaps.Add(1)
					continue
				}
				// davfs removed (part of) the tree: put it back.
				_ = os.Remove(filepath.Join(tdir, "link"))
				if fi, err := os.Lstat(filepath.Join(tdir, "s")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					_ = os.Remove(filepath.Join(tdir, "s"))
				}
				secBuildQuiet(e.Base, []string{"projects/p/t/s/f1.txt", "projects/p/t/s/sub/f2.txt", "projects/p/t/top.txt"})
				_ = unix.Symlink("../../../outside/t", filepath.Join(tdir, "link"))
				rebuilds.Add(1)
			}
		}()

		var ok, failed atomic.Int64
		deadline := time.Now().Add(secRaceTimeCap)
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < secRaceIterations && time.Now().Before(deadline); i++ {
					var err error
					if (i+w)%2 == 0 {
						rev := sectree.Rev(ctx, e, P, "t")
						err = sectree.Try(func() error { return e.FS.DeleteEntry(ctx, P, "t", rev, true) })
					} else {
						dst := fmt.Sprintf("moved%d", w)
						rev := sectree.Rev(ctx, e, P, "t")
						err = sectree.Try(func() error { _, err := e.FS.MoveEntry(ctx, P, "t", dst, rev); return err })
						if err == nil {
							rev2 := sectree.Rev(ctx, e, P, dst)
							err = sectree.Try(func() error { return e.FS.DeleteEntry(ctx, P, dst, rev2, true) })
						}
					}
					if err != nil {
						sectree.CheckDavErr(t, "DeleteEntry/MoveEntry", err, e.Base)
						failed.Add(1)
					} else {
						ok.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		close(stop)
		swapWG.Wait()
		t.Logf("%d swaps, %d rebuilds, %d successful deletes/moves, %d refused", swaps.Load(), rebuilds.Load(), ok.Load(), failed.Load())
		if ok.Load() == 0 {
			t.Errorf("no recursive delete ever succeeded: the race was not exercised")
		}
		for _, d := range sectree.Diff(outsideBefore, sectree.Snapshot(t, filepath.Join(e.Base, "outside")), nil) {
			t.Errorf("outside the root changed: %s", d)
		}
	})
}

// secBuildQuiet is sectree.Build without failing (for background goroutines).
func secBuildQuiet(base string, files []string) {
	for _, f := range files {
		p := filepath.Join(base, f)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.WriteFile(p, sectree.Content(f), 0o644)
	}
}

// TestSecSwapDuringUpload: an upload (WriteStream, or a webdav.File
// opened for writing) is streaming into its temp file when its directory
// is renamed away and replaced by a symlink to an outside canary dir. The
// commit must land in the original directory (the fd davfs resolved) or
// fail; it must never create or replace anything outside, and no temp file
// may stay behind.
func TestSecSwapDuringUpload(t *testing.T) {
	sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
		for _, via := range []string{"WriteStream", "WebDAV"} {
			for _, target := range []string{"d/new.txt", "d/f.txt"} {
				t.Run(via+" "+target, func(t *testing.T) { secSwapDuringUpload(t, tweak, via, target) })
			}
		}
	})
}

func secSwapDuringUpload(t *testing.T, tweak func(*davfs.Config), via, target string) {
	e := sectree.NewEnv(t, "", []string{"projects/p/d/f.txt", "outside/d/f.txt", "outside/d/keep.txt"}, tweak)
	outsideBefore := sectree.Snapshot(t, filepath.Join(e.Base, "outside"))
	ctx := context.Background()
	P := sectree.Project("p")
	pre := davfs.Precondition{}
	if target == "d/f.txt" {
		pre.IfMatch = sectree.Rev(ctx, e, P, target)
	} else {
		pre.IfNoneMatch = true
	}

	var write func([]byte) error
	var finish func() error
	switch via {
	case "WriteStream":
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- sectree.Try(func() error {
				_, _, err := e.FS.WriteStream(ctx, P, target, pr, 1<<20, pre)
				return err
			})
		}()
		write = func(b []byte) error { _, err := pw.Write(b); return err }
		finish = func() error {
			_ = pw.Close()
			select {
			case err := <-done:
				return err
			case <-time.After(10 * time.Second):
				t.Fatal("WriteStream did not return")
				return nil
			}
		}
	default:
		var fh interface {
			io.Writer
			io.Closer
		}
		err := sectree.Try(func() (err error) {
			fh, err = dav.NewFileSystem(e.FS, nil, wdPre(pre)).OpenFile(ctx, secDavName(P, target), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			return err
		})
		if err != nil {
			t.Fatalf("WebDAV OpenFile: %v", err)
		}
		write = func(b []byte) error { _, err := fh.Write(b); return err }
		finish = func() error { return sectree.Try(fh.Close) }
	}

	if err := write([]byte("first half ")); err != nil {
		t.Fatalf("upload ended early: %v", err)
	}
	d := filepath.Join(e.Projects(), "p", "d")
	if err := os.Rename(d, d+"-moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside/d", d); err != nil {
		t.Fatal(err)
	}
	werr := write([]byte("second half\n"))
	err := finish()
	if err == nil {
		err = werr
	}
	if via == "WebDAV" {
		err = secDavToDav(err)
	}
	sectree.CheckDavErr(t, via, err, e.Base)
	t.Logf("%s after the swap: %v", via, err)
	for _, df := range sectree.Diff(outsideBefore, sectree.Snapshot(t, filepath.Join(e.Base, "outside")), nil) {
		t.Errorf("upload wrote outside the root: %s", df)
	}
	for _, n := range sectree.DirNames(t, d+"-moved") {
		if n != "f.txt" && !(err == nil && n == "new.txt") {
			t.Errorf("the original directory holds %q after the upload (a temp file left behind?)", n)
		}
	}
}

// secDavToDav turns a webdav.FileSystem error into something the race
// statistics can classify: the davfs *Error inside when there is one,
// else a synthetic davfs error naming the fs sentinel.
func secDavToDav(err error) error {
	if err == nil {
		return nil
	}
	var de *davfs.Error
	if errors.As(err, &de) {
		return de
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err // not a PathError: sectree.CheckDavErr reports it
	}
	code, reason := davfs.CodeInternal, davfs.Reason("WEBDAV_"+strings.ToUpper(strings.ReplaceAll(pe.Err.Error(), " ", "_")))
	switch {
	case os.IsNotExist(err):
		code = davfs.CodeNotFound
	case os.IsPermission(err):
		code = davfs.CodePermissionDenied
	case os.IsExist(err):
		code = davfs.CodeAlreadyExists
	}
	return &davfs.Error{Code: code, Reason: reason, Message: "webdav: " + pe.Err.Error()}
}
