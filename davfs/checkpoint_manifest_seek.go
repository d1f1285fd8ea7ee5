package davfs

import (
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
	start := int64(len(manifestPrefix))
	head := make([]byte, min(size, start+seekChunk))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return false, false
	}
	if !bytes.HasPrefix(head, []byte(manifestPrefix)) {
		return false, false
	}
	if bytes.HasPrefix(head[start:], []byte("]}")) {
		return false, true // no entries
	}
	if bytes.IndexByte(head[start:], '\n') < 0 {
		return false, false // not framed (or an entry longer than a chunk)
	}
	lo, hi := start, size
	for lo < hi {
		mid := lo + (hi-lo)/2
		path, end, err := entryFrom(r, size, start, mid)
		switch {
		case err != nil:
			return false, false
		case end < 0 || path >= p:
			hi = mid // every entry starting at mid or later is at or after p
		default:
			lo = end // every entry starting before end is before p
		}
	}
	path, end, err := entryFrom(r, size, start, lo)
	if err != nil {
		return false, false
	}
	return end >= 0 && path == p, true
}

// entryFrom decodes the path of the first entry of the framed manifest r
// that starts at or after off (the first starts at start, each other one
// right after "\n,"), and returns the offset just past its line; end is -1
// when no entry starts at or after off.
func entryFrom(r io.ReaderAt, size, start, off int64) (path string, end int64, err error) {
	q := off
	if q > start {
		// The first "\n," at or after off-2: the entry right after it is
		// the first starting at or after off.
		from := off - 2
		b, err := readChunk(r, size, from)
		if err != nil {
			return "", 0, err
		}
		i := bytes.Index(b, []byte("\n,"))
		if i < 0 {
			if from+int64(len(b)) == size && bytes.HasSuffix(b, []byte("]}")) {
				return "", -1, nil // past the last entry
			}
			return "", 0, errManifestStream
		}
		q = from + int64(i) + 2
	}
	b, err := readChunk(r, size, q)
	if err != nil {
		return "", 0, err
	}
	n := bytes.IndexByte(b, '\n')
	if n < 0 {
		return "", 0, errManifestStream
	}
	var e ckPath
	if json.Unmarshal(b[:n], &e) != nil {
		return "", 0, errManifestStream
	}
	return e.Path, q + int64(n) + 1, nil
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
