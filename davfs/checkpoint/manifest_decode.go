package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// Reading a manifest back. The store may be on the agent's volume, so a
// manifest is whatever the agent wrote there: it is decoded as a stream,
// entry by entry, and refused (the checkpoint is damaged) before anything
// proportional to it is allocated when it holds more entries than its own
// description counts or than services.checkpoints.maxEntries allows, or an
// entry larger than one path of the path limits can need. Memory for one
// manifest is thus bounded by the configuration (maxEntries entries of at
// most maxPathLength bytes of path, within maxManifestBytes in all),
// whatever the file holds. A planted 8 MiB file of 2.8 million empty
// entries is refused at its first entry, or at the count: it costs a few
// KiB, not a GiB.

// manifestError is why a manifest is refused: a fixed text without a path
// or any content of the file, so it may be shown to the client.
type manifestError struct{ msg string }

func (e *manifestError) Error() string { return e.msg }

func badManifest(format string, args ...any) error {
	return &manifestError{msg: fmt.Sprintf(format, args...)}
}

// manifestEntryBytes bounds the JSON of one entry: a path of maxPath
// bytes, every byte escaped (\u00XX: 6 bytes), plus the other fields.
func manifestEntryBytes(maxPath int) int64 {
	return 6*int64(maxPath) + 1024
}

// manifestReadChunk bounds one read into the decoder, so the decoder's
// buffer holds at most one entry and one chunk.
const manifestReadChunk = 64 << 10

// boundedReader feeds a json.Decoder and refuses to read on while the
// decoder holds more than max bytes it has not consumed: one value (an
// entry, a key) larger than that is refused before it is buffered.
type boundedReader struct {
	r    io.Reader
	dec  *json.Decoder
	read int64
	max  int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.dec != nil && b.read-b.dec.InputOffset() > b.max {
		return 0, badManifest("an entry is larger than the path limits allow")
	}
	n, err := b.r.Read(p[:min(len(p), manifestReadChunk)])
	b.read += int64(n)
	return n, err
}

// manifestCount is how many entries meta's manifest must hold, refused
// when the description itself is out of bounds.
func (s *ckStore) manifestCount(meta *ckMeta) (int, error) {
	n := int64(meta.Files) + int64(meta.Dirs)
	switch {
	case meta.Files < 0 || meta.Dirs < 0:
		return 0, badManifest("its description holds a negative count")
	case n > int64(s.cfg.MaxEntries):
		return 0, badManifest("its description counts %d entries, more than services.checkpoints.maxEntries (%d)", n, s.cfg.MaxEntries)
	}
	return int(n), nil
}

// decodeManifest reads and decodes the manifest of meta's checkpoint in
// its ws/<key> directory dfd, bounded as described above, checking the
// shape of each entry (a path within the length limit, a file's hash);
// checkManifest validates the paths. An errno is the store's (the
// manifest could not be read); any other error means it is damaged.
func (s *ckStore) decodeManifest(dfd int, meta *ckMeta) (*ckManifest, error) {
	want, err := s.manifestCount(meta)
	if err != nil {
		return nil, err
	}
	fd, _, err := openSingle(dfd, meta.ID+".manifest", func(n int64) bool { return n <= maxManifestBytes }, "")
	if err != nil {
		if fdio.Errno(err) != 0 {
			return nil, err
		}
		return nil, badManifest("it is not a single-link regular file of at most %d MiB", maxManifestBytes>>20)
	}
	file := os.NewFile(uintptr(fd), "checkpoint-manifest")
	defer file.Close()
	maxPath := s.fs.cfg.MaxPathLength
	br := &boundedReader{r: io.LimitReader(file, maxManifestBytes), max: manifestEntryBytes(maxPath)}
	dec := json.NewDecoder(br)
	br.dec = dec
	m, err := decodeManifestStream(dec, want, maxPath)
	if err != nil {
		var me *manifestError
		if errors.As(err, &me) || fdio.Errno(err) != 0 {
			return nil, err
		}
		return nil, badManifest("it is not a valid manifest (JSON)")
	}
	return m, nil
}

// decodeManifestStream decodes {"version": N, "entries": [...]} from dec:
// exactly want entries, each within maxPath bytes of path.
func decodeManifestStream(dec *json.Decoder, want, maxPath int) (*ckManifest, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	m := &ckManifest{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, badManifest("a key is repeated")
		}
		seen[key] = true
		switch key {
		case "version":
			err = dec.Decode(&m.Version)
		case "entries":
			m.Entries, err = decodeEntries(dec, want, maxPath)
		default:
			return nil, badManifest("it holds an unknown key")
		}
		if err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badManifest("it holds data after its end")
	}
	if len(m.Entries) != want {
		return nil, badManifest("it holds %d entries where its description counts %d", len(m.Entries), want)
	}
	return m, nil
}

// decodeEntries decodes the entries array, refusing its (want+1)th entry
// before decoding it. Memory: want entries (bounded by maxEntries), each
// of one entry's bounded size.
func decodeEntries(dec *json.Decoder, want, maxPath int) ([]ckEntry, error) {
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	out := make([]ckEntry, 0, want)
	for dec.More() {
		if len(out) == want {
			return nil, badManifest("it holds more entries than its description counts (%d)", want)
		}
		out = append(out, ckEntry{})
		e := &out[len(out)-1]
		if err := dec.Decode(e); err != nil {
			return nil, err
		}
		if err := entryShape(e, maxPath); err != nil {
			return nil, fmt.Errorf("entry %d: %w", len(out)-1, err)
		}
	}
	return out, expectDelim(dec, ']')
}

// entryShape checks what an entry must be whatever its path means: a
// path of 1 to maxPath bytes, sizes and offsets >= 0, a directory without
// content, a file with a valid hash.
func entryShape(e *ckEntry, maxPath int) error {
	switch {
	case e.Path == "" || len(e.Path) > maxPath:
		return badManifest("an entry has an empty path or one longer than maxPathLength")
	case e.Size < 0 || e.Off < 0:
		return badManifest("an entry has a negative size or offset")
	case e.Dir && (e.Hash != "" || e.Pack != "" || e.Size != 0):
		return badManifest("a directory entry has content")
	case !e.Dir && !validHash(e.Hash):
		return badManifest("a file entry has an invalid hash")
	}
	return nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return badManifest("it ends early")
		}
		return err
	}
	if tok != d {
		return badManifest("it is not a valid manifest (expected %q)", d.String())
	}
	return nil
}

// errDamaged: a stored checkpoint that fails validation. Nothing has been
// changed when it is returned; the checkpoint can only be deleted. The
// cause is shown when it is a manifestError (a fixed text); other causes
// (validation of paths: entry indices only) are shown too, since they name
// no path either.
func errDamaged(id string, cause error) *davfs.Error {
	why := "its stored manifest is invalid"
	if cause != nil {
		why = "its stored manifest is invalid: " + cause.Error()
	}
	return newErr(davfs.CodeDataLoss, davfs.ReasonCheckpointDamaged, cause,
		"checkpoint %q is damaged (%s); nothing was changed; delete it", id, why)
}
