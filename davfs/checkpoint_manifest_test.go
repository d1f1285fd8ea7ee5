package davfs

// Reading manifests back from a store the agent may write (issue #23,
// "Whatever the store holds cannot hurt"): a planted manifest is decoded
// as a stream and refused, as damaged, before anything proportional to it
// is allocated, by every reader.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// repeatEntries is a manifest of n copies of the entry JSON ent.
func repeatEntries(ent string, n int) []byte {
	var b bytes.Buffer
	b.Grow(len(ent)*n + 64)
	b.WriteString(`{"version":1,"entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ent)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// ckmEditMeta rewrites a stored description through edit.
func ckmEditMeta(t *testing.T, e *env, ws Workspace, id string, edit func(m *ckMeta)) {
	t.Helper()
	p := filepath.Join(e.dir, "store", "ws", ckWorkspaceKey(ws), id+".json")
	b, err := os.ReadFile(p)
	must(t, err)
	var m ckMeta
	must(t, json.Unmarshal(b, &m))
	edit(&m)
	b, err = json.Marshal(&m)
	must(t, err)
	must(t, os.WriteFile(p, b, 0o600))
}

// allocated is how many bytes fn allocated (all goroutines).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestCheckpointManifestDecodeBounded(t *testing.T) {
	const maxEntries = 1000
	bomb := repeatEntries(`{}`, 2_800_000) // the 8 MiB manifest
	dirs := repeatEntries(`{"p":"d","d":true}`, 400_000)
	cases := []struct {
		name     string
		manifest []byte                // nil: keep the stored one
		meta     func(m *ckMeta)       // nil: keep the description
		edit     func(b []byte) []byte // applied to the stored manifest
		why      string                // in the message
	}{
		{name: "2.8M empty entries", manifest: bomb, why: "empty path"},
		{name: "2.8M empty entries, counted by the description", manifest: bomb,
			meta: func(m *ckMeta) { m.Files = 2_800_000 }, why: "more than services.checkpoints.maxEntries"},
		{name: "more valid-looking entries than counted", manifest: dirs, why: "more entries than its description counts"},
		{name: "fewer entries than counted", meta: func(m *ckMeta) { m.Files++ }, why: "where its description counts"},
		{name: "negative count", meta: func(m *ckMeta) { m.Dirs = -1 }, why: "negative count"},
		{name: "one entry of 16 MiB", manifest: []byte(`{"version":1,"entries":[{"p":"` + strings.Repeat("a", 16<<20) + `"}]}`),
			why: "larger than the path limits"},
		{name: "a path over maxPathLength", manifest: []byte(`{"version":1,"entries":[{"p":"` + strings.Repeat("a", 5000) + `","d":true}]}`),
			meta: func(m *ckMeta) { m.Files, m.Dirs = 0, 1 }, why: "longer than maxPathLength"},
		{name: "unknown key", edit: func(b []byte) []byte { return append([]byte(`{"x":1,`), b[1:]...) }, why: "unknown key"},
		{name: "repeated key", edit: func(b []byte) []byte { return append([]byte(`{"version":1,`), b[1:]...) }, why: "repeated"},
		{name: "data after the end", edit: func(b []byte) []byte { return append(b, []byte(`{}`)...) }, why: "after its end"},
		{name: "cut short", edit: func(b []byte) []byte { return b[:len(b)-3] }, why: "manifest is invalid"},
		{name: "not JSON", manifest: []byte("\x00\x01 not json"), why: "not a valid manifest"},
		{name: "a file without a hash", edit: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"h":"`), []byte(`"h":"x`), 1)
		}, why: "invalid hash"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := ckfEnv(t, func(c *Config) { c.Checkpoints.MaxEntries = maxEntries; c.Checkpoints.MaxPerWorkspace = 2 })
			ws := proj("p")
			e.write("projects/p/a.txt", "A1")
			e.write("projects/p/d/b.txt", "B1")
			good, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Label: "good"})
			must(t, err)
			e.write("projects/p/a.txt", "A2")
			bad, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{Label: "bad"})
			must(t, err)
			p := ckfManifestPath(e, ws, bad.ID)
			if tc.manifest != nil {
				must(t, os.WriteFile(p, tc.manifest, 0o600))
			}
			if tc.edit != nil {
				b, err := os.ReadFile(p)
				must(t, err)
				must(t, os.WriteFile(p, tc.edit(b), 0o600))
			}
			if tc.meta != nil {
				ckmEditMeta(t, e, ws, bad.ID, tc.meta)
			}
			e.fs.ck.cacheMu.Lock()
			e.fs.ck.manifests = nil
			e.fs.ck.cacheMu.Unlock()
			before := ckfTree(t, e.projects)
			// Every reader, each allocating far less than the file holds.
			const bound = 4 << 20
			steps := []struct {
				what string
				run  func() error
			}{
				{"compare", func() error { _, err := e.fs.CompareCheckpoint(bg, ws, bad.ID, "", "", false); return err }},
				{"restore", func() error { _, err := e.fs.RestoreCheckpoint(bg, ws, bad.ID, "", RestoreOptions{}); return err }},
				{"list with path", func() error {
					// A path list reads only the entries it needs (a binary
					// search of the framed manifest), so a damage elsewhere in
					// the file may go unseen there: the damaged checkpoint may
					// be listed, and compare and restore (above) refuse it. The
					// good one is always listed, and the bound holds.
					cs, _, err := e.fs.ListCheckpointsHolding(bg, ws, "a.txt")
					if err == nil && !slices.ContainsFunc(cs, func(c Checkpoint) bool { return c.ID == good.ID }) {
						t.Errorf("list with path = %v, want the good checkpoint in it", cs)
					}
					return err
				}},
				{"compare of the good one", func() error {
					_, err := e.fs.CompareCheckpoint(bg, ws, good.ID, "", "", false)
					return err
				}},
			}
			for _, s := range steps {
				var err error
				if n := allocated(func() { err = s.run() }); n > bound {
					t.Errorf("%s allocated %d bytes (bound %d)", s.what, n, bound)
				}
				switch s.what {
				case "compare", "restore":
					wantErr(t, err, CodeDataLoss, ReasonCheckpointDamaged)
					if !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), bad.ID) {
						t.Errorf("%s: %v, want the checkpoint and %q named", s.what, err, tc.why)
					}
				default:
					if err != nil {
						t.Errorf("%s: %v", s.what, err)
					}
				}
			}
			ckfSame(t, "after the damaged checkpoint was read", before, ckfTree(t, e.projects))
			// The store keeps working: a create prunes the oldest by count
			// (good; the collection decodes every remaining manifest), a
			// delete collects again, and the damaged one can be deleted.
			e.write("projects/p/a.txt", "A3")
			var third Checkpoint
			if n := allocated(func() { third, err = e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{}) }); n > bound {
				t.Errorf("create and prune allocated %d bytes", n)
			}
			must(t, err)
			if _, err := e.fs.GetCheckpoint(bg, ws, good.ID); CodeOf(err) != CodeNotFound {
				t.Fatalf("the count limit did not prune: %v", err)
			}
			if n := allocated(func() { err = e.fs.DeleteCheckpoint(bg, ws, third.ID) }); n > bound {
				t.Errorf("delete allocated %d bytes", n)
			}
			must(t, err)
			must(t, e.fs.DeleteCheckpoint(bg, ws, bad.ID))
			last, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
			must(t, err)
			if _, err := e.fs.CompareCheckpoint(bg, ws, last.ID, "", "", false); err != nil {
				t.Fatalf("a checkpoint after the damaged one was deleted: %v", err)
			}
			e.checkCanaries()
		})
	}
}

// What the capture writes decodes to what it wrote, through the stream
// decoder, at the size limits.
func TestCheckpointManifestDecodeAtLimits(t *testing.T) {
	e := ckfEnv(t, func(c *Config) { c.Checkpoints.MaxEntries = 64 })
	ws := proj("p")
	long := strings.Repeat("n", 200)
	e.write("projects/p/"+long+"/<&>\"é.txt", "x")
	for i := range 40 {
		e.write("projects/p/d/f"+strings.Repeat("0", i), "y")
	}
	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	e.fs.ck.cacheMu.Lock()
	e.fs.ck.manifests = nil
	e.fs.ck.cacheMu.Unlock()
	m, err := e.fs.ck.readManifest(ws, c.ID)
	must(t, err)
	if len(m.Entries) != c.Files+c.Dirs || c.Files != 41 {
		t.Fatalf("%d entries, checkpoint %+v", len(m.Entries), c)
	}
}
