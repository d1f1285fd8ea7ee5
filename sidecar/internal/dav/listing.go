package dav

import (
	"context"
	"encoding/xml"
	"os"
	"slices"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/davfs"
)

// noMultiLinks is davfs's FileSystem with directory listings that leave
// out files with more than one hard link: such a file is never read,
// copied or replaced, and a listing that offered it would make a client's
// copy fail half-way (rclone copy stops at the first unreadable file).
// Only directories opened for reading are wrapped: a file keeps its own
// methods (an upload's ReadFrom aborts it when the body fails).
type noMultiLinks struct{ webdav.FileSystem }

func (n noMultiLinks) OpenFile(ctx context.Context, name string, flag int, perm os.FileMode) (webdav.File, error) {
	f, err := n.FileSystem.OpenFile(ctx, name, flag, perm)
	if err != nil || flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return f, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return filteredDir{f}, nil
	}
	return f, nil
}

type filteredDir struct{ webdav.File }

func (f filteredDir) Readdir(count int) ([]os.FileInfo, error) {
	list, err := f.File.Readdir(count)
	return slices.DeleteFunc(list, func(fi os.FileInfo) bool {
		e, ok := fi.Sys().(davfs.Entry)
		return ok && hiddenFromListing(e)
	}), err
}

// DeadProps and Patch are the wrapped directory's (the quota properties,
// quota.go): the wrapper must not hide them from x/net/webdav.
func (f filteredDir) DeadProps() (map[xml.Name]webdav.Property, error) {
	if d, ok := f.File.(webdav.DeadPropsHolder); ok {
		return d.DeadProps()
	}
	return nil, nil
}

func (f filteredDir) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) {
	if d, ok := f.File.(webdav.DeadPropsHolder); ok {
		return d.Patch(p)
	}
	return patchDead(p, true)
}

// hiddenFromListing reports whether a directory listing leaves e out: the
// one rule of filteredDir and of the PROPFIND fast path.
func hiddenFromListing(e davfs.Entry) bool {
	return e.Reason == davfs.NotEditableMultipleLinks
}
