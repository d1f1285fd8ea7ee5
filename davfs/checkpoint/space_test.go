package checkpoint

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentworkspace/files/davfs"
)

// The store's bytes: sparse files count what they occupy, and the byte
// cap respects the free space of the store's volume (issue #23).

// blocksOf is the allocated bytes of the file p.
func blocksOf(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(p, &st))
	return st.Blocks * 512
}

func TestCheckpointSparseFile(t *testing.T) {
	const size = 256 << 20
	e := ckfEnv(t, func(c *testConfig) { c.Checkpoints.MaxTotalBytes = 16 << 20 })
	ws := proj("p")
	p := filepath.Join(e.projects, "p", "sparse.img")
	e.mkdir("projects/p")
	f, err := os.Create(p)
	must(t, err)
	must(t, f.Truncate(size))
	_, err = f.WriteAt([]byte("DATA in the middle"), 100<<20)
	must(t, err)
	must(t, f.Close())
	if got := blocksOf(t, p); got > 64<<10 {
		t.Fatalf("the test's volume does not keep holes (%d bytes allocated for a sparse file); this test needs one that does (ext4, xfs, btrfs, tmpfs)", got)
	}
	dense := make([]byte, 2<<20) // counted as its size, as before
	rand.Read(dense)
	must(t, os.WriteFile(filepath.Join(e.projects, "p", "dense.bin"), dense, 0o644))

	c, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
	must(t, err)
	if c.Size != size+2<<20 {
		t.Fatalf("checkpoint size %d: the logical size is still reported", c.Size)
	}
	st, err := e.fs.CheckpointStats()
	must(t, err)
	if st.Bytes < 2<<20 || st.Bytes > 2<<20+1<<20 {
		t.Fatalf("store bytes %d, want the dense file's 2 MiB and little more", st.Bytes)
	}
	m, err := e.fs.ck.readManifest(ws, c.ID)
	must(t, err)
	obj := ckrObject(e, &ckManifest{Entries: []ckEntry{{Path: "z/big.bin", Hash: ckrEntry(t, m, "sparse.img").Hash}}})
	if got := blocksOf(t, obj); got > 64<<10 {
		t.Fatalf("the sparse file's object occupies %d bytes", got)
	}
	// The count survives a recount (a restart).
	e.fs.ck.recount(nil, nil)
	if got := e.fs.ck.total.Load(); got != st.Bytes {
		t.Fatalf("recount %d, counted %d", got, st.Bytes)
	}
	// It restores byte for byte.
	must(t, os.Truncate(p, 0))
	_, err = e.fs.RestoreCheckpoint(bg, ws, c.ID, "sparse.img", RestoreOptions{})
	must(t, err)
	fi, err := os.Stat(p)
	must(t, err)
	b := make([]byte, 32)
	rf, err := os.Open(p)
	must(t, err)
	defer rf.Close()
	_, err = rf.ReadAt(b, 100<<20)
	must(t, err)
	if fi.Size() != size || !bytes.HasPrefix(b, []byte("DATA in the middle")) {
		t.Fatalf("restored: size %d, %q", fi.Size(), b)
	}
}

func TestVolumeReserve(t *testing.T) {
	cases := []struct{ size, want int64 }{
		{100 << 30, 5 << 30},    // 5 %
		{1 << 30, 256 << 20},    // at least 256 MiB
		{200 << 20, 100 << 20},  // at most half a small volume
		{10 << 40, 512 << 30},   // 5 % of 10 TiB
		{6 << 30, 6 << 30 / 20}, // 5 % above the floor
	}
	for _, c := range cases {
		if got := (volumeSpace{size: c.size}).reserve(); got != c.want {
			t.Errorf("reserve of a %d-byte volume = %d, want %d", c.size, got, c.want)
		}
	}
}

// TestCheckpointVolumeNearlyFull: a capture that would leave less than
// the reserve free is refused (CHECKPOINT_LIMIT, nothing kept); pruning
// takes the store down to what keeps the reserve when the volume filled
// up meanwhile, and refuses the new checkpoint, evicting nothing, when
// even that is not enough.
func TestCheckpointVolumeNearlyFull(t *testing.T) {
	const mb = 1 << 20
	const volume = 100 << 30 // reserve: 5 GiB
	reserve := (volumeSpace{size: volume}).reserve()
	cases := []struct {
		name    string
		spare   int64 // the volume's spare space for the last create, before it writes
		changed bool  // the last create captures a new 2 MiB file (else the file is gone: it adds nothing)
		held    bool  // c1 and c2 are held (read by a restore): never pruned
		err     bool
		left    int // checkpoints left (of c1, c2 and the new one)
	}{
		{"plenty of space", 64 * mb, true, false, false, 3},
		{"the capture would cross the reserve", 1 * mb, true, false, true, 2},
		{"past the reserve, nothing new: the oldest is pruned", -mb - mb/2, false, false, false, 2},
		{"past the reserve, pruning cannot free enough", -mb - mb/2, false, true, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := ckfEnv(t, nil)
			ws := proj("p")
			var spare int64 = 1 << 40
			// A volume whose free space shrinks as the store grows.
			base := int64(0)
			e.fs.ck.space = func() (volumeSpace, error) {
				return volumeSpace{avail: reserve + spare - (e.fs.ck.total.Load() - base), size: volume}, nil
			}
			blob := func() string {
				b := make([]byte, 2*mb)
				rand.Read(b)
				return string(b)
			}
			e.write("projects/p/f.bin", blob())
			c1, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
			must(t, err)
			e.write("projects/p/f.bin", blob())
			c2, err := e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
			must(t, err)
			if tc.changed {
				e.write("projects/p/f.bin", blob())
			} else {
				must(t, os.Remove(filepath.Join(e.projects, "p", "f.bin")))
			}
			if tc.held {
				for _, c := range []string{c1.ID, c2.ID} {
					e.fs.ck.hold(c)
					defer e.fs.ck.release(c)
				}
			}
			spare, base = tc.spare, e.fs.ck.total.Load()
			_, err = e.fs.CreateCheckpoint(bg, ws, CheckpointOptions{})
			if tc.err {
				wantErr(t, err, davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit)
				if !strings.Contains(err.Error(), "volume is nearly full") || !strings.Contains(err.Error(), "5120 MiB") {
					t.Fatalf("error: %v", err)
				}
			} else {
				must(t, err)
			}
			l, err := e.fs.ListCheckpoints(bg, ws)
			must(t, err)
			if len(l) != tc.left {
				t.Fatalf("%d checkpoints left, want %d", len(l), tc.left)
			}
			if tc.name == "past the reserve, nothing new: the oldest is pruned" {
				if _, err := e.fs.GetCheckpoint(bg, ws, c1.ID); davfs.CodeOf(err) != davfs.CodeNotFound {
					t.Fatalf("the oldest was not pruned: %v", err)
				}
			}
			ents, err := os.ReadDir(filepath.Join(e.dir, "store", "tmp"))
			must(t, err)
			if len(ents) != 0 {
				t.Fatalf("tmp/ holds %d files", len(ents))
			}
		})
	}
}

func TestWriteSparse(t *testing.T) {
	blk := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	cases := []struct {
		name    string
		b       []byte
		written int64
	}{
		{"empty", nil, 0},
		{"all zero", blk(0, 5*sparseBlock), 0},
		{"all data", blk('x', 5*sparseBlock), 5 * sparseBlock},
		{"data, hole, data", cat(blk('x', sparseBlock), blk(0, 3*sparseBlock), blk('y', 2*sparseBlock)), 3 * sparseBlock},
		{"a short data tail", cat(blk(0, sparseBlock), blk('z', 100)), 100},
		{"a short zero tail", cat(blk('x', sparseBlock), blk(0, 100)), sparseBlock},
		{"one byte in a block", cat(blk(0, 2*sparseBlock), []byte{1}, blk(0, sparseBlock-1)), sparseBlock},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(p)
			must(t, err)
			defer f.Close()
			const off = 3 * sparseBlock // as the second read of a stream
			n, err := writeSparse(int(f.Fd()), tc.b, off)
			must(t, err)
			must(t, f.Truncate(off+int64(len(tc.b))))
			got, err := os.ReadFile(p)
			must(t, err)
			if n != tc.written || !bytes.Equal(got, cat(blk(0, off), tc.b)) {
				t.Fatalf("written %d (want %d), content equal: %v", n, tc.written, bytes.Equal(got, cat(blk(0, off), tc.b)))
			}
		})
	}
}
