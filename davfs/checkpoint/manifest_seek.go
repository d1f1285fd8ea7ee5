package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// A manifest written by writeManifest is framed: manifestPrefix, then its
// entries one per line (a raw newline appears nowhere else: JSON escapes
// it inside strings), each line but the first starting with ",", then
// "]}". Its entries are sorted by path, so one path is found by a binary
// search over byte offsets that decodes about log2(size) entries (26 for a
// 50 MiB manifest) instead of all of them: a path list (?path=) of a
// 200,000-entry checkpoint then takes milliseconds, not the second a
// streamed decode takes.
//
// What it trusts: the framing and the order, checked only where it looks.
// A tampered or unsorted manifest can make a path list name a checkpoint
// that does not hold the path, or leave out one that does; compare and
// restore validate the whole manifest and report it damaged. A manifest
// not framed this way (written before, by json.Marshal) is streamed.

const manifestPrefix = `{"version":1,"entries":[`

// seekChunk is how much seekHolds reads at a time: more than one entry
// (a path is at most MaxPathLength bytes, escaped at most 6 bytes a byte
// for control characters; davfs refuses those in names anyway).
const seekChunk = 64 << 10

// seekHolds reports whether the framed manifest in r (size bytes) has an
// entry at path p. ok is false when r is not framed that way (the caller
// streams it instead).
func seekHolds(r io.ReaderAt, size int64, p string) (found, ok bool) {
	path, end, _, ok := seekFirst(r, size, p)
	return ok && end >= 0 && path == p, ok
}

// seekFirst finds the first entry of the framed manifest r (size bytes)
// whose path is at or after p: its path, the offset just past its line
// (end, -1 when there is none) and the offset where it starts. ok is false
// when r is not framed (see above).
func seekFirst(r io.ReaderAt, size int64, p string) (path string, end, at int64, ok bool) {
	start := int64(len(manifestPrefix))
	head := make([]byte, min(size, start+seekChunk))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return "", 0, 0, false
	}
	if !bytes.HasPrefix(head, []byte(manifestPrefix)) {
		return "", 0, 0, false
	}
	if bytes.HasPrefix(head[start:], []byte("]}")) {
		return "", -1, start, true // no entries
	}
	if bytes.IndexByte(head[start:], '\n') < 0 {
		return "", 0, 0, false // not framed (or an entry longer than a chunk)
	}
	lo, hi := start, size
	for lo < hi {
		mid := lo + (hi-lo)/2
		path, end, _, err := entryFrom(r, size, start, mid)
		switch {
		case err != nil:
			return "", 0, 0, false
		case end < 0 || path >= p:
			hi = mid // every entry starting at mid or later is at or after p
		default:
			lo = end // every entry starting before end is before p
		}
	}
	path, end, at, err := entryFrom(r, size, start, lo)
	if err != nil {
		return "", 0, 0, false
	}
	return path, end, at, true
}

// seekScope is the part of the framed manifest r (size bytes) within
// scope: the entries from the first at or after scope to the last before
// scope + "0" (scopeRange), read line by line and kept when within scope;
// limit bounds how many are read. ok is false when r is not framed, a line
// is not an entry, or the paths read are not strictly sorted.
func seekScope(r io.ReaderAt, size int64, scope string, limit int) (es []ckEntry, ok bool) {
	_, end, at, ok := seekFirst(r, size, scope)
	if !ok || end < 0 {
		return nil, ok
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r, at, size-at), seekChunk)
	prev := ""
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		if err != nil || n >= limit {
			return nil, false
		}
		var e ckEntry
		if json.Unmarshal(bytes.TrimPrefix(line, []byte(",")), &e) != nil || (n > 0 && e.Path <= prev) {
			return nil, false
		}
		if e.Path >= scope+"0" {
			return es, true
		}
		if within(e.Path, scope) {
			es = append(es, e)
		}
		prev = e.Path
		if b, _ := br.Peek(2); string(b) == "]}" {
			return es, true
		}
	}
}

// entryFrom decodes the path of the first entry of the framed manifest r
// that starts at or after off (the first starts at start, each other one
// right after "\n,"), and returns the offset just past its line; end is -1
// when no entry starts at or after off.
func entryFrom(r io.ReaderAt, size, start, off int64) (path string, end, at int64, err error) {
	q := off
	if q > start {
		// The first "\n," at or after off-2: the entry right after it is
		// the first starting at or after off.
		from := off - 2
		b, err := readChunk(r, size, from)
		if err != nil {
			return "", 0, 0, err
		}
		i := bytes.Index(b, []byte("\n,"))
		if i < 0 {
			if from+int64(len(b)) == size && bytes.HasSuffix(b, []byte("]}")) {
				return "", -1, 0, nil // past the last entry
			}
			return "", 0, 0, errManifestStream
		}
		q = from + int64(i) + 2
	}
	b, err := readChunk(r, size, q)
	if err != nil {
		return "", 0, 0, err
	}
	n := bytes.IndexByte(b, '\n')
	if n < 0 {
		return "", 0, 0, errManifestStream
	}
	var e ckPath
	if json.Unmarshal(b[:n], &e) != nil {
		return "", 0, 0, errManifestStream
	}
	return e.Path, q + int64(n) + 1, q, nil
}

// readChunk reads up to seekChunk bytes of r at off (fewer at its end).
func readChunk(r io.ReaderAt, size, off int64) ([]byte, error) {
	if off >= size {
		return nil, nil
	}
	b := make([]byte, min(seekChunk, size-off))
	if _, err := r.ReadAt(b, off); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}
