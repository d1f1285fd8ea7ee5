package davfs

import (
	"context"

	"golang.org/x/net/webdav"
)

// WebDAV returns a webdav.FileSystem over the same namespaces:
// "/" (lists projects/ and global/), "/projects/" (read-only list of
// projects), "/projects/{project}/{path}", "/global/" (skills/ and AGENTS.md),
// "/global/skills/{path}", "/global/AGENTS.md".
//
// FileInfo values implement webdav.ETager (ETag == quoted revision) and
// webdav.ContentTyper (by extension, never sniffed). OpenFile for writing
// streams into a temp file and commits atomically on Close, checking the
// expectation placed in ctx by WithPrecondition. Errors are *fs.PathError
// wrapping fs.ErrNotExist, fs.ErrPermission or fs.ErrExist so
// x/net/webdav answers 404/403/405; the davfs *Error stays reachable with
// errors.As for the caller to refine the status (412, 409, 413, 507).
func (f *FS) WebDAV() webdav.FileSystem { panic("davfs: not implemented") }

// Precondition is what a WebDAV request's If-Match / If-None-Match demand of
// the target when a write commits.
type Precondition struct {
	IfMatch     string // revision (unquoted) the target must still have; "" = none
	IfNoneMatch bool   // If-None-Match: * — the target must not exist
}

type preconditionKey struct{}

// WithPrecondition attaches p to ctx for WebDAV writes (OpenFile/Close,
// RemoveAll, Rename) to check at commit time, under the mutation lock.
func WithPrecondition(ctx context.Context, p Precondition) context.Context {
	return context.WithValue(ctx, preconditionKey{}, p)
}

// PreconditionFrom returns the Precondition in ctx, if any.
func PreconditionFrom(ctx context.Context) (Precondition, bool) {
	p, ok := ctx.Value(preconditionKey{}).(Precondition)
	return p, ok
}
