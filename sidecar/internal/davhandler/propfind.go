package davhandler

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// maxXMLBody bounds PROPFIND/PROPPATCH/LOCK request bodies.
const maxXMLBody = 1 << 20

// propEntry is what PROPFIND reports about one resource.
type propEntry struct {
	href  string // escaped, with trailing slash for collections; "" = base + name
	base  string // escaped parent href with trailing slash, when href is "", XML-escaped too
	path  string // unescaped URL path without trailing slash (lock/prop keys)
	name  string
	dir   bool
	size  int64
	mod   time.Time
	etag  string // revision, unquoted
	ctype string // content type when already known, XML-escaped; "" = from name
}

// propfindReq is a parsed PROPFIND body.
type propfindReq struct {
	allprop  bool
	propname bool
	names    []xml.Name
}

func parsePropfind(r io.Reader) (propfindReq, error) {
	d := xml.NewDecoder(io.LimitReader(r, maxXMLBody))
	var pf propfindReq
	depth := 0
	sawRoot := false
	inProp, sawProp := false, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return pf, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			for _, a := range t.Attr {
				// xmlns:p="" is not a legal declaration (Namespaces in XML 1.0 §3);
				// encoding/xml accepts it, litmus propfind_invalid2 checks it.
				if a.Name.Space == "xmlns" && a.Value == "" {
					return pf, errors.New("empty namespace declaration")
				}
			}
			switch {
			case depth == 1:
				if t.Name.Space != "DAV:" || t.Name.Local != "propfind" {
					return pf, errors.New("not a DAV:propfind")
				}
				sawRoot = true
			case depth == 2 && t.Name.Space == "DAV:" && t.Name.Local == "allprop":
				pf.allprop = true
			case depth == 2 && t.Name.Space == "DAV:" && t.Name.Local == "propname":
				pf.propname = true
			case depth == 2 && t.Name.Space == "DAV:" && t.Name.Local == "prop":
				inProp, sawProp = true, true
			case depth == 3 && inProp:
				pf.names = append(pf.names, t.Name)
			}
		case xml.EndElement:
			if depth == 2 {
				inProp = false
			}
			depth--
		}
	}
	if !sawRoot {
		// An empty body is allprop (RFC 4918 §9.1).
		pf.allprop = true
		return pf, nil
	}
	if !pf.allprop && !pf.propname && !sawProp {
		return pf, errors.New("empty DAV:propfind")
	}
	return pf, nil
}

// propfind answers Depth 0 and 1 by streaming multistatus XML built straight
// from davfs Stat/ReadDir (x/net/webdav builds every response in memory
// through reflection-based encoding/xml and is ~15x slower on 10,000 files).
// Depth infinity is refused as RFC 4918 §9.1 allows.
func (q *request) propfind() {
	depth := q.r.Header.Get("Depth")
	switch strings.ToLower(depth) {
	case "0", "1":
	case "", "infinity":
		q.davError(http.StatusForbidden, "propfind-finite-depth")
		return
	default:
		q.status(http.StatusBadRequest, "Depth must be 0 or 1")
		return
	}
	pf, err := parsePropfind(q.r.Body)
	if err != nil {
		q.status(http.StatusBadRequest, "malformed PROPFIND body")
		return
	}
	t := resolve(q.r.URL.Path)
	self, err := q.selfEntry(t)
	if err != nil {
		q.fail(err, false)
		return
	}
	if depth == "1" && self.dir && t.kind == kindEntry {
		q.propfindDir(self, t, pf)
		return
	}
	var virtual []propEntry
	if depth == "1" && self.dir {
		virtual, err = q.virtualChildren(t, self)
		if err != nil {
			q.fail(err, false)
			return
		}
	}
	pw := q.startMultistatus(self, pf)
	defer q.h.bufs.Put(pw)
	for i := range virtual {
		q.writeResponse(pw, &virtual[i], pf)
	}
	q.endMultistatus(pw)
}

// startMultistatus sends the 207 header and the opening of the body with
// the request target's own response; the caller puts pw back in q.h.bufs.
func (q *request) startMultistatus(self propEntry, pf propfindReq) *propWriter {
	pw := q.h.bufs.Get().(*propWriter)
	pw.reset(q.w)
	q.w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	q.w.WriteHeader(http.StatusMultiStatus)
	pw.str(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<D:multistatus xmlns:D="DAV:">`)
	q.writeResponse(pw, &self, pf)
	return pw
}

func (q *request) endMultistatus(pw *propWriter) {
	pw.str("</D:multistatus>\n")
	_ = pw.flushEntry()
	_ = pw.bw.Flush()
	pw.bw.Reset(nil)
}

// propfindDir answers Depth 1 on a davfs directory. The members stream
// from davfs.ReadDirChunks in directory order: chunks are stat'ed and
// rendered on up to GOMAXPROCS goroutines while earlier chunks are written,
// so a 10,000-entry listing starts leaving after its first chunk and holds a
// few chunks in memory at a time (x/net/webdav builds every response in
// memory through reflection-based encoding/xml and is ~15x slower).
//
// The 207 header is sent with the first chunk, so an error before it (the
// directory vanished, is not readable...) still gets its own status. An
// error after some members were sent aborts the connection: the client sees
// a broken response rather than a well-formed but incomplete listing.
func (q *request) propfindDir(self propEntry, t target, pf propfindReq) {
	render := q.entryRenderer(self, t, pf)
	var pw *propWriter
	err := davfs.ReadDirChunks(q.ctx(), q.h.fs, t.ws, t.rel, func(es []davfs.Entry) *propWriter {
		cw := q.h.chunks.Get().(*propWriter)
		render(cw, es)
		return cw
	}, func(cw *propWriter) error {
		if pw == nil {
			pw = q.startMultistatus(self, pf)
			if err := pw.flushEntry(); err != nil {
				return err
			}
		}
		_, err := pw.bw.Write(cw.buf)
		cw.buf = cw.buf[:0]
		q.h.chunks.Put(cw)
		return err
	})
	if pw != nil {
		defer q.h.bufs.Put(pw)
	}
	switch {
	case err != nil && pw == nil:
		q.fail(err, false)
	case err != nil:
		pw.bw.Reset(nil)
		q.h.log.Warn("PROPFIND listing broken off after the response started", "error", err)
		panic(http.ErrAbortHandler)
	default:
		if pw == nil {
			pw = q.startMultistatus(self, pf)
			defer q.h.bufs.Put(pw)
		}
		q.endMultistatus(pw)
	}
}

// entryRenderer returns what writes the responses of davfs entries that are
// members of the directory self.
func (q *request) entryRenderer(self propEntry, t target, pf propfindReq) func(dst *propWriter, es []davfs.Entry) {
	base := self.href
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	base = string(appendEscaped(nil, base))
	pbase := t.href + "/"
	withPaths := q.h.locks.count.Load() > 0 || q.h.props.any()
	return func(dst *propWriter, es []davfs.Entry) {
		// A directory's files mostly share a few extensions: look each
		// extension's content type up once per run of equal extensions.
		var lastExt, lastType string
		for i := range es {
			e := &es[i]
			pe := propEntry{base: base, name: e.Name, dir: e.Type == davfs.TypeDirectory,
				size: e.Size, mod: e.ModTime, etag: e.Revision}
			if !pe.dir {
				if ext := path.Ext(e.Name); ext != lastExt || lastType == "" {
					lastExt, lastType = ext, string(appendEscaped(nil, contentType(e.Name)))
				}
				pe.ctype = lastType
			}
			if withPaths {
				pe.path = pbase + e.Name
			}
			q.writeResponse(dst, &pe, pf)
		}
	}
}

// prefixHref is the client-visible prefix (the gateway's /dav/{agent_id}).
func (q *request) hrefOf(p string, dir bool) string {
	return q.prefix() + escapeHref(p, dir && p != "/")
}

// selfEntry describes the request target.
func (q *request) selfEntry(t target) (propEntry, error) {
	switch t.kind {
	case kindNone:
		return propEntry{}, &davfs.Error{Code: davfs.CodeNotFound, Reason: davfs.ReasonNotFound, Message: "not found"}
	case kindRoot:
		return propEntry{href: q.hrefOf("/", true), path: "/", name: "", dir: true}, nil
	case kindProjects:
		return propEntry{href: q.hrefOf(t.href, true), path: t.href, name: "projects", dir: true}, nil
	}
	e, err := q.h.fs.Stat(q.ctx(), t.ws, t.rel)
	if err != nil {
		return propEntry{}, err
	}
	name := e.Name
	if t.rel == "" {
		name = t.href[strings.LastIndexByte(t.href, '/')+1:]
	}
	dir := e.Type == davfs.TypeDirectory
	return propEntry{href: q.hrefOf(t.href, dir), path: t.href, name: name, dir: dir,
		size: e.Size, mod: e.ModTime, etag: e.Revision}, nil
}

// virtualChildren lists "/" and "/projects/" for Depth 1.
func (q *request) virtualChildren(t target, self propEntry) ([]propEntry, error) {
	base := self.href
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	pbase := t.href
	if pbase != "/" {
		pbase += "/"
	}
	base = string(appendEscaped(nil, base))
	mk := func(name string) propEntry {
		return propEntry{base: base, path: pbase + name, name: name, dir: true}
	}
	if t.kind == kindRoot {
		return []propEntry{mk("projects"), mk("global")}, nil
	}
	var out []propEntry
	cursor := ""
	for {
		page, err := q.h.fs.ListProjects(q.ctx(), q.h.opts.MaxPageSize, cursor)
		if err != nil {
			return nil, err
		}
		for _, p := range page.Projects {
			e := mk(p.Name)
			e.mod, e.etag = p.ModTime, p.Revision
			out = append(out, e)
		}
		if page.NextCursor == "" || len(page.Projects) == 0 || len(out) > 100000 {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

const (
	supportedLockXML = `<D:supportedlock><D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>` +
		`<D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry></D:supportedlock>`
	statusOK       = `<D:status>HTTP/1.1 200 OK</D:status></D:propstat>`
	statusNotFound = `<D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>`
)

// livePropNames are the DAV: properties PROPFIND computes, in allprop order.
var livePropNames = []string{"resourcetype", "displayname", "getcontentlength", "getcontenttype",
	"getetag", "getlastmodified", "supportedlock", "lockdiscovery"}

// writeLive writes one live property; it reports false when the property
// does not apply to e.
func (q *request) writeLive(pw *propWriter, e *propEntry, local string) bool {
	switch local {
	case "resourcetype":
		if e.dir {
			pw.str(`<D:resourcetype><D:collection/></D:resourcetype>`)
		} else {
			pw.str(`<D:resourcetype/>`)
		}
	case "displayname":
		pw.str(`<D:displayname>`)
		pw.text(e.name)
		pw.str(`</D:displayname>`)
	case "getcontentlength":
		if e.dir {
			return false
		}
		pw.str(`<D:getcontentlength>`)
		pw.int(e.size)
		pw.str(`</D:getcontentlength>`)
	case "getcontenttype":
		if e.dir {
			return false
		}
		pw.str(`<D:getcontenttype>`)
		if e.ctype != "" {
			pw.str(e.ctype)
		} else {
			pw.text(contentType(e.name))
		}
		pw.str(`</D:getcontenttype>`)
	case "getetag":
		if e.etag == "" {
			return false
		}
		pw.str(`<D:getetag>"`)
		pw.text(e.etag)
		pw.str(`"</D:getetag>`)
	case "getlastmodified":
		if e.mod.IsZero() {
			return false
		}
		pw.str(`<D:getlastmodified>`)
		pw.httpTime(e.mod)
		pw.str(`</D:getlastmodified>`)
	case "supportedlock":
		pw.str(supportedLockXML)
	case "lockdiscovery":
		var locks []davLock
		if e.path != "" {
			locks = q.h.locks.discover(e.path)
		}
		if len(locks) == 0 {
			pw.str(`<D:lockdiscovery/>`)
			return true
		}
		pw.str(`<D:lockdiscovery>`)
		for i := range locks {
			q.writeActiveLock(pw, &locks[i])
		}
		pw.str(`</D:lockdiscovery>`)
	default:
		return false
	}
	return true
}

func (q *request) writeResponse(pw *propWriter, e *propEntry, pf propfindReq) {
	pw.str(`<D:response><D:href>`)
	if e.href != "" {
		pw.text(e.href)
	} else {
		pw.str(e.base)
		pw.segment(e.name)
		if e.dir {
			pw.str("/")
		}
	}
	pw.str(`</D:href>`)
	var dead []deadProp
	if e.path != "" {
		dead = q.h.props.get(e.path)
	}
	switch {
	case pf.propname:
		pw.str(`<D:propstat><D:prop>`)
		for _, n := range livePropNames {
			if n == "getcontentlength" || n == "getcontenttype" {
				if e.dir {
					continue
				}
			}
			pw.str(`<D:` + n + `/>`)
		}
		for _, d := range dead {
			writeEmptyElem(pw, d.name)
		}
		pw.str(`</D:prop>` + statusOK)
	case pf.allprop:
		pw.str(`<D:propstat><D:prop>`)
		for _, n := range livePropNames {
			q.writeLive(pw, e, n)
		}
		for _, d := range dead {
			writeDeadProp(pw, d)
		}
		pw.str(`</D:prop>` + statusOK)
	default:
		q.writeNamed(pw, e, pf.names, dead)
	}
	pw.str(`</D:response>`)
}

// writeNamed writes the requested properties: found ones under 200, the
// rest under 404.
func (q *request) writeNamed(pw *propWriter, e *propEntry, names []xml.Name, dead []deadProp) {
	var missing []xml.Name
	pw.str(`<D:propstat><D:prop>`)
	start := len(pw.buf)
	for _, n := range names {
		if n.Space == "DAV:" {
			mark := len(pw.buf)
			if q.writeLive(pw, e, n.Local) {
				continue
			}
			pw.buf = pw.buf[:mark]
		}
		found := false
		for _, d := range dead {
			if d.name == n {
				writeDeadProp(pw, d)
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, n)
		}
	}
	if len(pw.buf) == start {
		pw.buf = pw.buf[:start-len(`<D:propstat><D:prop>`)]
	} else {
		pw.str(`</D:prop>` + statusOK)
	}
	if len(missing) > 0 {
		pw.str(`<D:propstat><D:prop>`)
		for _, n := range missing {
			writeEmptyElem(pw, n)
		}
		pw.str(`</D:prop>` + statusNotFound)
	}
}

func writeEmptyElem(pw *propWriter, n xml.Name) {
	switch n.Space {
	case "DAV:":
		pw.str(`<D:`)
		pw.text(n.Local)
		pw.str(`/>`)
		return
	case "":
		pw.str(`<`)
		pw.text(n.Local)
		pw.str(` xmlns=""/>`)
		return
	}
	pw.str(`<x:`)
	pw.text(n.Local)
	pw.str(` xmlns:x="`)
	pw.text(n.Space)
	pw.str(`"/>`)
}

func writeDeadProp(pw *propWriter, d deadProp) {
	if d.name.Space == "" {
		pw.str(`<`)
		pw.text(d.name.Local)
		pw.str(` xmlns="">`)
		pw.str(d.inner)
		pw.str(`</`)
		pw.text(d.name.Local)
		pw.str(`>`)
		return
	}
	pw.str(`<x:`)
	pw.text(d.name.Local)
	pw.str(` xmlns:x="`)
	pw.text(d.name.Space)
	pw.str(`">`)
	pw.str(d.inner)
	pw.str(`</x:`)
	pw.text(d.name.Local)
	pw.str(`>`)
}

func (q *request) writeActiveLock(pw *propWriter, l *davLock) {
	pw.str(`<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope>`)
	if l.shared {
		pw.str(`<D:shared/>`)
	} else {
		pw.str(`<D:exclusive/>`)
	}
	pw.str(`</D:lockscope><D:depth>`)
	if l.zeroDepth {
		pw.str(`0`)
	} else {
		pw.str(`infinity`)
	}
	pw.str(`</D:depth>`)
	if l.owner != "" {
		pw.str(`<D:owner>`)
		pw.str(l.owner)
		pw.str(`</D:owner>`)
	}
	pw.str(`<D:timeout>Second-`)
	pw.int(int64(l.timeout / time.Second))
	pw.str(`</D:timeout><D:locktoken><D:href>`)
	pw.text(l.token)
	pw.str(`</D:href></D:locktoken><D:lockroot><D:href>`)
	pw.text(q.hrefOf(l.root, false))
	pw.str(`</D:href></D:lockroot></D:activelock>`)
}
