package dav

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentworkspace/files/davfs/checkpoint"
	"golang.org/x/net/webdav"
)

// errRefused is what guardFS returns when it refused a request itself
// (request.refused says how); the library's status is then replaced.
var errRefused = errors.New("dav: refused before the destination was removed")

// refusal is an answer decided inside a FileSystem call.
type refusal struct {
	status      int
	reason, msg string
}

// guardFS is the FileSystem one COPY or MOVE sees. x/net removes an
// existing destination (Overwrite: T) before it looks at the source of a
// MOVE at all, and before either write is checked: a request that then
// fails must not have deleted the destination. So before that RemoveAll,
// the source must exist and meet its precondition; the destination's own
// precondition (lock pin, If: entity tag, Required) is checked by davfs in
// RemoveAll itself, before anything is deleted. Once this request removed
// the destination, what it writes there is a create (If-None-Match).
type guardFS struct {
	webdav.FileSystem
	q *request
}

func (g guardFS) RemoveAll(ctx context.Context, name string) error {
	q := g.q
	if cleanName(name) != q.dst || q.dstRemoved {
		return g.FileSystem.RemoveAll(ctx, name)
	}
	if rf := q.checkSource(); rf != nil {
		q.refused = rf
		return errRefused
	}
	err := g.FileSystem.RemoveAll(ctx, name)
	if err == nil {
		q.dstRemoved = true
	}
	return err
}

// checkSource is the source's side of a COPY or MOVE, judged before the
// destination is removed: it exists, it still has the revision If-Match
// names, and (MOVE) it meets the precondition its Rename will be held to.
func (q *request) checkSource() *refusal {
	cur := q.currentRevision(q.src)
	if cur == "" {
		return &refusal{http.StatusNotFound, "NOT_FOUND", "the source does not exist"}
	}
	if q.hdr.IfMatch != "" && q.hdr.IfMatch != cur {
		return &refusal{http.StatusPreconditionFailed, "REVISION_MISMATCH", "If-Match: the source has changed"}
	}
	if q.r.Method != "MOVE" {
		return nil
	}
	p := q.precondition(q.src)
	switch {
	case p.IfNoneMatch:
		return &refusal{http.StatusPreconditionFailed, "REVISION_MISMATCH", "If-None-Match: the source exists"}
	case p.IfMatch != "" && p.IfMatch != cur:
		return &refusal{http.StatusPreconditionFailed, "REVISION_MISMATCH", "the source has changed since it was read (revision mismatch)"}
	case p.IfMatch == "" && p.Required && p.Keep == "":
		return &refusal{http.StatusPreconditionRequired, "PRECONDITION_REQUIRED", "send If-Match with the current ETag (or hold a lock) to replace or remove an existing resource"}
	case p.IfMatch == "" && p.Required && !q.h.ck.CheckpointsEnabled():
		return &refusal{http.StatusPreconditionRequired, "PRECONDITION_REQUIRED", checkpoint.KeepingOff}
	}
	return nil
}
