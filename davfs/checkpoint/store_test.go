package checkpoint

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// The checkpoint store: tampered manifests, the store's placement, limits
// that evict before failing, a damaged manifest jamming collection, the
// manifest encoding, the entry count limit, and checkpoints that cannot be
// read while a collection lists the store.

// ckfEnv is an env with a store beside the roots (<tmp>/store).
func ckfEnv(t *testing.T, mod func(*testConfig)) *env {
	t.Helper()
	return newEnv(t, func(c *testConfig) {
		c.Checkpoints = Config{Dir: filepath.Join(filepath.Dir(c.ProjectsRoot), "store")}
		if mod != nil {
			mod(c)
		}
	})
}

// ckfTree records every name under dir (relative path → mode and content).
func ckfTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	must(t, err)
	return out
}

func ckfSame(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	for k, v := range a {
		if b[k] != v {
			t.Fatalf("%s: %s changed: %q → %q", what, k, v, b[k])
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Fatalf("%s: %s appeared", what, k)
		}
	}
}

// ckfManifestPath is the host path of a checkpoint's manifest.
func ckfManifestPath(e *env, ws davfs.Workspace, id string) string {
	return filepath.Join(e.dir, "store", "ws", ckWorkspaceKey(ws), id+".manifest")
}

// ckfTamper rewrites a stored manifest through edit and drops the cache.
func ckfTamper(t *testing.T, e *env, ws davfs.Workspace, id string, edit func(m *ckManifest)) {
	t.Helper()
	p := ckfManifestPath(e, ws, id)
	b, err := os.ReadFile(p)
	must(t, err)
	var m ckManifest
	must(t, json.Unmarshal(b, &m))
	edit(&m)
	type plain ckManifest
	b, err = json.Marshal((*plain)(&m))
	must(t, err)
	must(t, os.WriteFile(p, b, 0o600))
	e.fs.ck.cacheMu.Lock()
	e.fs.ck.manifests = nil
	e.fs.ck.cacheMu.Unlock()
}

// noPanic runs fn, turning a panic into a test failure with a message.
func noPanic(t *testing.T, what string, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			err = fmt.Errorf("panic")
		}
	}()
	return fn()
}

// A tampered manifest is refused when it is loaded: compare and restore
// fail with DataLoss/CHECKPOINT_DAMAGED and the workspace is
// not touched (before the fix an empty path panicked in wsPath.parent
// after the restore's removals had run).
func TestCheckpointTamperedManifestRefused(t *testing.T) {
	hashOf := func(m *ckManifest, p string) string {
		for _, e := range m.Entries {
			if e.Path == p {
				return e.Hash
			}
		}
		return ""
	}
	insert := func(m *ckManifest, e ckEntry) {
		m.Entries = append(m.Entries, e)
		for i := len(m.Entries) - 1; i > 0 && m.Entries[i].Path < m.Entries[i-1].Path; i-- {
			m.Entries[i], m.Entries[i-1] = m.Entries[i-1], m.Entries[i]
		}
	}
	cases := map[string]func(m *ckManifest){
		"empty dir path (front)": func(m *ckManifest) {
			m.Entries = append([]ckEntry{{Path: "", Dir: true}}, m.Entries...)
		},
		"empty dir path (appended)": func(m *ckManifest) { m.Entries = append(m.Entries, ckEntry{Path: "", Dir: true}) },
		"dot-dot": func(m *ckManifest) {
			m.Entries = append([]ckEntry{{Path: "../x", Mode: 0o644, Hash: hashOf(m, "a.txt")}}, m.Entries...)
		},
		"dot segment": func(m *ckManifest) { insert(m, ckEntry{Path: "d/./y", Mode: 0o644, Hash: hashOf(m, "a.txt")}) },
		"absolute": func(m *ckManifest) {
			m.Entries = append([]ckEntry{{Path: "/abs", Mode: 0o644, Hash: hashOf(m, "a.txt")}}, m.Entries...)
		},
		"empty segment": func(m *ckManifest) { insert(m, ckEntry{Path: "d//y", Mode: 0o644, Hash: hashOf(m, "a.txt")}) },
		"NUL":           func(m *ckManifest) { insert(m, ckEntry{Path: "d/y\x00z", Mode: 0o644, Hash: hashOf(m, "a.txt")}) },
		"denied name": func(m *ckManifest) {
			insert(m, ckEntry{Path: "node_modules", Dir: true, Mode: 0o755})
			insert(m, ckEntry{Path: "node_modules/x", Mode: 0o644, Hash: hashOf(m, "a.txt")})
		},
		".git": func(m *ckManifest) { insert(m, ckEntry{Path: ".git", Dir: true, Mode: 0o755}) },
		"reserved temp name": func(m *ckManifest) {
			insert(m, ckEntry{Path: fdio.TempPrefix + "x", Mode: 0o644, Hash: hashOf(m, "a.txt")})
		},
		"too deep": func(m *ckManifest) {
			insert(m, ckEntry{Path: strings.Repeat("d/", 200) + "x", Mode: 0o644, Hash: hashOf(m, "a.txt")})
		},
		"duplicate": func(m *ckManifest) { insert(m, m.Entries[len(m.Entries)-1]) },
		"unsorted": func(m *ckManifest) {
			n := len(m.Entries)
			m.Entries[0], m.Entries[n-1] = m.Entries[n-1], m.Entries[0]
		},
		"bad hash": func(m *ckManifest) {
			for i := range m.Entries {
				if m.Entries[i].Path == "a.txt" {
					m.Entries[i].Hash = "../../../x"
				}
			}
		},
		"upper-case hash": func(m *ckManifest) {
			for i := range m.Entries {
				if m.Entries[i].Path == "a.txt" {
					m.Entries[i].Hash = strings.ToUpper(m.Entries[i].Hash)
				}
			}
		},
		"bad pack": func(m *ckManifest) {
			for i := range m.Entries {
				if m.Entries[i].Path == "a.txt" {
					m.Entries[i].Pack = "../x"
				}
			}
		},
		"negative size": func(m *ckManifest) {
			for i := range m.Entries {
				if m.Entries[i].Path == "a.txt" {
					m.Entries[i].Size = -1
				}
			}
		},
		"file under a file": func(m *ckManifest) {
			insert(m, ckEntry{Path: "a.txt/x", Mode: 0o644, Hash: hashOf(m, "a.txt")})
		},
		"parent missing": func(m *ckManifest) {
			insert(m, ckEntry{Path: "nodir/x", Mode: 0o644, Hash: hashOf(m, "a.txt")})
		},
		"bad mode": func(m *ckManifest) {
			for i := range m.Entries {
				if m.Entries[i].Path == "a.txt" {
					m.Entries[i].Mode = 0o170644
				}
			}
		},
		"unknown version": func(m *ckManifest) { m.Version = 9 },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			e := ckfEnv(t, nil)
			ws := proj("p")
			e.write("projects/p/a.txt", "A1")
			e.write("projects/p/d/b.txt", "B1")
			c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
			must(t, err)
			// The workspace moves on: a restore would remove, rewrite and
			// recreate.
			e.write("projects/p/a.txt", "A2")
			must(t, os.Remove(filepath.Join(e.projects, "p/d/b.txt")))
			e.write("projects/p/new/c.txt", "C")
			ckfTamper(t, e, ws, c.ID, edit)
			before := ckfTree(t, e.projects)

			err = noPanic(t, "compare", func() error {
				_, err := e.fs.CompareCheckpoint(bg, ws, c.ID, "", "", false)
				return err
			})
			wantErr(t, err, davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged)
			err = noPanic(t, "restore", func() error {
				_, err := e.fs.RestoreCheckpoint(bg, ws, c.ID, "", RestoreOptions{})
				return err
			})
			wantErr(t, err, davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged)
			ckfSame(t, "after a refused restore", before, ckfTree(t, e.projects))
			e.checkCanaries()
			// It can still be deleted.
			must(t, e.fs.DeleteCheckpoint(bg, ws, c.ID))
		})
	}
}

// What a capture writes passes the validation, for a project, a part of
// one and GLOBAL, through restore after the cache is dropped.
func TestCheckpointValidManifestsLoad(t *testing.T) {
	e := ckfEnv(t, nil)
	ws := proj("p")
	e.write("projects/p/a.txt", "A")
	e.write("projects/p/a-b/x", "X")
	e.write("projects/p/a/b/c.txt", "C")
	e.write("projects/p/node_modules/skip", "S")
	e.write("codex/skills/s/SKILL.md", "S")
	e.write("codex/AGENTS.md", "AG")
	for _, tc := range []struct {
		ws   davfs.Workspace
		path string
	}{{ws, ""}, {ws, "a"}, {ws, "a/b/c.txt"}, {global, ""}, {global, "skills/s"}} {
		c, err := e.fs.CreateCheckpoint(bg, tc.ws, CheckpointOptions{Path: tc.path})
		must(t, err)
		e.fs.ck.cacheMu.Lock()
		e.fs.ck.manifests = nil
		e.fs.ck.cacheMu.Unlock()
		if _, err := e.fs.CompareCheckpoint(bg, tc.ws, c.ID, "", "", false); err != nil {
			t.Fatalf("compare %v %q: %v", tc.ws, tc.path, err)
		}
		if _, err := e.fs.RestoreCheckpoint(bg, tc.ws, c.ID, "", RestoreOptions{}); err != nil {
			t.Fatalf("restore %v %q: %v", tc.ws, tc.path, err)
		}
	}
}

// ckfNoHostPath fails when err or any cause in its chain names base.
func ckfNoHostPath(t *testing.T, err error, base string) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), base) {
			t.Fatalf("error names a host path: %q", e.Error())
		}
	}
}

// ckfOpen opens davfs over e's roots with the store at dir.
func ckfOpen(e *env, dir string) (*testFS, error) {
	f, err := openTest(testConfig{Config: davfs.Config{ProjectsRoot: e.projects, CodexHome: e.codex, DeniedNames: []string{"node_modules"}}, Checkpoints: Config{Dir: dir}})
	if err == nil {
		e.t.Cleanup(func() { f.Close() })
	}
	return f, err
}

// ckfUnusable opens davfs with the store at dir, which must be refused
// without failing the start: the files are served, and CheckpointsErr,
// OpenCheckpoints and a checkpoint call all answer
// Unavailable/CHECKPOINTS_UNAVAILABLE with a message naming no host path.
func ckfUnusable(e *env, dir string) {
	e.t.Helper()
	f, err := ckfOpen(e, dir)
	if err != nil {
		e.t.Fatalf("a store that cannot be used failed the start: %v", err)
	}
	if _, err := f.ListProjects(bg, 0, ""); err != nil {
		e.t.Fatalf("files with a store that cannot be used: %v", err)
	}
	_, cerr := f.ListCheckpoints(bg, proj("p"))
	for _, err := range []error{f.CheckpointsErr(), f.OpenCheckpoints(), cerr} {
		wantErr(e.t, err, davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable)
		ckfNoHostPath(e.t, err, e.dir)
	}
}

// ckfOpenAndCreate opens davfs with the store at dir and checkpoints
// project p: the first error of either.
func ckfOpenAndCreate(e *env, dir string) error {
	f, err := ckfOpen(e, dir)
	if err != nil {
		return err
	}
	_, err = f.CreateCheckpoint(bg, proj("p"), CheckpointOptions{})
	return err
}

// The store's directory is reached from "/" one component at a time
// without following a symlink: a symlink among its parents (here to a
// canary directory inside the test's temp dir) is refused, whether the
// store exists or would be created, and nothing is created through it.
// Before the fix os.MkdirAll followed it and only the last component was
// opened with O_NOFOLLOW.
func TestCheckpointStoreParentSymlinkRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.mkdir("outside/real")
	e.symlink("outside/real", "link")
	// Missing store: the start or the first checkpoint must refuse.
	e.write("projects/p/a.txt", "A")
	err := ckfOpenAndCreate(e, filepath.Join(e.dir, "link", "store"))
	wantErr(t, err, davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable)
	ckfNoHostPath(t, err, e.dir)
	if e.exists("outside/real/store") {
		t.Fatal("the store was created through the symlink")
	}
	// Existing store behind the link: the start succeeds, the store is
	// refused (issue #23).
	e.mkdir("outside/real/store2")
	ckfUnusable(e, filepath.Join(e.dir, "link", "store2"))
	// The store itself a symlink.
	e.symlink("outside/real/store2", "store3")
	ckfUnusable(e, filepath.Join(e.dir, "store3"))
	e.checkCanaries()
}

// A store that cannot be created (a parent is a file) fails without the
// host path in the error or its causes (before: os.MkdirAll's PathError).
func TestCheckpointStoreErrorsNameNoPath(t *testing.T) {
	e := newEnv(t, nil)
	e.write("outside/file", "F")
	e.write("projects/p/a.txt", "A")
	err := ckfOpenAndCreate(e, filepath.Join(e.dir, "outside", "file", "store"))
	wantErr(t, err, davfs.CodeUnavailable, davfs.ReasonCheckpointsUnavailable)
	ckfNoHostPath(t, err, e.dir)
}

// An existing non-empty directory that is not a store is never taken
// over: opening it would have emptied its tmp/ and collection its
// objects/. An empty one becomes a store (marker written); a store of the
// previous version, without the marker, is recognised by its layout.
func TestCheckpointStoreForeignDirRefused(t *testing.T) {
	e := newEnv(t, nil)
	for _, rel := range []string{"outside/q/tmp/x", "outside/q/objects/ab/cd", "outside/q/keep.txt"} {
		e.write(rel, "KEEP")
	}
	before := ckfTree(t, filepath.Join(e.dir, "outside"))
	ckfUnusable(e, filepath.Join(e.dir, "outside", "q"))
	ckfSame(t, "a refused store", before, ckfTree(t, filepath.Join(e.dir, "outside")))

	// The same as a direct child of the projects root: an existing project.
	for _, rel := range []string{"projects/q/tmp/x", "projects/q/objects/ab/cd", "projects/q/src/main.go"} {
		e.write(rel, "KEEP")
	}
	beforeQ := ckfTree(t, e.projects)
	ckfUnusable(e, filepath.Join(e.projects, "q"))
	ckfSame(t, "a project refused as the store", beforeQ, ckfTree(t, e.projects))

	// Only the layout dirs, but one of them is missing, and a stray file:
	// not a store either.
	e.mkdir("outside/r/objects")
	e.mkdir("outside/r/ws")
	e.write("outside/r/tmp", "a file, not the tmp dir")
	ckfUnusable(e, filepath.Join(e.dir, "outside", "r"))

	// An empty directory becomes a store.
	e.mkdir("outside/empty")
	f, err := ckfOpen(e, filepath.Join(e.dir, "outside", "empty"))
	must(t, err)
	must(t, f.CheckpointsErr())
	e.write("projects/p/a.txt", "A")
	_, err = f.CreateCheckpoint(bg, proj("p"), CheckpointOptions{})
	must(t, err)
	if !e.exists("outside/empty/" + storeMarker) {
		t.Fatal("no marker in a new store")
	}
	f.Close()
	_, err = ckfOpen(e, filepath.Join(e.dir, "outside", "empty"))
	must(t, err)

	// A previous version's store (no marker) is recognised and marked.
	for _, d := range []string{"objects/ab", "ws/g", "tmp", "packs"} {
		e.mkdir("outside/old/" + d)
	}
	_, err = ckfOpen(e, filepath.Join(e.dir, "outside", "old"))
	must(t, err)
	if !e.exists("outside/old/" + storeMarker) {
		t.Fatal("an older store was not marked")
	}
	e.checkCanaries()
}

// ckfRandom is n bytes no other call returns (seeded by tag).
func ckfRandom(tag string, n int) string {
	b := make([]byte, 0, n+64)
	for i := 0; len(b) < n; i++ {
		h := sha256Sum(fmt.Sprintf("%s-%d", tag, i))
		b = append(b, h[:]...)
	}
	return string(b[:n])
}

// A checkpoint that cannot fit even after every prune evicts nothing:
// only it goes. Here the new checkpoint shares a 60,000-byte object with
// another project's manual checkpoint and adds 60,000 bytes of its own
// (its new bytes alone fit the 100,000-byte limit, the whole does not);
// before the fix the other project's checkpoint was deleted first, then
// the create failed anyway.
func TestCheckpointLimitEvictsNothingWhenItCannotFit(t *testing.T) {
	e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxTotalBytes = 100_000 })
	shared := ckfRandom("shared", 60_000)
	e.write("projects/b/x.bin", shared)
	cb, err := e.fs.CreateCheckpoint(bg, proj("b"), CheckpointOptions{Label: "keep me"})
	must(t, err)
	e.write("projects/a/x.bin", shared)
	e.write("projects/a/y.bin", ckfRandom("own", 60_000))
	_, err = e.fs.CreateCheckpoint(bg, proj("a"), CheckpointOptions{})
	wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	if _, err := e.fs.GetCheckpoint(bg, proj("b"), cb.ID); err != nil {
		t.Fatalf("another project's checkpoint was evicted by a create that failed: %v", err)
	}
	if l, err := e.fs.ListCheckpoints(bg, proj("a")); err != nil || len(l) != 0 {
		t.Fatalf("the failed checkpoint stayed: %v %v", l, err)
	}
	if st, err := e.fs.CheckpointStats(); err != nil || st.Bytes != 60_000 || st.Checkpoints != 1 {
		t.Fatalf("stats after the failed create = %+v, %v (want b's 60,000 bytes only)", st, err)
	}
	// b's checkpoint is whole.
	must(t, os.Remove(filepath.Join(e.projects, "b/x.bin")))
	_, err = e.fs.RestoreCheckpoint(bg, proj("b"), cb.ID, "", RestoreOptions{})
	must(t, err)
	if e.read("projects/b/x.bin") != shared {
		t.Fatal("b restored wrong")
	}
}

// Over the count limit, the workspace's automatic checkpoints go before
// its manual ones, however old; over the byte limit too, across the store.
func TestCheckpointLimitPrunesAutomaticFirst(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxPerWorkspace = 2 })
		ws := proj("p")
		e.write("projects/p/a.txt", "1")
		m1, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Label: "m1"})
		must(t, err)
		e.write("projects/p/a.txt", "2")
		_, err = e.fs.createCheckpoint(bg, ws, CheckpointOptions{}, CheckpointBeforeDelete)
		must(t, err)
		e.write("projects/p/a.txt", "3")
		m2, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Label: "m2"})
		must(t, err)
		l, err := e.fs.ListCheckpoints(bg, ws)
		must(t, err)
		if len(l) != 2 || l[0].ID != m2.ID || l[1].ID != m1.ID {
			t.Fatalf("kept %+v, want the two manual ones", l)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxTotalBytes = 100_000 })
		e.write("projects/m/x.bin", ckfRandom("m", 40_000))
		cm, err := e.fs.CreateCheckpoint(bg, proj("m"), CheckpointOptions{})
		must(t, err)
		e.write("projects/q/x.bin", ckfRandom("q", 40_000))
		cq, err := e.fs.createCheckpoint(bg, proj("q"), CheckpointOptions{}, CheckpointBeforeProjectDelete)
		must(t, err)
		e.write("projects/n/x.bin", ckfRandom("n", 40_000))
		_, err = e.fs.CreateCheckpoint(bg, proj("n"), CheckpointOptions{})
		must(t, err)
		if _, err := e.fs.GetCheckpoint(bg, proj("m"), cm.ID); err != nil {
			t.Fatalf("the older manual checkpoint was pruned: %v", err)
		}
		if _, err := e.fs.GetCheckpoint(bg, proj("q"), cq.ID); davfs.CodeOf(err) != davfs.CodeNotFound {
			t.Fatalf("the automatic checkpoint was kept: %v", err)
		}
	})
}

func sha256Sum(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// One damaged or oversized manifest does not jam the store: deletes and
// creates at the count limit of other workspaces go on (before the fix
// collection failed, with the damaged checkpoint's ID in the error), the
// damaged checkpoint's objects are kept, and the warning names no host
// path.
func TestCheckpointDamagedManifestDoesNotJamStore(t *testing.T) {
	for _, how := range []string{"garbage", "oversized"} {
		t.Run(how, func(t *testing.T) {
			var logs strings.Builder
			var logMu sync.Mutex
			e := ckfEnv(t, func(c *testConfig) {
				c.Checkpoints.MaxPerWorkspace = 1
				c.Logger = hclog.New(&hclog.LoggerOptions{Output: &lockedWriter{w: &logs, mu: &logMu}, Level: hclog.Warn})
			})
			e.write("projects/b/x.bin", ckfRandom("b", 30_000))
			cb, err := e.fs.CreateCheckpoint(bg, proj("b"), CheckpointOptions{})
			must(t, err)
			mp := ckfManifestPath(e, proj("b"), cb.ID)
			if how == "garbage" {
				must(t, os.WriteFile(mp, []byte("{not json"), 0o600))
			} else {
				must(t, os.Truncate(mp, maxManifestBytes+1)) // sparse
			}
			e.fs.ck.cacheMu.Lock()
			e.fs.ck.manifests = nil
			e.fs.ck.cacheMu.Unlock()
			objects := func() int {
				n := 0
				filepath.WalkDir(filepath.Join(e.dir, "store", "objects"), func(p string, d fs.DirEntry, err error) error {
					if err == nil && d.Type().IsRegular() {
						n++
					}
					return nil
				})
				return n
			}
			kept := objects()

			e.write("projects/a/a.txt", "A1")
			ca, err := e.fs.CreateCheckpoint(bg, proj("a"), CheckpointOptions{})
			must(t, err)
			for i := range 3 { // at the count limit: each prunes the previous one
				e.write("projects/a/a.txt", fmt.Sprintf("A%d", i+2))
				if _, err := e.fs.CreateCheckpoint(bg, proj("a"), CheckpointOptions{}); err != nil {
					t.Fatalf("create at the count limit: %v", err)
				}
			}
			if _, err := e.fs.GetCheckpoint(bg, proj("a"), ca.ID); davfs.CodeOf(err) != davfs.CodeNotFound {
				t.Fatalf("the count limit did not prune: %v", err)
			}
			l, err := e.fs.ListCheckpoints(bg, proj("a"))
			must(t, err)
			if err := e.fs.DeleteCheckpoint(bg, proj("a"), l[0].ID); err != nil {
				if strings.Contains(err.Error(), cb.ID) {
					t.Fatalf("the error names another workspace's checkpoint: %v", err)
				}
				t.Fatalf("delete: %v", err)
			}
			if got := objects(); got < kept {
				t.Fatalf("objects %d < %d: the damaged checkpoint's objects were freed", got, kept)
			}
			// The damaged one refuses compare, and can be deleted.
			_, err = e.fs.CompareCheckpoint(bg, proj("b"), cb.ID, "", "", false)
			wantErr(t, err, davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged)
			must(t, e.fs.DeleteCheckpoint(bg, proj("b"), cb.ID))
			if got := objects(); got != 0 {
				t.Fatalf("%d objects left after every checkpoint was deleted", got)
			}
			logMu.Lock()
			out := logs.String()
			logMu.Unlock()
			if !strings.Contains(out, "frees nothing") || strings.Contains(out, e.dir) {
				t.Fatalf("log: %q", out)
			}
		})
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ckfGoldenManifest has an entry of every kind: directories, a packed
// file, a loose file, a key entry, an empty file, names with quotes,
// backslashes, control bytes, HTML characters and non-ASCII.
func ckfGoldenManifest() *ckManifest {
	h1, h2 := strings.Repeat("ab", 32), strings.Repeat("0f", 32)
	return &ckManifest{Version: 1, Entries: []ckEntry{
		{Path: "a", Dir: true, Mode: 0o755, Mtime: 1700000000123456789},
		{Path: "a/\"q\"\\\t\x01é<&>", Mode: 0o644, Size: 12, Hash: h1, Mtime: -3, Dev: 1 << 60, Ino: 7, Ctime: 9, Key: true, Pack: "18ed27f023581fb4fb48c69e", Off: 4},
		{Path: "a/big.bin", Mode: 0o600, Size: 1 << 40, Hash: h2, Mtime: 5, Dev: 2049, Ino: 1 << 33, Ctime: 6},
		{Path: "a/empty", Mode: 0o644, Hash: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{Path: "a/sub", Dir: true, Mode: 0o700},
		{Path: "z", Mode: 0o4755, Size: 1, Hash: h1, Pack: "18ed27f023581fb4fb48c69e"},
	}}
}

// ckfGoldenJSON is ckfGoldenManifest as the hand-written encoder (removed:
// it bought ~6% of a second checkpoint) wrote it: stores written before
// stay readable.
const ckfGoldenJSON = `{"version":1,"entries":[{"p":"a","d":true,"m":493,"t":1700000000123456789},{"p":"a/\"q\"\\\u0009\u0001é<&>","m":420,"s":12,"h":"abababababababababababababababababababababababababababababababab","t":-3,"dv":1152921504606846976,"i":7,"c":9,"k":true,"pk":"18ed27f023581fb4fb48c69e","o":4},{"p":"a/big.bin","m":384,"s":1099511627776,"h":"0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f","t":5,"dv":2049,"i":8589934592,"c":6},{"p":"a/empty","m":420,"h":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},{"p":"a/sub","d":true,"m":448},{"p":"z","m":2541,"s":1,"h":"abababababababababababababababababababababababababababababababab","pk":"18ed27f023581fb4fb48c69e"}]}`

// The manifest is encoding/json's, through its struct tags: a manifest of
// many entries of every kind round-trips, and what the former encoder
// wrote decodes to the same entries.
func TestCheckpointManifestEncodingRoundTrip(t *testing.T) {
	var old ckManifest
	must(t, json.Unmarshal([]byte(ckfGoldenJSON), &old))
	if !reflect.DeepEqual(&old, ckfGoldenManifest()) {
		t.Fatalf("the former encoding decodes to\n%+v\nwant\n%+v", old, *ckfGoldenManifest())
	}
	m := &ckManifest{Version: 1}
	kinds := ckfGoldenManifest().Entries
	for i := range 3000 {
		e := kinds[i%len(kinds)]
		e.Path = fmt.Sprintf("d%04d/%s", i, e.Path)
		e.Ino, e.Off, e.Mtime = uint64(i), int64(i)*3, int64(i)-1500
		m.Entries = append(m.Entries, e)
	}
	b, err := json.Marshal(m)
	must(t, err)
	var got ckManifest
	must(t, json.Unmarshal(b, &got))
	if !reflect.DeepEqual(&got, m) {
		t.Fatal("a manifest of 3,000 entries does not round-trip")
	}
	// The golden's own encoding reads back as the golden (field names and
	// omitted zero values unchanged).
	b, err = json.Marshal(ckfGoldenManifest())
	must(t, err)
	var a, c any
	must(t, json.Unmarshal(b, &a))
	must(t, json.Unmarshal([]byte(ckfGoldenJSON), &c))
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("the encoding's fields differ from the former one:\n%s\n%s", b, ckfGoldenJSON)
	}
	if _, ok := any(m).(json.Marshaler); ok {
		t.Fatal("ckManifest has a hand-written MarshalJSON again (docs/architecture.md, Speed work: under 20%, the library stays)")
	}
}

// A capture of more names than maxEntries fails with CHECKPOINT_LIMIT and
// keeps nothing (no checkpoint, no object, no pack); at the limit it
// works. Skipped names count too (they are held in memory as well).
func TestCheckpointMaxEntries(t *testing.T) {
	e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxEntries = 5 })
	ws := proj("p")
	// 4 names: d, d/big.bin (a loose object), d/a.txt, b.txt.
	e.write("projects/p/d/big.bin", ckfRandom("big", 40_000))
	e.write("projects/p/d/a.txt", "A")
	e.write("projects/p/b.txt", "B")
	e.mkdir("projects/p/node_modules") // skipped: the 5th name
	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	must(t, e.fs.DeleteCheckpoint(bg, ws, c.ID))
	e.write("projects/p/c.txt", "C") // the 6th
	_, err = e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	if l, err := e.fs.ListCheckpoints(bg, ws); err != nil || len(l) != 0 {
		t.Fatalf("a checkpoint over maxEntries was kept: %v %v", l, err)
	}
	if st, err := e.fs.CheckpointStats(); err != nil || st.Bytes != 0 {
		t.Fatalf("stats = %+v, %v: bytes of the refused capture stayed", st, err)
	}
	for _, sub := range []string{"objects", "packs", "tmp"} {
		n := 0
		filepath.WalkDir(filepath.Join(e.dir, "store", sub), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				n++
			}
			return nil
		})
		if n != 0 {
			t.Fatalf("%d files left in %s/ by the refused capture", n, sub)
		}
	}
}

// A checkpoint that cannot be read while a collection lists the store
// (its description, or its whole ws/<key> directory, fails to open: EIO,
// EMFILE) is not collected: a create at the count limit and a delete of
// other checkpoints succeed, free none of its objects or packs and keep
// its manifest; once the fault is gone it compares and restores. (Root
// ignores chmod 000, so the fault is injected through ckReadTestHook.)
func TestCheckpointUnreadableNotCollected(t *testing.T) {
	for _, what := range []string{"description", "directory"} {
		t.Run(what, func(t *testing.T) {
			e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxPerWorkspace = 1 })
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
			for _, ws := range []davfs.Workspace{a, b} {
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
	fd, err := unix.Open(dir, fdio.DirPath|fdio.Common, 0)
	must(t, err)
	defer unix.Close(fd)
	for range 2 {
		must(t, mkdirSynced(fd, "sub"))
	}
	if fi, err := os.Stat(filepath.Join(dir, "sub")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("sub: %v %v", fi, err)
	}
	if err := mkdirSynced(fd, "missing/sub"); !strings.Contains(fdio.Errno(err).Error(), "no such file") {
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
	e := ckfEnv(t, func(c *testConfig) {
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
	wantErr(t, e.fs.DeleteCheckpoint(bg, a, ca.ID), davfs.CodeNotFound, davfs.ReasonCheckpointNotFound)
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
	e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxTotalBytes = 60_000 })
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
	wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
	if msg := err.Error(); !strings.Contains(msg, "not fully readable") || strings.Contains(msg, ca.ID) {
		t.Fatalf("other workspace: %v", err)
	}
	e.write("projects/a/y.bin", ckfRandom("y", 30_000))
	_, err = e.fs.CreateCheckpoint(bg, a, CheckpointOptions{})
	wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
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
func storeFiles(t *testing.T, store string, ws davfs.Workspace) map[string]map[string]string {
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

func bigBinRestores(t *testing.T, e *env, a davfs.Workspace, id string) {
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
