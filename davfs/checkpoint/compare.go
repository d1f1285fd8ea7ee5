package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/agentworkspace/files/davfs"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// CheckpointChangeKind says how a path differs from the checkpoint (the "base") in
// the target (the current state or another checkpoint).
type CheckpointChangeKind int

const (
	CheckpointUnchanged CheckpointChangeKind = iota
	CheckpointAdded                          // in the target only: a restore removes it
	CheckpointRemoved                        // in the base only: a restore creates it
	CheckpointModified                       // content or mode differ: a restore rewrites it
)

// DiffState says whether Change.Diff holds a text diff, and why not.
type DiffState int

const (
	DiffNotRequested DiffState = iota
	DiffIncluded
	DiffNotText     // binary or not UTF-8 on either side
	DiffTooLarge    // either side above the editable limit, or the diff larger than the whole budget
	DiffOverBudget  // the diff does not fit in what is left of the budget; compare the path alone
	DiffUnavailable // a directory, a mode change only, or a side that cannot be read
)

// CheckpointChange is one path that differs.
type CheckpointChange struct {
	Path             string
	Kind             CheckpointChangeKind
	Type             davfs.EntryType
	OldSize, NewSize int64
	OldMode, NewMode uint32
	Diff             string // unified diff, when DiffState is DiffIncluded
	DiffState        DiffState
}

// Comparison is the result of CompareCheckpoint.
type Comparison struct {
	Base   Checkpoint
	Target *Checkpoint // nil: the current state
	// Path is the part compared ("" the whole workspace).
	Path    string
	Changes []CheckpointChange
	// PlanToken identifies exactly these changes (without diffs). A
	// restore given it refuses to run if what it would change differs
	// (Aborted/REVISION_MISMATCH). Only set when the target is current.
	PlanToken string
}

// diffBudget bounds the diff text of one comparison: a diff is included
// only if it fits in what is left of it, so a comparison's diffs never
// exceed it (the sidecar's gRPC messages are at least 4 MiB; the paths of
// a response are bounded separately). A single diff larger than the whole
// budget is DiffTooLarge: comparing that file alone would not show it
// either.
const diffBudget = 1 << 20

// within reports whether p is scope or below it.
func within(p, scope string) bool {
	return scope == "" || p == scope || strings.HasPrefix(p, scope+"/")
}

// narrow returns the part of path that lies in a checkpoint of root: path
// itself when inside root, root when path contains it.
func narrow(root, path string) (string, error) {
	switch {
	case within(path, root):
		return path, nil
	case within(root, path):
		return root, nil
	}
	return "", newErr(davfs.CodeInvalidArgument, davfs.ReasonInvalidPath, nil, "%q is outside the checkpoint (taken of %q)", path, root)
}

// inScope is the part of the sorted es within scope: es itself for the
// whole workspace, a subslice when the part is contiguous, else a copy of
// the few entries of its range (scopeRange).
func inScope(es []ckEntry, scope string) []ckEntry {
	r := scopeRange(es, scope)
	if !slices.ContainsFunc(r, func(e ckEntry) bool { return !within(e.Path, scope) }) {
		return r[:len(r):len(r)]
	}
	out := r[:0:0]
	for _, e := range r {
		if within(e.Path, scope) {
			out = append(out, e)
		}
	}
	return out
}

func entryType(e *ckEntry) davfs.EntryType {
	if e.Dir {
		return davfs.TypeDirectory
	}
	return davfs.TypeFile
}

// changesBetween merges two sorted entry lists. pinned (may be nil) are
// directories of the target that hold uncaptured names: never reported as
// added, because a restore cannot remove them.
func changesBetween(base, target []ckEntry, pinned map[string]struct{}) []CheckpointChange {
	var out []CheckpointChange
	added := func(e *ckEntry) {
		if _, ok := pinned[e.Path]; ok && e.Dir {
			return
		}
		out = append(out, CheckpointChange{Path: e.Path, Kind: CheckpointAdded, Type: entryType(e), NewSize: e.Size, NewMode: e.Mode})
	}
	removed := func(e *ckEntry) {
		out = append(out, CheckpointChange{Path: e.Path, Kind: CheckpointRemoved, Type: entryType(e), OldSize: e.Size, OldMode: e.Mode})
	}
	i, j := 0, 0
	for i < len(base) || j < len(target) {
		switch {
		case j == len(target) || (i < len(base) && base[i].Path < target[j].Path):
			removed(&base[i])
			i++
		case i == len(base) || target[j].Path < base[i].Path:
			added(&target[j])
			j++
		default:
			a, b := &base[i], &target[j]
			switch {
			case a.Dir != b.Dir:
				removed(a)
				added(b)
			case a.Hash != b.Hash || a.Mode&0o777 != b.Mode&0o777:
				out = append(out, CheckpointChange{Path: a.Path, Kind: CheckpointModified, Type: entryType(a), OldSize: a.Size, NewSize: b.Size, OldMode: a.Mode, NewMode: b.Mode})
			}
			i++
			j++
		}
	}
	return out
}

// planToken hashes what a restore would change, with the target's facts.
func planToken(base, target []ckEntry, changes []CheckpointChange) string {
	d := sha256.New()
	for _, c := range changes {
		fmt.Fprintf(d, "%d\x00%s\x00%d\x00", c.Kind, c.Path, c.Type)
		for _, e := range []*ckEntry{findEntry(base, c.Path), findEntry(target, c.Path)} {
			if e != nil {
				fmt.Fprintf(d, "%t\x00%s\x00%o\x00%d\x00%d\x00", e.Dir, e.Hash, e.Mode&0o777, e.Dev, e.Ino)
			}
			d.Write([]byte{1})
		}
	}
	return hex.EncodeToString(d.Sum(nil)[:16])
}

// indexEntries maps the paths of es to their entries.
func indexEntries(es []ckEntry) map[string]*ckEntry {
	m := make(map[string]*ckEntry, len(es))
	for i := range es {
		m[es[i].Path] = &es[i]
	}
	return m
}

// stored reads the description and the manifest of the checkpoint id of
// ws, and narrows path to the part of it in the checkpoint (narrow).
func (s *ckStore) stored(ws davfs.Workspace, id, path string) (*ckMeta, *ckManifest, string, error) {
	meta, err := s.readMeta(ws, id)
	if err != nil {
		return nil, nil, "", err
	}
	scope, err := narrow(meta.Root, path)
	if err != nil {
		return nil, nil, "", err
	}
	m, err := s.readManifest(ws, id)
	return meta, m, scope, err
}

// liveState hashes the current tree at scope (nothing if it is missing).
func (f *Store) liveState(ctx context.Context, ws davfs.Workspace, scope string, ref *ckManifest) (*scanner, error) {
	w, err := f.fs.Resolve(ws, scope)
	if err != nil {
		return nil, err
	}
	sc := newScanner(ctx, f, w, nil, ref)
	if err := sc.scan(); err != nil {
		if davfs.CodeOf(err) == davfs.CodeNotFound {
			return newScanner(ctx, f, w, nil), nil
		}
		return nil, err
	}
	return sc, nil
}

// CompareCheckpoint compares the checkpoint id of ws with the current state
// (against "") or with the checkpoint against, limited to path ("": all of
// the checkpoint). With withDiffs, text files within the editable limit
// get a unified diff (bounded by a budget per comparison); nothing else's
// content is ever returned.
func (f *Store) CompareCheckpoint(ctx context.Context, ws davfs.Workspace, id, against, path string, withDiffs bool) (Comparison, error) {
	ids := []string{id}
	if against != "" {
		ids = append(ids, against)
	}
	if _, err := f.checkpointCall(ws, path, ids...); err != nil {
		return Comparison{}, err
	}
	start := f.now()
	f.ck.gc.RLock()
	defer f.ck.gc.RUnlock()
	meta, base, scope, err := f.ck.stored(ws, id, path)
	if err != nil {
		return Comparison{}, err
	}
	out := Comparison{Base: meta.checkpoint()}
	var target []ckEntry
	var pinned map[string]struct{}
	if against != "" {
		tm, man, tscope, err := f.ck.stored(ws, against, scope)
		if err != nil {
			return Comparison{}, err
		}
		tc := tm.checkpoint()
		out.Target, target, scope = &tc, man.Entries, tscope
	} else {
		sc, err := f.liveState(ctx, ws, scope, base)
		if err != nil {
			return Comparison{}, err
		}
		target, pinned = sc.out, sc.pinned
	}
	b, t := inScope(base.Entries, scope), inScope(target, scope)
	out.Path = scope
	out.Changes = changesBetween(b, t, pinned)
	if against == "" {
		out.PlanToken = planToken(b, t, out.Changes)
	}
	if withDiffs {
		f.addDiffs(ctx, ws, &out, b, t, against != "")
	}
	f.observeCheckpoint("compare", f.now().Sub(start), 0, nil)
	return out, nil
}

// addDiffs fills the diffs of out's file changes.
func (f *Store) addDiffs(ctx context.Context, ws davfs.Workspace, out *Comparison, base, target []ckEntry, targetStored bool) {
	budget := diffBudget
	for i := range out.Changes {
		c := &out.Changes[i]
		if c.Type != davfs.TypeFile {
			c.DiffState = DiffUnavailable
			continue
		}
		var old, cur string
		st := DiffIncluded
		if c.Kind != CheckpointAdded {
			old, st = f.storedText(findEntry(base, c.Path))
		}
		if st == DiffIncluded && c.Kind != CheckpointRemoved {
			if targetStored {
				cur, st = f.storedText(findEntry(target, c.Path))
			} else {
				cur, st = f.liveText(ctx, ws, c.Path)
			}
		}
		if st != DiffIncluded {
			c.DiffState = st
			continue
		}
		if old == cur {
			c.DiffState = DiffUnavailable // a mode change only
			continue
		}
		if budget <= 0 {
			c.DiffState = DiffOverBudget
			continue
		}
		d := unifiedDiff(c.Path, old, cur, c.Kind)
		switch {
		case len(d) > diffBudget:
			c.DiffState = DiffTooLarge
		case len(d) > budget:
			c.DiffState = DiffOverBudget
		default:
			c.Diff = d
			c.DiffState = DiffIncluded
			budget -= len(d)
		}
	}
}

// storedText returns a stored file's text, or why there is none.
func (f *Store) storedText(e *ckEntry) (string, DiffState) {
	if e == nil || e.Dir {
		return "", DiffUnavailable
	}
	if e.Size > f.cfg.MaxEditableFileSize {
		return "", DiffTooLarge
	}
	r, err := f.ck.openObject(e)
	if err != nil {
		return "", DiffUnavailable
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, f.cfg.MaxEditableFileSize+1))
	if err != nil || int64(len(b)) != e.Size {
		return "", DiffUnavailable
	}
	if davfs.TextReason(b) != davfs.EditableOK {
		return "", DiffNotText
	}
	return string(b), DiffIncluded
}

// liveText reads a current file the way ReadFile does.
func (f *Store) liveText(ctx context.Context, ws davfs.Workspace, p string) (string, DiffState) {
	file, err := f.fs.ReadFile(ctx, ws, p)
	if err != nil {
		return "", DiffUnavailable
	}
	if !file.Entry.Editable {
		switch file.Entry.Reason {
		case davfs.NotEditableTooLarge:
			return "", DiffTooLarge
		case davfs.NotEditableBinary, davfs.NotEditableNotUTF8:
			return "", DiffNotText
		}
		return "", DiffUnavailable
	}
	return string(file.Content), DiffIncluded
}

// unifiedDiff is a unified diff (3 lines of context) from old to cur. The
// line diff is go-diff's (diff-match-patch in line mode).
func unifiedDiff(path, old, cur string, kind CheckpointChangeKind) string {
	dmp := diffmatchpatch.New()
	ra, rb, lines := dmp.DiffLinesToRunes(old, cur)
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(ra, rb, false), lines)
	type line struct {
		op   byte
		text string
	}
	var ls []line
	for _, d := range diffs {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = '+'
		case diffmatchpatch.DiffDelete:
			op = '-'
		}
		for t := range strings.SplitAfterSeq(d.Text, "\n") {
			if t != "" {
				ls = append(ls, line{op, t})
			}
		}
	}
	var b strings.Builder
	from, to := "a/"+path, "b/"+path
	if kind == CheckpointAdded {
		from = "/dev/null"
	}
	if kind == CheckpointRemoved {
		to = "/dev/null"
	}
	b.WriteString("--- " + from + "\n+++ " + to + "\n")
	const context = 3
	// count is the number of old and new lines in ls.
	count := func(ls []line) (old, cur int) {
		for _, l := range ls {
			if l.op != '+' {
				old++
			}
			if l.op != '-' {
				cur++
			}
		}
		return old, cur
	}
	for i := 0; i < len(ls); {
		if ls[i].op == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before the change to context lines
		// after its last change, merging changes closer than 2*context.
		start := max(0, i-context)
		end := i
		for j := i; j < len(ls); j++ {
			if ls[j].op != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		stop := min(len(ls), end+context+1)
		oldLine, newLine := count(ls[:start])
		oldN, newN := count(ls[start:stop])
		// A side's first line, 1-based; the line before it when it is empty.
		oldLine += min(oldN, 1)
		newLine += min(newN, 1)
		b.WriteString("@@ -" + strconv.Itoa(oldLine) + "," + strconv.Itoa(oldN) + " +" + strconv.Itoa(newLine) + "," + strconv.Itoa(newN) + " @@\n")
		for _, l := range ls[start:stop] {
			b.WriteByte(l.op)
			b.WriteString(l.text)
			if !strings.HasSuffix(l.text, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return b.String()
}
