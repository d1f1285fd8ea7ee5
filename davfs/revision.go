package davfs

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

// Revisions (docs/architecture.md "Revisions"). A revision is opaque; its shape is:
//
//	"c" + hex(xxh64(content)) + hex(xxh64(stat))  a regular file up to the
//	                                              editable limit, single link
//	"s" + hex(xxh64(stat))                        a larger or multi-link file:
//	                                              stat alone (no content read)
//	"d" + hex(xxh64(stat))                        a directory: its own stat
//
// where stat is (dev, ino, mode, nlink, size, mtime ns, ctime ns). Any write
// through the file system changes ctime, and davfs replaces files by rename
// (a new inode), so stat alone already moves on every change that the kernel
// timestamps; the content hash covers writes within one timestamp tick.
//
// Content hashes are cached by (dev, ino, size, mtime, ctime) so listings do
// not re-read unchanged files. A hash is only cached when the file's ctime is
// older than cacheMinAge: a write in the same coarse timestamp tick as the
// hashed state would leave the key unchanged (the "racy git" problem), and
// checking age first rules that out. A directory revision has no such
// guard: two changes within one tick may share a revision (kernels with
// multigrain timestamps, 6.13+, make that rare).

const (
	defaultCacheEntries = 1 << 16
	cacheMinAge         = 100 * time.Millisecond
)

// statKey identifies a file's content state.
type statKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func keyOf(st *unix.Stat_t) statKey {
	return statKey{dev: st.Dev, ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// content is what the hash pass learns about a file's bytes.
type content struct {
	sum   uint64
	class NonEditableReason // EditableOK, NotEditableBinary or NotEditableNotUTF8
	// rev is contentRevision(sum, st) for the stat st the content was
	// cached with, so a listing of unchanged files formats no revision;
	// revFor is what of st the cache key leaves out, and rev applies only
	// to a stat equal in those too. "" when not formatted.
	rev    string
	revFor revExtra
}

// revExtra is the part of a stat that statSum covers and statKey does not.
type revExtra struct {
	mode, uid, gid uint32
	nlink          uint64
}

func extraOf(st *unix.Stat_t) revExtra {
	return revExtra{mode: st.Mode, uid: st.Uid, gid: st.Gid, nlink: uint64(st.Nlink)}
}

// revision is the content revision of the file whose stat is st (its
// statKey the one c was found under): the cached string when it was made
// for the same stat, else formatted.
func (c *content) revision(st *unix.Stat_t) string {
	if c.rev != "" && c.revFor == extraOf(st) {
		return c.rev
	}
	return contentRevision(c.sum, st)
}

// withRevision is c with the revision of the stat st formatted into it.
func (c content) withRevision(st *unix.Stat_t) content {
	c.rev, c.revFor = contentRevision(c.sum, st), extraOf(st)
	return c
}

// hashCache is a bounded, concurrency-safe map from statKey to content,
// split into shards by inode so parallel listings do not queue on one
// mutex. Each shard keeps two generations: when the current one is full it
// becomes the old one and the previous old one is dropped (an approximate
// LRU at O(1)); a hit in the old generation moves the entry to the current
// one. A shard holds at most max entries (max/2 per generation).
type hashCache struct {
	shards []cacheShard
}

type cacheEntry struct {
	key statKey
	c   content
}

// The generations are keyed by a file's identity (device and inode), not
// by the full statKey: a file has one current content state, so an entry
// for an older state of the same inode is replaced rather than kept beside
// it. The full key is compared on every hit.
type cacheShard struct {
	mu       sync.Mutex
	cur, old map[fdIdentity]cacheEntry
	max      int
	_        [64]byte // keep shards' mutexes on separate cache lines
}

// cacheShards is the shard count of a cache of at least
// cacheShards*minShardEntries entries; smaller caches have one shard.
const (
	cacheShards     = 16
	minShardEntries = 1024
)

func newHashCache(max int) *hashCache {
	if max < 2 {
		max = 2
	}
	n := 1
	if max >= cacheShards*minShardEntries {
		n = cacheShards
	}
	c := &hashCache{shards: make([]cacheShard, n)}
	for i := range c.shards {
		c.shards[i].max = max / n
	}
	return c
}

func (k *statKey) id() fdIdentity { return fdIdentity{dev: k.dev, ino: k.ino} }

func (c *hashCache) shard(k *statKey) *cacheShard {
	return &c.shards[int(k.ino%uint64(len(c.shards)))]
}

func (c *hashCache) get(k statKey) (content, bool) {
	s := c.shard(&k)
	id := k.id()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.cur[id]; ok {
		return e.c, e.key == k
	}
	if e, ok := s.old[id]; ok && e.key == k {
		s.putLocked(id, e)
		return e.c, true
	}
	return content{}, false
}

func (c *hashCache) put(k statKey, v content) {
	s := c.shard(&k)
	s.mu.Lock()
	s.putLocked(k.id(), cacheEntry{key: k, c: v})
	s.mu.Unlock()
}

func (s *cacheShard) putLocked(id fdIdentity, e cacheEntry) {
	if _, ok := s.cur[id]; !ok && len(s.cur) >= s.max/2 {
		s.old, s.cur = s.cur, nil
	}
	if s.cur == nil {
		s.cur = make(map[fdIdentity]cacheEntry)
	}
	s.cur[id] = e
}

func (c *hashCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.cur) + len(s.old)
		s.mu.Unlock()
	}
	return n
}

func statSum(st *unix.Stat_t) uint64 {
	var b [56]byte
	binary.LittleEndian.PutUint64(b[0:], st.Dev)
	binary.LittleEndian.PutUint64(b[8:], st.Ino)
	binary.LittleEndian.PutUint64(b[16:], uint64(st.Mode)<<32|uint64(uint32(st.Nlink)))
	binary.LittleEndian.PutUint64(b[24:], uint64(st.Size))
	binary.LittleEndian.PutUint64(b[32:], uint64(st.Mtim.Nano()))
	binary.LittleEndian.PutUint64(b[40:], uint64(st.Ctim.Nano()))
	binary.LittleEndian.PutUint64(b[48:], uint64(st.Uid)<<32|uint64(st.Gid))
	return xxhash.Sum64(b[:])
}

func hex64(dst []byte, v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return hex.AppendEncode(dst, b[:])
}

func dirRevision(st *unix.Stat_t) string {
	return string(hex64([]byte{'d'}, statSum(st)))
}

func statRevision(st *unix.Stat_t) string {
	return string(hex64([]byte{'s'}, statSum(st)))
}

func contentRevision(sum uint64, st *unix.Stat_t) string {
	b := make([]byte, 0, 33)
	b = append(b, 'c')
	b = hex64(b, sum)
	return string(hex64(b, statSum(st)))
}

// classify says whether b is editable text: valid UTF-8 without NUL.
func classify(b []byte) NonEditableReason {
	if bytes.IndexByte(b, 0) >= 0 {
		return NotEditableBinary
	}
	if !utf8.Valid(b) {
		return NotEditableNotUTF8
	}
	return EditableOK
}

func contentOf(b []byte) content {
	return content{sum: xxhash.Sum64(b), class: classify(b)}
}

// hashedByContent reports whether a regular file's revision includes its
// content: single link and not above the editable limit.
func (f *FS) hashedByContent(st *unix.Stat_t) bool {
	return st.Nlink == 1 && st.Size <= f.cfg.MaxEditableFileSize
}

// cacheable reports whether a hash taken of the state st may be cached.
func cacheable(st *unix.Stat_t) bool {
	return time.Since(changeTime(st)) > cacheMinAge
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// fileContent returns the content facts of the open regular file fd whose
// fstat is st, using the cache. If keep is true the bytes are returned too
// (ReadFile). st is refreshed when the file changed while being read.
func (f *FS) fileContent(fd int, st *unix.Stat_t, keep bool) (content, []byte, error) {
	return f.fileContentInto(fd, st, keep, nil)
}

// fileContentInto is fileContent reading kept bytes into dst's array when
// it is large enough.
func (f *FS) fileContentInto(fd int, st *unix.Stat_t, keep bool, dst []byte) (content, []byte, error) {
	if !keep {
		if c, ok := f.cache.get(keyOf(st)); ok {
			return c, nil, nil
		}
	}
	for attempt := 0; ; attempt++ {
		buf := dst
		var pooled *[]byte
		if !keep {
			pooled = bufPool.Get().(*[]byte)
			buf = *pooled
		}
		data, ok, err := fdio.ReadAllAt(fd, st.Size, buf)
		if err != nil {
			if pooled != nil {
				bufPool.Put(pooled)
			}
			return content{}, nil, err
		}
		var after unix.Stat_t
		if err := unix.Fstat(fd, &after); err != nil {
			return content{}, nil, err
		}
		if ok && keyOf(&after) == keyOf(st) {
			c, hit := f.cache.get(keyOf(st))
			if !hit {
				c = contentOf(data).withRevision(st)
				if cacheable(st) {
					f.cache.put(keyOf(st), c)
				}
			}
			if pooled != nil {
				*pooled = data[:0]
				bufPool.Put(pooled)
				data = nil
			}
			return c, data, nil
		}
		if pooled != nil {
			*pooled = data[:0]
			bufPool.Put(pooled)
		}
		// The file changed while we read it: take the new state.
		*st = after
		if attempt == 4 || !f.hashedByContent(st) {
			return content{}, nil, errBusy
		}
	}
}

// errBusy: a file kept changing while davfs read it.
var errBusy = errors.New("davfs: file kept changing while being read")

// textScan hashes and classifies a stream chunk by chunk (WriteStream), with
// the same result as contentOf on the concatenation.
type textScan struct {
	d     *xxhash.Digest
	class NonEditableReason
	carry []byte // an incomplete UTF-8 sequence at the end of the last chunk
}

func newTextScan() *textScan { return &textScan{d: xxhash.New()} }

func (t *textScan) write(b []byte) {
	t.d.Write(b)
	if t.class == NotEditableBinary {
		return
	}
	if bytes.IndexByte(b, 0) >= 0 {
		t.class = NotEditableBinary
		return
	}
	if t.class != EditableOK {
		return
	}
	if len(t.carry) > 0 {
		// Complete the carried sequence with up to 3 bytes of b.
		need := min(len(b), utf8.UTFMax-len(t.carry))
		joined := append(append([]byte{}, t.carry...), b[:need]...)
		r, size := utf8.DecodeRune(joined)
		switch {
		case r == utf8.RuneError && size <= 1 && !utf8.FullRune(joined):
			t.carry = joined // still incomplete (b was tiny)
			return
		case r == utf8.RuneError && size <= 1:
			t.class = NotEditableNotUTF8
			return
		}
		b = b[size-len(t.carry):]
		t.carry = t.carry[:0]
	}
	// Hold back a trailing incomplete rune.
	tail := 0
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				tail = len(b) - i
			}
			break
		}
	}
	if !utf8.Valid(b[:len(b)-tail]) {
		t.class = NotEditableNotUTF8
		return
	}
	t.carry = append(t.carry[:0], b[len(b)-tail:]...)
}

func (t *textScan) result() content {
	c := content{sum: t.d.Sum64(), class: t.class}
	if c.class == EditableOK && len(t.carry) > 0 {
		c.class = NotEditableNotUTF8
	}
	return c
}
