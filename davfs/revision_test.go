package davfs

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestHashCacheBounded(t *testing.T) {
	c := newHashCache(8)
	for i := range 100 {
		c.put(statKey{ino: uint64(i)}, content{sum: uint64(i)})
		if c.len() > 8 {
			t.Fatalf("cache grew to %d", c.len())
		}
	}
	if v, ok := c.get(statKey{ino: 99}); !ok || v.sum != 99 {
		t.Fatal("latest entry missing")
	}
	if _, ok := c.get(statKey{ino: 0}); ok {
		t.Fatal("oldest entry kept")
	}
}

// TestCacheOnlyOldStates: a just-written file is hashed but not cached (a
// write in the same timestamp tick would keep its stat key); once its ctime
// is older than cacheMinAge the hash is cached and a listing reads nothing.
func TestCacheOnlyOldStates(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/f.txt", "x")
	_, err := e.fs.Stat(bg, proj("p"), "f.txt")
	must(t, err)
	if e.fs.cache.len() != 0 {
		t.Fatal("fresh state cached")
	}
	time.Sleep(cacheMinAge + 20*time.Millisecond)
	a, err := e.fs.Stat(bg, proj("p"), "f.txt")
	must(t, err)
	if e.fs.cache.len() != 1 {
		t.Fatal("old state not cached")
	}
	// Warm: the cached hash gives the same revision without reading
	// (the file is now unreadable, yet the revision and class stay).
	must(t, os.Chmod(filepath.Join(e.dir, "projects/p/f.txt"), 0o000))
	defer os.Chmod(filepath.Join(e.dir, "projects/p/f.txt"), 0o644)
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(e.dir, "projects/p/f.txt"), &st))
	if !cacheable(&st) {
		// chmod changed ctime: the key changed, a new hash is needed.
		b, err := e.fs.Stat(bg, proj("p"), "f.txt")
		must(t, err)
		if b.Revision == a.Revision {
			t.Fatal("chmod did not change the revision")
		}
	}
}

func TestRevisionKinds(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxEditableFileSize = 10 })
	e.write("projects/p/small", "12345")
	e.write("projects/p/large", "12345678901")
	e.mkdir("projects/p/d")
	for p, kind := range map[string]byte{"small": 'c', "large": 's', "d": 'd', "": 'd'} {
		st, err := e.fs.Stat(bg, proj("p"), p)
		must(t, err)
		if st.Revision[0] != kind {
			t.Errorf("%q revision %s", p, st.Revision)
		}
	}
	g, err := e.fs.Stat(bg, global, "")
	must(t, err)
	if g.Revision[0] != 'g' || g.Type != TypeDirectory {
		t.Fatalf("global root %+v", g)
	}
	l, err := e.fs.ReadFile(bg, proj("p"), "large")
	must(t, err)
	if l.Content != nil || l.Entry.Reason != NotEditableTooLarge {
		t.Fatalf("large %+v", l.Entry)
	}
}

func TestListingSweepsStaleTemp(t *testing.T) {
	e := newEnv(t, nil)
	e.write("projects/p/.davfs-tmp-stale", "x")
	e.write("projects/p/.davfs-tmp-fresh", "x")
	old := time.Now().Add(-2 * staleTempAge)
	must(t, os.Chtimes(filepath.Join(e.dir, "projects/p/.davfs-tmp-stale"), old, old))
	pg, err := e.fs.ListEntries(bg, proj("p"), "", 0, "")
	must(t, err)
	if len(pg.Entries) != 0 {
		t.Fatalf("temp files listed: %+v", pg.Entries)
	}
	if e.exists("projects/p/.davfs-tmp-stale") || !e.exists("projects/p/.davfs-tmp-fresh") {
		t.Fatal("lazy sweep removed the wrong files")
	}
}

// TestTextScanMatchesContentOf: streaming classification and hashing equal
// the one-shot ones for any chunking.
func TestTextScanMatchesContentOf(t *testing.T) {
	inputs := []string{"", "abc", "héllo wörld ✓ 日本語 😀", "caf\xe9", "a\x00b", "\xe2\x82", "\xe2\x82\xac",
		"ok\xf0\x9f\x98", "\xef\xbf\xbd", "\xc0\xaf", "x\xed\xa0\x80y", strings.Repeat("日本😀", 100)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
			if r.IntN(3) > 0 {
				b[i] = "aé😀"[r.IntN(7)]
			}
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		want := contentOf([]byte(in))
		for chunk := 1; chunk <= 5; chunk++ {
			s := newTextScan()
			for i := 0; i < len(in); i += chunk {
				s.write([]byte(in[i:min(i+chunk, len(in))]))
			}
			if got := s.result(); got != want {
				t.Fatalf("%q chunk %d: got %+v want %+v", in, chunk, got, want)
			}
		}
	}
}

// modelCache is the reference model of a hashCache shard: the two
// generations written out as plainly as possible, over slices.
type modelCache struct {
	cur, old []cacheEntry
	max      int
}

func modelFind(gen []cacheEntry, id fdIdentity) int {
	for i, e := range gen {
		if e.key.id() == id {
			return i
		}
	}
	return -1
}

func (m *modelCache) get(k statKey) (content, bool) {
	if i := modelFind(m.cur, k.id()); i >= 0 {
		return m.cur[i].c, m.cur[i].key == k
	}
	if i := modelFind(m.old, k.id()); i >= 0 && m.old[i].key == k {
		e := m.old[i]
		m.put(e)
		return e.c, true
	}
	return content{}, false
}

func (m *modelCache) put(e cacheEntry) {
	i := modelFind(m.cur, e.key.id())
	if i >= 0 {
		m.cur[i] = e
		return
	}
	if len(m.cur) >= m.max/2 {
		m.old, m.cur = m.cur, nil
	}
	m.cur = append(m.cur, e)
}

// TestHashCacheMatchesModel: random puts and gets (inodes colliding,
// several states per inode, two devices) answer exactly as the map model,
// for a one-shard and a sharded cache.
func TestHashCacheMatchesModel(t *testing.T) {
	for _, max := range []int{8, 1000, 2 * cacheShards * minShardEntries} {
		c := newHashCache(max)
		models := make([]*modelCache, len(c.shards))
		for i := range models {
			models[i] = &modelCache{max: c.shards[i].max}
		}
		rng := rand.New(rand.NewPCG(uint64(max), 7))
		inodes := uint64(3 * max)
		for op := 0; op < 100000; op++ {
			k := statKey{dev: 1 + rng.Uint64N(2), ino: rng.Uint64N(inodes), size: int64(rng.IntN(3)), mtime: int64(rng.IntN(2))}
			m := models[int(k.ino%uint64(len(c.shards)))]
			if rng.IntN(2) == 0 {
				v := content{sum: rng.Uint64(), class: NonEditableReason(rng.IntN(3))}
				c.put(k, v)
				m.put(cacheEntry{key: k, c: v})
				continue
			}
			got, gotOK := c.get(k)
			want, wantOK := m.get(k)
			if gotOK != wantOK || (gotOK && got != want) {
				t.Fatalf("max %d, op %d, %+v: got %+v %v, model %+v %v", max, op, k, got, gotOK, want, wantOK)
			}
		}
		n := 0
		for _, m := range models {
			n += len(m.cur) + len(m.old)
		}
		if c.len() != n || n > max {
			t.Fatalf("max %d: %d entries, model %d", max, c.len(), n)
		}
	}
}

// A cached revision is the formatted one, and only for the stat it was
// formatted for: a stat that differs only in what the cache key leaves out
// (mode, owner, link count) gets its own, formatted anew.
func TestCachedRevisionIsFormatted(t *testing.T) {
	st := unix.Stat_t{Dev: 7, Ino: 42, Mode: unix.S_IFREG | 0o644, Nlink: 1, Uid: 1000, Gid: 1000, Size: 12,
		Mtim: unix.Timespec{Sec: 100, Nsec: 5}, Ctim: unix.Timespec{Sec: 101, Nsec: 6}}
	c := content{sum: 0x1234_5678_9abc_def0}.withRevision(&st)
	if got, want := c.revision(&st), contentRevision(c.sum, &st); got != want || got != c.rev {
		t.Fatalf("revision %q, cached %q; want %q", got, c.rev, want)
	}
	for _, change := range []func(*unix.Stat_t){
		func(s *unix.Stat_t) { s.Mode = unix.S_IFREG | 0o600 },
		func(s *unix.Stat_t) { s.Uid++ },
		func(s *unix.Stat_t) { s.Gid++ },
		func(s *unix.Stat_t) { s.Nlink = 2 },
	} {
		other := st
		change(&other)
		if keyOf(&other) != keyOf(&st) {
			t.Fatal("the change moved the cache key")
		}
		got, want := c.revision(&other), contentRevision(c.sum, &other)
		if got != want || got == c.rev {
			t.Errorf("changed stat: revision %q; want %q (not the cached %q)", got, want, c.rev)
		}
	}
	if got, want := (&content{sum: c.sum}).revision(&st), c.rev; got != want {
		t.Errorf("uncached: %q; want %q", got, want)
	}
}
