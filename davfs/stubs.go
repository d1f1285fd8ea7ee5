package davfs

import (
	"context"
	"io"
)

type hooks struct{}

func (f *FS) sweepAtOpen() {}

func (f *FS) ListProjects(ctx context.Context, pageSize int, cursor string) (ProjectPage, error) {
	panic("davfs: not implemented")
}
func (f *FS) CreateProject(ctx context.Context, name string) (Project, error) {
	panic("davfs: not implemented")
}
func (f *FS) DeleteProject(ctx context.Context, name, confirmName string) error {
	panic("davfs: not implemented")
}
func (f *FS) CreateEntry(ctx context.Context, ws Workspace, parent, name string, typ EntryType) (Entry, error) {
	panic("davfs: not implemented")
}
func (f *FS) UpdateFile(ctx context.Context, ws Workspace, path string, content []byte, expectedRevision string) (Entry, error) {
	panic("davfs: not implemented")
}
func (f *FS) MoveEntry(ctx context.Context, ws Workspace, src, dst, expectedRevision string) (Entry, error) {
	panic("davfs: not implemented")
}
func (f *FS) DeleteEntry(ctx context.Context, ws Workspace, path, expectedRevision string, recursive bool) error {
	panic("davfs: not implemented")
}
func (f *FS) WriteStream(ctx context.Context, ws Workspace, path string, r io.Reader, maxSize int64, pre Precondition) (e Entry, created bool, err error) {
	panic("davfs: not implemented")
}
