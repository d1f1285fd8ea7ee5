package davhandler

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// lockInfo is a parsed DAV:lockinfo body.
type lockInfo struct {
	XMLName   xml.Name  `xml:"DAV: lockinfo"`
	Exclusive *struct{} `xml:"DAV: lockscope>exclusive"`
	Shared    *struct{} `xml:"DAV: lockscope>shared"`
	Write     *struct{} `xml:"DAV: locktype>write"`
	Owner     *struct {
		Inner string `xml:",innerxml"`
	} `xml:"DAV: owner"`
}

// timeout parses a Timeout header ("Second-N", "Infinite", a list) and caps
// it at MaxLockTimeout: every lock expires.
func (q *request) timeout() time.Duration {
	max := q.h.opts.MaxLockTimeout
	for _, v := range strings.Split(q.r.Header.Get("Timeout"), ",") {
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "Second-") {
			n, err := strconv.ParseInt(v[len("Second-"):], 10, 64)
			if err == nil && n > 0 {
				if d := time.Duration(n) * time.Second; d < max && n < int64(max/time.Second) {
					return d
				}
				return max
			}
		}
	}
	return max
}

// lock creates or refreshes a lock (RFC 4918 §9.10). LOCK on an unmapped
// URL creates an empty file only where a PUT could create one; elsewhere it
// fails like that PUT would (403 on the projects level, 409 without a
// parent) and no lock is left behind.
func (q *request) lock() {
	t := resolve(q.r.URL.Path)
	if t.kind != kindEntry {
		if t.kind == kindNone {
			q.status(http.StatusNotFound, "")
			return
		}
		q.status(http.StatusForbidden, "cannot lock the projects level")
		return
	}
	body, err := io.ReadAll(io.LimitReader(q.r.Body, maxXMLBody))
	if err != nil {
		q.status(http.StatusBadRequest, "unreadable body")
		return
	}
	dur := q.timeout()
	if len(strings.TrimSpace(string(body))) == 0 {
		q.refreshLock(t, dur)
		return
	}
	var li lockInfo
	if err := xml.Unmarshal(body, &li); err != nil || li.Write == nil || (li.Exclusive == nil) == (li.Shared == nil) {
		q.status(http.StatusBadRequest, "malformed DAV:lockinfo")
		return
	}
	zeroDepth := false
	switch strings.ToLower(q.r.Header.Get("Depth")) {
	case "", "infinity":
	case "0":
		zeroDepth = true
	default:
		q.status(http.StatusBadRequest, "Depth must be 0 or infinity")
		return
	}
	owner := ""
	if li.Owner != nil {
		owner = li.Owner.Inner
		if !wellFormed(owner) {
			owner = escapedText(owner)
		}
	}
	cur, err := q.stat(t)
	if err != nil {
		q.fail(err, true)
		return
	}
	if _, ok := q.preconditions(t, cur, nil); !ok {
		return
	}
	l, err := q.h.locks.create(t.href, zeroDepth, li.Shared != nil, owner, dur)
	if err != nil {
		if errors.Is(err, errTooMany) {
			q.status(http.StatusServiceUnavailable, "too many locks")
			return
		}
		q.davError(http.StatusLocked, "no-conflicting-lock")
		return
	}
	created := false
	if !cur.exists {
		if t.isWorkspaceRoot() {
			// LOCK must not create a project: those come only from CreateProject.
			_ = q.h.locks.unlock(l.token, t.href)
			q.reason = davfs.ReasonReadOnly
			q.status(http.StatusForbidden, "the projects level is read-only over WebDAV")
			return
		}
		_, c, err := q.h.fs.WriteStream(q.ctx(), t.ws, t.rel, strings.NewReader(""), 1, davfs.Precondition{IfNoneMatch: true})
		if err != nil {
			_ = q.h.locks.unlock(l.token, t.href)
			q.fail(err, true)
			return
		}
		created = c
	}
	q.w.Header().Set("Lock-Token", "<"+l.token+">")
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	q.writeLockResponse(code, &l)
}

func (q *request) refreshLock(t target, dur time.Duration) {
	lists, err := parseIf(q.r.Header.Get("If"))
	if err != nil {
		q.status(http.StatusBadRequest, "LOCK refresh needs an If header with the lock token")
		return
	}
	for tok := range ifTokens(lists) {
		if l, err := q.h.locks.refresh(tok, t.href, dur); err == nil {
			q.writeLockResponse(http.StatusOK, &l)
			return
		}
	}
	q.davError(http.StatusPreconditionFailed, "lock-token-matches-request-uri")
}

func (q *request) writeLockResponse(code int, l *davLock) {
	pw := q.h.bufs.Get().(*propWriter)
	defer q.h.bufs.Put(pw)
	pw.reset(q.w)
	q.w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	q.w.WriteHeader(code)
	pw.str(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<D:prop xmlns:D="DAV:"><D:lockdiscovery>`)
	q.writeActiveLock(pw, l)
	pw.str("</D:lockdiscovery></D:prop>\n")
	_ = pw.flushEntry()
	_ = pw.bw.Flush()
	pw.bw.Reset(nil)
}

func (q *request) unlock() {
	t := resolve(q.r.URL.Path)
	tok := strings.TrimSpace(q.r.Header.Get("Lock-Token"))
	if len(tok) < 2 || tok[0] != '<' || tok[len(tok)-1] != '>' {
		q.status(http.StatusBadRequest, "missing or malformed Lock-Token header")
		return
	}
	if err := q.h.locks.unlock(tok[1:len(tok)-1], t.href); err != nil {
		q.davError(http.StatusConflict, "lock-token-matches-request-uri")
		return
	}
	q.w.WriteHeader(http.StatusNoContent)
}
