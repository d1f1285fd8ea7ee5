package checkpoint

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// The in-memory side of manifests (issue #23, "memory and time bounded by
// the configuration"): a manifest of maxEntries (200,000) names is about
// 45 MiB decoded and 50 MiB encoded, so nothing here holds a second full
// copy of one: it is encoded straight into its temp file, looked up by
// binary search in its sorted entries rather than through a map of them,
// cut to a scope by a range search rather than a filtered copy, and kept
// decoded in the cache only while the cached entries stay within one
// maximal manifest's worth.

// writeManifest encodes m into w entry by entry (the same JSON as
// json.Marshal of m, with a newline after each entry), failing with
// CHECKPOINT_LIMIT once it would exceed maxManifestBytes, so that every
// manifest written can be read back.
func writeManifest(w io.Writer, m *ckManifest) error {
	cw := &cappedWriter{w: w, left: maxManifestBytes}
	bw := bufio.NewWriterSize(cw, 64<<10)
	if _, err := bw.WriteString(`{"version":1,"entries":[`); err != nil {
		return err
	}
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range m.Entries {
		if i > 0 {
			if err := bw.WriteByte(','); err != nil {
				return err
			}
		}
		if err := enc.Encode(&m.Entries[i]); err != nil {
			return err
		}
	}
	if _, err := bw.WriteString("]}"); err != nil {
		return err
	}
	return bw.Flush()
}

// errManifestTooLarge: the manifest being written would exceed
// maxManifestBytes.
var errManifestTooLarge = errors.New("manifest larger than maxManifestBytes")

// cappedWriter passes at most left bytes to w, then fails.
type cappedWriter struct {
	w    io.Writer
	left int64
}

func (c *cappedWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > c.left {
		return 0, errManifestTooLarge
	}
	c.left -= int64(len(b))
	return c.w.Write(b)
}

// writeAtomicManifest writes m as name in dirfd (O_RDONLY) the way
// writeAtomic writes bytes: encoded into a temp file in tmp/ (removed
// again on any error), fsynced, renamed, dirfd fsynced.
func (s *ckStore) writeAtomicManifest(dirfd int, name string, m *ckManifest) error {
	t, err := fdio.CreateTemp(s.tmpfd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(t.FD), "manifest")
	err = writeManifest(f, m)
	if err == nil {
		err = f.Sync()
	}
	f.Close() // closes t.fd
	if err == nil {
		err = unix.Renameat(s.tmpfd, t.Name, dirfd, name)
	}
	if err != nil {
		unix.Unlinkat(s.tmpfd, t.Name, 0)
		if errors.Is(err, errManifestTooLarge) {
			return errCheckpointLimit("its list of entries is larger than a manifest may be (long paths); checkpoint a part of the workspace")
		}
		return err
	}
	return fdio.FsyncDir(dirfd)
}

// scopeRange is the part of the sorted entries es that may lie within
// scope: from scope itself to the last name that starts with scope + "/"
// ('/' + 1 is '0'). Names such as scope + "-x" sort inside that range too,
// so callers still test within.
func scopeRange(es []ckEntry, scope string) []ckEntry {
	if scope == "" {
		return es
	}
	cmp := func(e ckEntry, p string) int { return strings.Compare(e.Path, p) }
	lo, _ := slices.BinarySearchFunc(es, scope, cmp)
	hi, _ := slices.BinarySearchFunc(es[lo:], scope+"0", cmp)
	return es[lo : lo+hi]
}

// findEntry is the entry of the sorted es at path p, or nil.
func findEntry(es []ckEntry, p string) *ckEntry {
	if i, ok := slices.BinarySearchFunc(es, p, func(e ckEntry, p string) int { return strings.Compare(e.Path, p) }); ok {
		return &es[i]
	}
	return nil
}

// manifestCacheEntries bounds the entries the manifest cache holds decoded,
// all manifests together: one manifest of the default maxEntries (a bigger
// one is cached alone). A 10,000-file project keeps its few recent
// manifests; a 200,000-file one keeps only the last.
const manifestCacheEntries = DefaultCheckpointEntries

// trimCache drops the oldest cached manifests (after the first, the most
// recent) until the entries held fit manifestCacheEntries. cacheMu held.
func (s *ckStore) trimCache() {
	n := 0
	for i, c := range s.manifests {
		n += len(c.m.Entries)
		if i > 0 && n > max(manifestCacheEntries, s.cfg.MaxEntries) {
			clear(s.manifests[i:])
			s.manifests = s.manifests[:i]
			return
		}
	}
}

// makeRoom drops cached manifests, the oldest first, until n more entries
// fit manifestCacheEntries, before a manifest of n entries is decoded: the
// cache then never holds one that the decoded one will push out anyway.
func (s *ckStore) makeRoom(n int) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	held := 0
	for _, c := range s.manifests {
		held += len(c.m.Entries)
	}
	for len(s.manifests) > 0 && held+max(n, 0) > max(manifestCacheEntries, s.cfg.MaxEntries) {
		last := len(s.manifests) - 1
		held -= len(s.manifests[last].m.Entries)
		s.manifests[last] = cachedManifest{}
		s.manifests = s.manifests[:last]
	}
}

// internPacks makes every entry of m that names a pack share one string
// per pack (decoding gives each entry its own copy of the 24 bytes; a
// manifest names a few packs).
func internPacks(m *ckManifest) {
	packs := map[string]string{}
	for i := range m.Entries {
		e := &m.Entries[i]
		if e.Pack == "" {
			continue
		}
		if p, ok := packs[e.Pack]; ok {
			e.Pack = p
		} else {
			packs[e.Pack] = e.Pack
		}
	}
}

// holds reports whether the checkpoint id of ws (a description that was
// read) has an entry at path p, without decoding its manifest: from the
// cache when it is there, else by streaming the stored manifest's paths
// (one entry decoded at a time, only its path kept) up to the first path
// not before p, the paths being sorted. A manifest that cannot be read,
// whose paths are not strictly sorted, or that holds more than maxEntries
// names before p, holds nothing (compare and restore, which validate it
// whole, report it damaged).
func (s *ckStore) holds(ws davfs.Workspace, id, p string) bool {
	if m := s.cached(ckWorkspaceKey(ws) + "/" + id); m != nil {
		return findEntry(m.Entries, p) != nil
	}
	f, size, err := openManifest(s, ws, id)
	if err != nil {
		return false
	}
	defer f.Close()
	if found, ok := seekHolds(f, size, p); ok {
		return found
	}
	found := false
	err = streamEntries(bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10), max(s.cfg.MaxEntries, DefaultCheckpointEntries),
		func(e *ckPath) string { return e.Path }, func(e *ckPath) bool {
			found = e.Path == p
			return e.Path < p
		})
	return err == nil && found
}

// ckPath is what holds decodes of each entry: its path only (the other
// fields are scanned, never allocated).
type ckPath struct {
	Path string `json:"p"`
}

// scopedManifest is the part of the checkpoint id of ws within scope (a
// reference for a capture of that scope: newScanner), without decoding
// the rest of it or caching it: the cached manifest when it is there,
// else the entries of scope streamed from the stored one, each checked as
// far as a reference needs (checkManifest's per-entry rules), or nil when
// it cannot be read or is invalid (a capture then reads every file).
func (s *ckStore) scopedManifest(ws davfs.Workspace, id, scope string) *ckManifest {
	if m := s.cached(ckWorkspaceKey(ws) + "/" + id); m != nil {
		return m
	}
	f, size, err := openManifest(s, ws, id)
	if err != nil {
		return nil
	}
	defer f.Close()
	limit := max(s.cfg.MaxEntries, DefaultCheckpointEntries)
	m := &ckManifest{Version: 1}
	es, ok := seekScope(f, size, scope, limit) // framed: a binary search to the scope
	if !ok {
		es = nil
		err = streamEntries(bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10), limit, entryPath, func(e *ckEntry) bool {
			if within(e.Path, scope) {
				es = append(es, *e)
			}
			return scope == "" || e.Path < scope+"0" // past scopeRange: done
		})
	}
	if err != nil || slices.ContainsFunc(es, func(e ckEntry) bool { return !validRef(&e) }) {
		return nil
	}
	m.Entries = es
	internPacks(m)
	return m
}

// validRef applies checkManifest's per-entry rules that a reference for a
// capture relies on (newScanner checks the hash itself).
func validRef(e *ckEntry) bool {
	return e.Mode&^0o7777 == 0 && e.Size >= 0 && e.Off >= 0 && (e.Pack == "" || checkpointIDRE.MatchString(e.Pack))
}

func entryPath(e *ckEntry) string { return e.Path }

// streamManifest streams the entries of the stored manifest of the
// checkpoint id of s's workspace ws to fn, one decoded at a time (as a T,
// whose path is path), while fn returns true. Paths must be strictly
// sorted; at most maxEntries are read.
func streamManifest[T any](s *ckStore, ws davfs.Workspace, id string, path func(*T) string, fn func(*T) bool) error {
	f, _, err := openManifest(s, ws, id)
	if err != nil {
		return err
	}
	defer f.Close()
	return streamEntries(bufio.NewReaderSize(f, 64<<10), max(s.cfg.MaxEntries, DefaultCheckpointEntries), path, fn)
}

// openManifest opens the stored manifest of the checkpoint id of s's
// workspace ws (never through a symlink; a single-link regular file within
// maxManifestBytes) and returns it with its size.
func openManifest(s *ckStore, ws davfs.Workspace, id string) (*os.File, int64, error) {
	dfd, err := s.wsDir(ws)
	if err != nil {
		return nil, 0, err
	}
	defer unix.Close(dfd)
	fd, size, err := openSingle(dfd, id+".manifest", func(n int64) bool { return n <= maxManifestBytes }, "not a single-link regular file within bounds")
	if err != nil {
		return nil, 0, err
	}
	return os.NewFile(uintptr(fd), "manifest"), size, nil
}

// maxStreamedPath bounds the path of a streamed entry: the largest
// maxPathLength the sidecar's configuration accepts.
const maxStreamedPath = 64 << 10

// errManifestStream: a streamed manifest is not a JSON object whose
// "entries" is a list of entries with strictly sorted paths, within the
// limit.
var errManifestStream = errors.New("manifest entries are invalid")

// streamEntries reads a manifest's JSON from r and calls fn with each of
// its entries, decoded as a T whose path is path (at most limit, paths
// strictly sorted), while fn returns true.
func streamEntries[T any](r io.Reader, limit int, path func(*T) string, fn func(*T) bool) error {
	// One entry never buffers more than the longest path any configuration
	// allows (checkpoint_manifest_decode.go).
	br := &boundedReader{r: r, max: manifestEntryBytes(maxStreamedPath)}
	dec := json.NewDecoder(br)
	br.dec = dec
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errManifestStream
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return errManifestStream
		}
		if k != "entries" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return errManifestStream
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return errManifestStream
		}
		prev := ""
		for n := 0; dec.More(); n++ {
			var e T
			if n >= limit || dec.Decode(&e) != nil || (n > 0 && path(&e) <= prev) {
				return errManifestStream
			}
			if !fn(&e) {
				return nil
			}
			prev = path(&e)
		}
		return nil
	}
	return nil
}
