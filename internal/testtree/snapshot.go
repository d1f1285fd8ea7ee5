package testtree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Entry is what a Snapshot records of one name, never following a
// symlink. Type, Size, Sum (sha256 of a regular file) and Link (a
// symlink's target) are always recorded; Mode, MTime (regular files) and
// UID/GID only when asked for (with AllMTimes, the MTime of directories
// and symlinks too), so that two trees written at different times or by
// different owners still compare equal where a test wants.
type Entry struct {
	Type     string // "dir", "file", "symlink" or "special"
	Mode     fs.FileMode
	Size     int64
	Sum      string
	Link     string
	MTime    int64
	UID, GID int
}

func (e Entry) String() string {
	s := e.Type
	if e.Mode != 0 {
		s += " " + e.Mode.String()
	}
	switch e.Type {
	case "file":
		s += fmt.Sprintf(" size=%d sha256=%.12s", e.Size, e.Sum)
	case "symlink":
		s += " -> " + e.Link
	}
	if e.MTime != 0 {
		s += fmt.Sprintf(" mtime=%d", e.MTime)
	}
	if e.UID != 0 || e.GID != 0 {
		s += fmt.Sprintf(" owner=%d:%d", e.UID, e.GID)
	}
	return s
}

// Snapshot maps every name under a root (slash-separated, relative; the
// root itself is ".") to its Entry.
type Snapshot map[string]Entry

// Option widens or narrows what Snap records.
type Option func(*snapConfig)

type snapConfig struct {
	mode, mtime, allMTimes, owner, noRoot bool
	skip                                  func(rel string) bool
}

// Modes records each name's mode (type and permission bits).
func Modes() Option { return func(c *snapConfig) { c.mode = true } }

// MTimes records each regular file's modification time.
func MTimes() Option { return func(c *snapConfig) { c.mtime = true } }

// AllMTimes records every name's modification time: directories' and
// symlinks' too.
func AllMTimes() Option { return func(c *snapConfig) { c.mtime, c.allMTimes = true, true } }

// Owners records each name's UID and GID.
func Owners() Option { return func(c *snapConfig) { c.owner = true } }

// WithoutRoot leaves the root itself (".") out.
func WithoutRoot() Option { return func(c *snapConfig) { c.noRoot = true } }

// Skip leaves out the names for which skip returns true (and, for a
// directory, everything under it).
func Skip(skip func(rel string) bool) Option { return func(c *snapConfig) { c.skip = skip } }

// SkipTop leaves out the given names at the top level and what is under them.
func SkipTop(names ...string) Option {
	return Skip(func(rel string) bool { return slices.Contains(names, strings.Split(rel, "/")[0]) })
}

// Snap records every name under root; any error reading the tree fails the test.
func Snap(t testing.TB, root string, opts ...Option) Snapshot {
	t.Helper()
	var c snapConfig
	for _, o := range opts {
		o(&c)
	}
	out := Snapshot{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(r)
		if rel == "." && c.noRoot {
			return nil
		}
		if rel != "." && c.skip != nil && c.skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		e, err := entryOf(p, c)
		out[rel] = e
		return err
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", filepath.Base(root), err)
	}
	return out
}

func entryOf(p string, c snapConfig) (Entry, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if c.mode {
		e.Mode = fi.Mode()
	}
	if c.allMTimes {
		e.MTime = fi.ModTime().UnixNano()
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && c.owner {
		e.UID, e.GID = int(st.Uid), int(st.Gid)
	}
	switch {
	case fi.Mode().IsRegular():
		e.Type, e.Size = "file", fi.Size()
		if c.mtime {
			e.MTime = fi.ModTime().UnixNano()
		}
		e.Sum, err = sumOf(p)
	case fi.IsDir():
		e.Type = "dir"
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type = "symlink"
		e.Link, err = os.Readlink(p)
	default:
		e.Type = "special"
	}
	return e, err
}

func sumOf(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Diff lists, sorted, every name added, removed or changed from before to after.
func Diff(before, after Snapshot) []string {
	var d []string
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			d = append(d, "removed "+k+" ("+b.String()+")")
		case a != b:
			d = append(d, "changed "+k+": "+b.String()+" -> "+a.String())
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "added "+k+" ("+a.String()+")")
		}
	}
	slices.Sort(d)
	return d
}

// Same fails the test (and goes on) if after differs from before, naming
// every difference under what.
func Same(t testing.TB, what string, before, after Snapshot) {
	t.Helper()
	if d := Diff(before, after); len(d) > 0 {
		t.Errorf("%s:\n%s", what, strings.Join(d, "\n"))
	}
}

// MustSame is Same, stopping the test.
func MustSame(t testing.TB, what string, before, after Snapshot) {
	t.Helper()
	if d := Diff(before, after); len(d) > 0 {
		t.Fatalf("%s:\n%s", what, strings.Join(d, "\n"))
	}
}

// Without is s less the names for which drop returns true (s is left as it
// was): for comparing two snapshots where some names may differ.
func Without(s Snapshot, drop func(rel string) bool) Snapshot {
	out := make(Snapshot, len(s))
	for k, e := range s {
		if drop == nil || !drop(k) {
			out[k] = e
		}
	}
	return out
}
