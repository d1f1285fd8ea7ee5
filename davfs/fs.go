// Package davfs is the only code that touches the agent volumes: the Projects
// root and the Global allowlist of CODEX_HOME (skills/ and AGENTS.md).
//
// Guarantees: every path is validated as a relative, "/"-separated UTF-8 path
// (no empty segment, ".", "..", NUL; bounded length and depth; no denylisted
// segment) and then resolved from a directory fd held open for the root,
// never following a symlink (openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV, or a per-segment O_NOFOLLOW walk
// where openat2 is missing). Mutations act through *at calls on the resolved
// parent fd, re-checked right before they happen, under one mutation lock per
// FS. File writes are atomic (temp file, fsync, rename, fsync dir).
//
// Limits: davfs does not lock against other processes (the agent itself may
// write at any time; revisions detect that at commit). It does not protect
// against a privileged process that rewrites the volume under it.
package davfs

import (
	"context"
	"io"
	"os"
)

// FS serves one agent's volumes. It is safe for concurrent use.
type FS struct {
	cfg Config
}

// Open validates cfg, opens the roots, ensures $CODEX_HOME/skills exists and
// sweeps davfs's own stale temp files. It changes nothing else on disk.
func Open(cfg Config) (*FS, error) { panic("davfs: not implemented") }

// Close releases the root fds.
func (f *FS) Close() error { panic("davfs: not implemented") }

// ListProjects lists first-level, non-denylisted, non-symlink directories of
// the projects root in name order. pageSize 0 means the default.
func (f *FS) ListProjects(ctx context.Context, pageSize int, cursor string) (ProjectPage, error) {
	panic("davfs: not implemented")
}

// CreateProject makes one directory (0755) and runs the initializer; on
// failure it removes exactly what it created.
func (f *FS) CreateProject(ctx context.Context, name string) (Project, error) {
	panic("davfs: not implemented")
}

// DeleteProject permanently and recursively deletes a project. confirmName
// must equal name.
func (f *FS) DeleteProject(ctx context.Context, name, confirmName string) error {
	panic("davfs: not implemented")
}

// ListEntries lists one page of a directory: directories first, then by name.
func (f *FS) ListEntries(ctx context.Context, ws Workspace, dir string, pageSize int, cursor string) (Page, error) {
	panic("davfs: not implemented")
}

// Stat returns the Entry of one path (the workspace root for "").
func (f *FS) Stat(ctx context.Context, ws Workspace, path string) (Entry, error) {
	panic("davfs: not implemented")
}

// ReadFile returns a regular file's metadata, and its content when editable.
func (f *FS) ReadFile(ctx context.Context, ws Workspace, path string) (File, error) {
	panic("davfs: not implemented")
}

// CreateEntry creates an empty file (0644) or directory (0755) named name in
// the existing directory parent.
func (f *FS) CreateEntry(ctx context.Context, ws Workspace, parent, name string, typ EntryType) (Entry, error) {
	panic("davfs: not implemented")
}

// UpdateFile atomically replaces an editable file's content if its revision
// still equals expectedRevision.
func (f *FS) UpdateFile(ctx context.Context, ws Workspace, path string, content []byte, expectedRevision string) (Entry, error) {
	panic("davfs: not implemented")
}

// MoveEntry renames src to dst inside one workspace; dst must not exist.
func (f *FS) MoveEntry(ctx context.Context, ws Workspace, src, dst, expectedRevision string) (Entry, error) {
	panic("davfs: not implemented")
}

// DeleteEntry permanently deletes a file or directory (non-empty only with
// recursive).
func (f *FS) DeleteEntry(ctx context.Context, ws Workspace, path, expectedRevision string, recursive bool) error {
	panic("davfs: not implemented")
}

// OpenRead opens a regular, single-link file for streaming (no size limit,
// Seek and ReadAt work; memory stays constant). The caller closes it. This is
// what WebDAV GET and Range reads use.
func (f *FS) OpenRead(ctx context.Context, ws Workspace, path string) (*os.File, Entry, error) {
	panic("davfs: not implemented")
}

// WriteStream streams r into a temp file in the target's directory (outside
// the mutation lock, so a slow upload never stalls others), fsyncs it, keeps
// the original's mode (0644 for a new file), then under the mutation lock
// checks pre (If-Match revision / If-None-Match) against the target and
// renames over it, and fsyncs the directory. Any bytes are accepted up to
// maxSize (ResourceExhausted/TOO_LARGE above it, nothing written); a read
// error from r (an aborted upload) commits nothing. The parent must exist
// (NotFound otherwise). created reports whether the file is new.
func (f *FS) WriteStream(ctx context.Context, ws Workspace, path string, r io.Reader, maxSize int64, pre Precondition) (e Entry, created bool, err error) {
	panic("davfs: not implemented")
}

// ReadDir returns every visible entry of a directory (directories first, then
// by name), without paging, for WebDAV PROPFIND. Revisions come from the
// stat-keyed hash cache, so a warm listing re-reads no file.
func (f *FS) ReadDir(ctx context.Context, ws Workspace, dir string) ([]Entry, error) {
	panic("davfs: not implemented")
}
