package dav

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/webdav"
)

// noRevisions is a FileSystem whose FileInfos name no revision.
type noRevisions struct{ webdav.FileSystem }

type plainInfo struct{ os.FileInfo }

func (n noRevisions) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	fi, err := n.FileSystem.Stat(ctx, name)
	if err != nil {
		return nil, err
	}
	return plainInfo{fi}, nil
}

// An If: list's "(Not [etag])" about an existing resource whose revision
// cannot be had fails: Confirm must not take an unknown revision for one
// the tag does not name.
func TestConfirmWithoutRevisionFailsClosed(t *testing.T) {
	e := newEnv(t, nil)
	if err := os.WriteFile(filepath.Join(e.projects, "demo", "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	const name = "/projects/demo/a.txt"
	not := webdav.Condition{Not: true, ETag: `"not-its-revision"`}
	for _, c := range []struct {
		fs   webdav.FileSystem
		want bool
	}{{noMultiLinks{NewFileSystem(e.fs, e.ck, RequestState{})}, true}, {noRevisions{NewFileSystem(e.fs, e.ck, RequestState{})}, false}} {
		h := New(e.fs, e.ck, Options{})
		q := &request{h: h, ctx: context.Background(), fs: c.fs, src: name}
		release, err := (&requestLocks{p: h.locks, q: q}).Confirm(time.Now(), name, "", not)
		if (err == nil) != c.want {
			t.Errorf("Confirm((Not [etag])) over %T: %v; want passed=%v", c.fs, err, c.want)
		}
		if release != nil {
			release()
		}
	}
}
