package davhandler

import (
	"net/http"

	"github.com/agentworkspace/files/davfs"
)

// resource is the current state of a target.
type resource struct {
	exists bool
	dir    bool
	entry  davfs.Entry
}

// stat returns the state of t; a missing target is not an error.
func (q *request) stat(t target) (resource, error) {
	switch t.kind {
	case kindRoot, kindProjects:
		return resource{exists: true, dir: true}, nil
	case kindNone:
		return resource{}, nil
	}
	e, err := q.h.fs.Stat(q.ctx(), t.ws, t.rel)
	if err != nil {
		if c := davfs.CodeOf(err); c == davfs.CodeNotFound {
			return resource{}, nil
		}
		return resource{}, err
	}
	return resource{exists: true, dir: e.Type == davfs.TypeDirectory, entry: e}, nil
}

// existing stats t for a request that needs it to exist (DELETE, COPY,
// MOVE, PROPPATCH). It answers the request itself (the davfs error's status,
// or 404) and returns ok=false when t cannot be acted on.
func (q *request) existing(t target) (cur resource, ok bool) {
	cur, err := q.stat(t)
	if err != nil {
		q.fail(err, false)
		return resource{}, false
	}
	if !cur.exists {
		q.status(http.StatusNotFound, "")
		return resource{}, false
	}
	return cur, true
}

// preconditions evaluates If-Match, If-None-Match and If: for a modifying
// request on t (whose current state is cur), and the locks on reqs. It
// answers the request itself (412, 423, 400) and returns ok=false when the
// request must stop; otherwise pre is what davfs must re-check at commit.
func (q *request) preconditions(t target, cur resource, reqs []lockReq) (pre davfs.Precondition, ok bool) {
	hdr := q.r.Header
	if v := hdr.Get("If-Match"); v != "" {
		if !cur.exists {
			q.status(http.StatusPreconditionFailed, "If-Match: the resource does not exist")
			return pre, false
		}
		matched := false
		for _, tag := range splitETags(v) {
			if tag == "*" {
				matched = true
				break
			}
			if val, weak := etagValue(tag); !weak && val == cur.entry.Revision && val != "" {
				matched = true
				break
			}
		}
		if !matched {
			q.reason = davfs.ReasonRevisionMismatch
			q.status(http.StatusPreconditionFailed, "If-Match: the resource has changed")
			return pre, false
		}
		pre.IfMatch = cur.entry.Revision
	}
	if v := hdr.Get("If-None-Match"); v != "" {
		for _, tag := range splitETags(v) {
			val, _ := etagValue(tag)
			if cur.exists && (tag == "*" || (val != "" && val == cur.entry.Revision)) {
				q.status(http.StatusPreconditionFailed, "If-None-Match: the resource exists")
				return pre, false
			}
			if tag == "*" {
				pre.IfNoneMatch = true
			}
		}
	}
	var submitted map[string]bool
	if v := hdr.Get("If"); v != "" {
		lists, err := parseIf(v)
		if err != nil {
			q.status(http.StatusBadRequest, "malformed If header")
			return pre, false
		}
		ok, pinned := q.evalIf(t, cur, lists)
		if !ok {
			q.status(http.StatusPreconditionFailed, "If: no condition list matched")
			return pre, false
		}
		// A matched entity tag of the target pins the revision for the
		// commit too, as If-Match does.
		if pre.IfMatch == "" && pinned {
			pre.IfMatch = cur.entry.Revision
		}
		submitted = ifTokens(lists)
	}
	if !q.h.locks.permits(reqs, submitted) {
		q.davError(http.StatusLocked, "lock-token-submitted")
		return pre, false
	}
	return pre, true
}

// evalIf reports whether any list of an If: header is true, and whether
// that list asserted the target's current entity tag.
func (q *request) evalIf(t target, cur resource, lists []ifList) (ok, pinned bool) {
	etags := map[string]string{} // URL path -> current revision ("" = missing)
	etagOf := func(name string) string {
		if name == t.href {
			if cur.exists {
				return cur.entry.Revision
			}
			return ""
		}
		if v, ok := etags[name]; ok {
			return v
		}
		rt := resolve(name)
		rs, err := q.stat(rt)
		v := ""
		if err == nil && rs.exists {
			v = rs.entry.Revision
		}
		etags[name] = v
		return v
	}
	for _, l := range lists {
		name := t.href
		if l.resource != "" {
			name = resolve(q.local(l.resource)).href
		}
		ok, pinned = true, false
		for _, c := range l.conds {
			var v bool
			if c.token != "" {
				v = q.h.locks.valid(c.token, name)
			} else {
				want, _ := etagValue(c.etag)
				got := etagOf(name)
				v = got != "" && want == got
				if v && !c.not && name == t.href {
					pinned = true
				}
			}
			if c.not {
				v = !v
			}
			if !v {
				ok = false
				break
			}
		}
		if ok {
			return true, pinned && cur.exists
		}
	}
	return false, false
}
