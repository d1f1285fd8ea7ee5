package davfs

// A restore verifies every object it will use before its first change
// (issue #23: a restore over one damaged object rewrote the first file,
// then answered 500 "nothing was written to it").

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ckrEnv: a project p holding a.txt and m.txt (packed) and z/big.bin (a
// loose object), checkpointed with automatic checkpoints on, then
// changed so that a restore rewrites all three (a.txt first) and removes
// new.txt.
func ckrEnv(t *testing.T) (*env, Checkpoint, *ckManifest) {
	t.Helper()
	e := ckfEnv(t, func(c *Config) { c.Checkpoints.Automatic = true })
	e.write("projects/p/a.txt", "A1")
	e.write("projects/p/m.txt", "M1")
	e.write("projects/p/z/big.bin", strings.Repeat("Z", 64<<10))
	c, err := e.fs.CreateCheckpoint(bg, proj("p"), CheckpointOptions{})
	must(t, err)
	m, err := e.fs.ck.readManifest(proj("p"), c.ID)
	must(t, err)
	e.write("projects/p/a.txt", "A2")
	e.write("projects/p/m.txt", "M2")
	e.write("projects/p/z/big.bin", "small now")
	e.write("projects/p/new.txt", "N")
	return e, c, m
}

func ckrEntry(t *testing.T, m *ckManifest, path string) ckEntry {
	t.Helper()
	for _, e := range m.Entries {
		if e.Path == path {
			return e
		}
	}
	t.Fatalf("no entry %s", path)
	return ckEntry{}
}

// ckrObject is the host path of the loose object of big.bin; ckrPack the
// pack of the small files.
func ckrObject(e *env, m *ckManifest) string {
	h := ""
	for _, x := range m.Entries {
		if x.Path == "z/big.bin" {
			h = x.Hash
		}
	}
	return filepath.Join(e.dir, "store", "objects", h[:2], h)
}

func ckrPack(e *env, m *ckManifest) string {
	for _, x := range m.Entries {
		if x.Pack != "" {
			return filepath.Join(e.dir, "store", "packs", x.Pack+".pack")
		}
	}
	return ""
}

// ckrLastPacked is the small file stored last in the pack.
func ckrLastPacked(t *testing.T, m *ckManifest) ckEntry {
	a, mt := ckrEntry(t, m, "a.txt"), ckrEntry(t, m, "m.txt")
	if a.Off > mt.Off {
		return a
	}
	return mt
}

// flipAt changes one byte of the file p at off, keeping its size.
func flipAt(t *testing.T, p string, off int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	must(t, err)
	b[0] ^= 0xff
	_, err = f.WriteAt(b, off)
	must(t, err)
}

func TestCheckpointRestoreVerifiesObjectsFirst(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, e *env, m *ckManifest)
		path   string // named in the error
	}{
		{"loose object: one byte changed", func(t *testing.T, e *env, m *ckManifest) { flipAt(t, ckrObject(e, m), 4096) }, "z/big.bin"},
		{"loose object: truncated", func(t *testing.T, e *env, m *ckManifest) { must(t, os.Truncate(ckrObject(e, m), 10)) }, "z/big.bin"},
		{"loose object: longer", func(t *testing.T, e *env, m *ckManifest) {
			f, err := os.OpenFile(ckrObject(e, m), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			f.WriteString("more")
			f.Close()
		}, "z/big.bin"},
		{"loose object: missing", func(t *testing.T, e *env, m *ckManifest) { must(t, os.Remove(ckrObject(e, m))) }, "z/big.bin"},
		{"loose object: a symlink to a canary", func(t *testing.T, e *env, m *ckManifest) {
			p := ckrObject(e, m)
			must(t, os.Remove(p))
			must(t, os.Symlink(filepath.Join(e.outside, "canary.txt"), p))
		}, "z/big.bin"},
		{"loose object: hard-linked", func(t *testing.T, e *env, m *ckManifest) {
			must(t, os.Link(ckrObject(e, m), filepath.Join(e.dir, "store", "extra-link")))
		}, "z/big.bin"},
		{"pack: the second file's byte changed", func(t *testing.T, e *env, m *ckManifest) {
			flipAt(t, ckrPack(e, m), ckrEntry(t, m, "m.txt").Off)
		}, "m.txt"},
		{"pack: truncated inside its last file", func(t *testing.T, e *env, m *ckManifest) {
			must(t, os.Truncate(ckrPack(e, m), ckrLastPacked(t, m).Off+1))
		}, "last packed"},
		{"pack: missing", func(t *testing.T, e *env, m *ckManifest) { must(t, os.Remove(ckrPack(e, m))) }, "a.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, c, m := ckrEnv(t)
			ws := proj("p")
			tc.damage(t, e, m)
			if tc.path == "last packed" {
				tc.path = ckrLastPacked(t, m).Path
			}
			before := ckfTree(t, e.projects)
			listed, err := e.fs.ListCheckpoints(bg, ws)
			must(t, err)
			for _, path := range []string{"", tc.path} {
				_, err := e.fs.RestoreCheckpoint(bg, ws, c.ID, path, RestoreOptions{})
				wantErr(t, err, CodeDataLoss, ReasonCheckpointDamaged)
				if !strings.Contains(err.Error(), `"`+tc.path+`"`) || !strings.Contains(err.Error(), "nothing was restored") {
					t.Fatalf("restore %q: %v, want %s named", path, err, tc.path)
				}
				ckfSame(t, "after a refused restore", before, ckfTree(t, e.projects))
			}
			// The undo checkpoints it took are gone again.
			after, err := e.fs.ListCheckpoints(bg, ws)
			must(t, err)
			if len(after) != len(listed) {
				t.Fatalf("checkpoints %d → %d: a refused restore left its undo checkpoint", len(listed), len(after))
			}
			e.checkCanaries()
			// A restore of a part whose objects are intact still works.
			if intact := map[string]string{"a.txt": "m.txt", "m.txt": "a.txt", "z/big.bin": "a.txt"}[tc.path]; !strings.Contains(tc.name, "pack: missing") {
				if _, err := e.fs.RestoreCheckpoint(bg, ws, c.ID, intact, RestoreOptions{}); err != nil {
					t.Fatalf("restore of an intact file: %v", err)
				}
				if got := e.read("projects/p/" + intact); !strings.HasSuffix(got, "1") {
					t.Fatalf("%s = %q", intact, got)
				}
			}
		})
	}
}

// An object that changes in the store after the verification (the agent
// writes it while the restore runs) is caught while it is copied: that
// file keeps what it held, no temp file is left, and the restore stops.
func TestCheckpointRestoreObjectChangedAfterVerify(t *testing.T) {
	e, c, m := ckrEnv(t)
	obj := ckrObject(e, m)
	restoreTestHook = func(stage string) {
		if stage == "verified" {
			flipAt(t, obj, 100)
		}
	}
	t.Cleanup(func() { restoreTestHook = nil })
	_, err := e.fs.RestoreCheckpoint(bg, proj("p"), c.ID, "", RestoreOptions{})
	wantErr(t, err, CodeDataLoss, ReasonCheckpointDamaged)
	if !strings.Contains(err.Error(), "changed in the store during the restore") {
		t.Fatalf("error: %v", err)
	}
	if got := e.read("projects/p/z/big.bin"); got != "small now" {
		t.Fatalf("big.bin = %q: wrong bytes committed", got[:min(len(got), 20)])
	}
	ents, err := os.ReadDir(filepath.Join(e.projects, "p", "z"))
	must(t, err)
	if len(ents) != 1 {
		t.Fatalf("z/ holds %v: a temp file was left", ents)
	}
	e.checkCanaries()
}
