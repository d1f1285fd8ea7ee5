// Package search finds files of a workspace by name (quick open, fuzzy
// ranking) and by content (literal or RE2, case-sensitive or not, with
// include and exclude globs), beside the core: it reaches the volume only
// through davfs's exported confined API (Resolve, OpenTarget, OpenParent,
// OpenAt, LstatAt, Visible), as davfs/checkpoint does; davfs knows nothing
// of it.
//
// Guarantees: every directory and file is opened by the confined walk
// (openat2 RESOLVE_BENEATH|NO_SYMLINKS|NO_XDEV, or the O_NOFOLLOW walk), one
// name at a time on a held directory fd, never by a joined path; a symlink
// is never followed (it is not a result either), another mount is never
// entered; a name a listing would hide (denylisted, a davfs temp file, an
// invalid name, in the Global root anything but skills/ and AGENTS.md) is
// neither a result nor descended into; a file with more than one hard link
// is never read (it may be another name of a file davfs must not expose:
// davfs/links.go); a file with a NUL byte in its first block is binary and
// skipped, as ripgrep does. Every search is bounded: results (MaxResults),
// bytes read in all and per file, and a time limit; hitting one ends the
// search with Summary.Truncated and the bound's name, never an error. A
// canceled context ends it with davfs's context error.
//
// Limits: a file that changes while it is read is searched as read (the
// bytes are not re-checked as a checkpoint's are); content results of
// parallel readers arrive in no fixed order; a preview is one line, cut to
// MaxPreview bytes around the match and made valid UTF-8.
package search

import (
	"context"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// Mode is what a search compares the query with.
type Mode int

const (
	// ModeContent matches the query against the lines of text files.
	ModeContent Mode = iota
	// ModeName ranks the workspace paths by a fuzzy match of the query.
	ModeName
)

// The defaults and ceilings of the bounds (Options fields left 0 get the
// default; larger values are clamped to the ceiling).
const (
	DefaultMaxResults   = 1000
	MaxMaxResults       = 10000
	DefaultMaxBytes     = 512 << 20
	MaxMaxBytes         = 4 << 30
	DefaultMaxFileBytes = 8 << 20
	MaxMaxFileBytes     = 64 << 20
	DefaultTimeout      = 10 * time.Second
	MaxTimeout          = 60 * time.Second
	DefaultMaxPreview   = 200
	MaxMaxPreview       = 1000
	// MaxQuery bounds the query (a literal or a regular expression).
	MaxQuery = 1000
	// MaxGlobs bounds each of Include and Exclude.
	MaxGlobs = 32
	// binaryBlock is the first block a NUL byte marks as binary.
	binaryBlock = 8 << 10
)

// Options are one search.
type Options struct {
	Mode  Mode
	Query string
	// Regex: Query is an RE2 expression (Go's regexp), else a literal.
	Regex bool
	// CaseSensitive: compare case (content; names are always folded).
	CaseSensitive bool
	// Include: only paths matching one of these globs (doublestar syntax;
	// a glob without "/" is matched against the name alone). Exclude: no
	// path matching one of these, and no directory below one.
	Include, Exclude []string
	MaxResults       int
	MaxBytes         int64 // bytes read in all
	MaxFileBytes     int64 // bytes read of one file (the rest is not searched)
	Timeout          time.Duration
	MaxPreview       int // bytes of one preview
}

// Result is one match: a path (ModeName, Line 0) or a line of a file.
type Result struct {
	Path string
	// Line is the 1-based line number of a content match.
	Line int
	// Preview is the line (or a cut of it around the match), valid UTF-8.
	Preview string
	// MatchStart, MatchEnd are the match's byte offsets in Preview.
	MatchStart, MatchEnd int
	// Score ranks name results (higher first).
	Score int
}

// Summary is what a search did.
type Summary struct {
	FilesSearched int
	Results       int
	BytesRead     int64
	// Truncated names the bound that ended the search early: "" (none),
	// "max_results", "max_bytes" or "timeout". FileTruncated counts files
	// only partly read (MaxFileBytes); BinarySkipped the binary files.
	Truncated     string
	FileTruncated int
	BinarySkipped int
}

// The names of the bounds in Summary.Truncated.
const (
	BoundResults = "max_results"
	BoundBytes   = "max_bytes"
	BoundTimeout = "timeout"
)

// Emit receives each result; an error ends the search with it.
type Emit func(Result) error

// Search searches dir of ws (a directory or one file; "" the workspace
// root) in fs. Content results are emitted as found; name results once
// the walk is done, best first. A bad query or glob is InvalidArgument
// before anything is opened; a bad path is the error every operation gives.
func Search(ctx context.Context, fs *davfs.FS, ws davfs.Workspace, dir string, o Options) (func(Emit) (Summary, error), error) {
	o = withDefaults(o)
	m, err := newMatcher(o)
	if err != nil {
		return nil, err
	}
	g, err := newGlobs(o.Include, o.Exclude)
	if err != nil {
		return nil, err
	}
	t, err := fs.Resolve(ws, dir)
	if err != nil {
		return nil, err
	}
	if err := fs.WorkspaceErr(t); err != nil {
		return nil, err
	}
	return func(emit Emit) (Summary, error) {
		r := newRun(ctx, fs, t, o, m, g, emit)
		defer r.cancel()
		return r.summary(r.search())
	}, nil
}

func withDefaults(o Options) Options {
	clamp := func(v, def, ceil int64) int64 {
		if v <= 0 {
			return def
		}
		return min(v, ceil)
	}
	o.MaxResults = int(clamp(int64(o.MaxResults), DefaultMaxResults, MaxMaxResults))
	o.MaxBytes = clamp(o.MaxBytes, DefaultMaxBytes, MaxMaxBytes)
	o.MaxFileBytes = clamp(o.MaxFileBytes, DefaultMaxFileBytes, MaxMaxFileBytes)
	o.Timeout = time.Duration(clamp(int64(o.Timeout), int64(DefaultTimeout), int64(MaxTimeout)))
	o.MaxPreview = int(clamp(int64(o.MaxPreview), DefaultMaxPreview, MaxMaxPreview))
	return o
}

func invalid(msg string) error {
	return &davfs.Error{Code: davfs.CodeInvalidArgument, Reason: davfs.ReasonInvalidArgument, Message: msg}
}
