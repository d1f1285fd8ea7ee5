package davhandler

import (
	"io"
	"net/http"
	"strings"

	"github.com/agentworkspace/files/davfs"
)

// readOnlyLevel answers writes on "/", "/projects/", a project's root or
// Global's root: projects come only from CreateProject (gRPC), which also
// runs git init, and are deleted only by DeleteProject.
func (q *request) readOnlyLevel(t target) bool {
	if t.kind == kindEntry && !t.isWorkspaceRoot() {
		return false
	}
	if t.kind == kindNone {
		q.status(http.StatusNotFound, "")
		return true
	}
	q.reason = davfs.ReasonReadOnly
	q.status(http.StatusForbidden, "the projects level and workspace roots are read-only over WebDAV")
	return true
}

func (q *request) mkcol() {
	t := resolve(q.r.URL.Path)
	if q.r.ContentLength > 0 || (q.r.ContentLength < 0 && len(q.r.TransferEncoding) > 0) {
		// RFC 4918 §9.3: a body we do not understand.
		_, _ = io.Copy(io.Discard, io.LimitReader(q.r.Body, maxXMLBody))
		q.status(http.StatusUnsupportedMediaType, "MKCOL with a body is not supported")
		return
	}
	cur, err := q.stat(t)
	if err != nil {
		q.fail(err, true)
		return
	}
	if cur.exists {
		q.w.Header().Set("Allow", allowHeader)
		q.status(http.StatusMethodNotAllowed, "the resource already exists")
		return
	}
	if q.readOnlyLevel(t) {
		return
	}
	if _, ok := q.preconditions(t, cur, []lockReq{{name: t.href, member: true}}); !ok {
		return
	}
	dir, name := t.parentRel()
	if _, err := q.h.fs.CreateEntry(q.ctx(), t.ws, dir, name, davfs.TypeDirectory); err != nil {
		q.fail(err, true)
		return
	}
	q.w.Header().Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusCreated)
}

func (q *request) delete() {
	t := resolve(q.r.URL.Path)
	if d := q.r.Header.Get("Depth"); d != "" && !strings.EqualFold(d, "infinity") {
		q.status(http.StatusBadRequest, "DELETE requires Depth: infinity")
		return
	}
	cur, ok := q.existing(t)
	if !ok {
		return
	}
	if q.readOnlyLevel(t) {
		return
	}
	pre, ok := q.preconditions(t, cur, []lockReq{{name: t.href, recursive: true, member: true}})
	if !ok {
		return
	}
	expected := cur.entry.Revision
	if pre.IfMatch != "" {
		expected = pre.IfMatch
	}
	if err := q.h.fs.DeleteEntry(q.ctx(), t.ws, t.rel, expected, true); err != nil {
		q.fail(err, false)
		return
	}
	q.h.locks.removeBelow(t.href)
	q.h.props.removeBelow(t.href)
	q.w.WriteHeader(http.StatusNoContent)
}

// copyMove implements COPY and MOVE inside one workspace (RFC 4918 §9.8,
// §9.9). Overwrite defaults to T; an overwritten destination is deleted
// first, so the answer is 204, else 201.
func (q *request) copyMove() {
	move := q.r.Method == "MOVE"
	src := resolve(q.r.URL.Path)
	dst, otherHost, ok := destination(q.r.Header.Get("Destination"), q.r.Host)
	if !ok {
		q.status(http.StatusBadRequest, "missing or malformed Destination header")
		return
	}
	if otherHost {
		q.status(http.StatusBadGateway, "the Destination is on another server")
		return
	}
	dst = resolve(q.local(dst.href))
	overwrite := true
	switch strings.ToUpper(strings.TrimSpace(q.r.Header.Get("Overwrite"))) {
	case "", "T":
	case "F":
		overwrite = false
	default:
		q.status(http.StatusBadRequest, "Overwrite must be T or F")
		return
	}
	depthInf := true
	switch d := strings.ToLower(q.r.Header.Get("Depth")); d {
	case "", "infinity":
	case "0":
		if move {
			q.status(http.StatusBadRequest, "MOVE requires Depth: infinity")
			return
		}
		depthInf = false
	default:
		q.status(http.StatusBadRequest, "Depth must be 0 or infinity")
		return
	}
	cur, ok := q.existing(src)
	if !ok {
		return
	}
	if src.kind != kindEntry || src.isWorkspaceRoot() {
		q.reason = davfs.ReasonReadOnly
		q.status(http.StatusForbidden, "cannot copy or move a workspace root or the projects level")
		return
	}
	if !sameWorkspace(src, dst) || dst.isWorkspaceRoot() {
		q.reason = davfs.ReasonReadOnly
		q.status(http.StatusForbidden, "the destination must be inside the same workspace")
		return
	}
	if src.href == dst.href {
		q.status(http.StatusForbidden, "source and destination are the same")
		return
	}
	if cur.dir && under(dst.href, src.href) {
		q.reason = davfs.ReasonMoveIntoSelf
		q.status(http.StatusForbidden, "cannot copy or move a collection into itself")
		return
	}
	dcur, err := q.stat(dst)
	if err != nil {
		q.fail(err, true)
		return
	}
	reqs := []lockReq{{name: dst.href, recursive: true, member: true}}
	if move {
		reqs = append(reqs, lockReq{name: src.href, recursive: true, member: true})
	}
	pre, ok := q.preconditions(src, cur, reqs)
	if !ok {
		return
	}
	if dcur.exists && !overwrite {
		q.status(http.StatusPreconditionFailed, "the destination exists and Overwrite is F")
		return
	}
	if dcur.exists {
		if err := q.h.fs.DeleteEntry(q.ctx(), dst.ws, dst.rel, dcur.entry.Revision, true); err != nil {
			q.fail(err, false)
			return
		}
		q.h.locks.removeBelow(dst.href)
	}
	if move {
		expected := cur.entry.Revision
		if pre.IfMatch != "" {
			expected = pre.IfMatch
		}
		if _, err := q.h.fs.MoveEntry(q.ctx(), src.ws, src.rel, dst.rel, expected); err != nil {
			q.fail(err, q.missingParent(err, dst))
			return
		}
		q.h.locks.removeBelow(src.href)
		q.h.props.copyBelow(src.href, dst.href, true)
	} else {
		if err := q.copyTree(src, dst, cur, depthInf, pre); err != nil {
			q.fail(err, q.missingParent(err, dst))
			return
		}
		q.h.props.copyBelow(src.href, dst.href, false)
	}
	q.w.Header().Set("Content-Length", "0")
	if dcur.exists {
		q.w.WriteHeader(http.StatusNoContent)
	} else {
		q.w.WriteHeader(http.StatusCreated)
	}
}

// missingParent reports whether a NotFound from a COPY/MOVE is about the
// destination's parent (409) rather than the source (404).
func (q *request) missingParent(err error, dst target) bool {
	if davfs.CodeOf(err) != davfs.CodeNotFound {
		return false
	}
	dir, _ := dst.parentRel()
	_, serr := q.h.fs.Stat(q.ctx(), dst.ws, dir)
	return serr != nil
}

// maxCopyEntries bounds a recursive COPY.
const maxCopyEntries = 100000

// copyTree copies a file, or a directory (recursively with depthInf), from
// src to the absent dst. Files go through OpenRead + WriteStream, so each
// copy is atomic; a directory copy is not atomic as a whole.
func (q *request) copyTree(src, dst target, cur resource, depthInf bool, pre davfs.Precondition) error {
	n := 0
	var walk func(srel, drel string, isDir bool, pre davfs.Precondition) error
	walk = func(srel, drel string, isDir bool, pre davfs.Precondition) error {
		n++
		if n > maxCopyEntries {
			return &davfs.Error{Code: davfs.CodeResourceExhausted, Reason: davfs.ReasonTooLarge, Message: "too many entries to copy"}
		}
		if !isDir {
			f, _, err := q.h.fs.OpenRead(q.ctx(), src.ws, srel)
			if err != nil {
				return err
			}
			defer f.Close()
			_, _, err = q.h.fs.WriteStream(q.ctx(), dst.ws, drel, f, q.h.opts.MaxUploadSize,
				davfs.Precondition{IfNoneMatch: true})
			return err
		}
		dir, name := splitRel(drel)
		if _, err := q.h.fs.CreateEntry(q.ctx(), dst.ws, dir, name, davfs.TypeDirectory); err != nil {
			return err
		}
		if !depthInf {
			return nil
		}
		entries, err := q.h.fs.ReadDir(q.ctx(), src.ws, srel)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := walk(joinRel(srel, e.Name), joinRel(drel, e.Name), e.Type == davfs.TypeDirectory, pre); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(src.rel, dst.rel, cur.dir, pre)
}

func splitRel(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
