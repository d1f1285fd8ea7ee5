package dav

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/davfs"
)

// The one fast path beside x/net/webdav (issue 13, item 1): a PROPFIND of
// live properties on a collection inside a workspace, Depth 0 or 1.
// x/net/webdav answers it by opening and stat-ing every member and
// encoding every response through reflection; for 10,000 files that is
// ~8x nginx. This path streams the same answer from davfs.ReadDirChunks
// (the confined listing ReadDir is made of): members are stat'ed and
// rendered in chunks on up to GOMAXPROCS goroutines while earlier chunks
// are written.
//
// What it answers is x/net's answer for the same request, property for
// property (TestPropfindFastPathMatchesXNet runs a corpus of trees and
// requests through both): the same hrefs (path.Join of the prefix and the
// name, url.URL.EscapedPath), the same members (davfs's visible names,
// minus files with more than one hard link as noMultiLinks leaves them
// out), the properties x/net's liveProps table gives, formatted as x/net
// formats them (http.TimeFormat, the ETager and ContentTyper values,
// xml.EscapeText), with the same 200/404 propstats; in the read-only view
// without DAV:supportedlock, as lockFilter leaves it. Only the order of
// the members (directory order) and of allprop's properties (x/net's is
// a map's) differ; RFC 4918 sets neither.
//
// What it does not take: anything else falls through to x/net before a
// byte is written: a file or a virtual level as the target, propname,
// allprop with include, a property name outside DAV:'s live set, any body
// it does not parse plainly, and a target it cannot stat or list (x/net
// then gives the error its own answer). A listing that fails after the
// 207 header was sent (the directory vanished mid-way) aborts the
// connection; x/net would end the multistatus early instead, which a
// client cannot tell from a complete listing.

// liveProp is one of the DAV: properties of x/net's liveProps table.
type liveProp int

const (
	propResourceType liveProp = iota
	propDisplayName
	propContentLength
	propLastModified
	propContentType
	propETag
	propSupportedLock
	propCreationDate    // in x/net's table without a value: always 404
	propContentLanguage // ditto
	propLockDiscovery   // ditto (x/net has no lockdiscovery finder)
	numLiveProps
)

var livePropNames = [numLiveProps]string{
	"resourcetype", "displayname", "getcontentlength", "getlastmodified",
	"getcontenttype", "getetag", "supportedlock",
	"creationdate", "getcontentlanguage", "lockdiscovery",
}

// allpropFile and allpropDir are the properties x/net's allprop gives a
// file and a collection (those of liveProps with a finder that applies).
var (
	allpropFile = []liveProp{propResourceType, propDisplayName, propContentLength, propLastModified, propContentType, propETag, propSupportedLock}
	allpropDir  = []liveProp{propResourceType, propDisplayName, propLastModified, propSupportedLock}
)

// fastQuery is a PROPFIND body the fast path answers.
type fastQuery struct {
	allprop bool
	props   []liveProp // <prop>: in the request's order, repeats kept (as x/net)
}

// parseFastPropfind reads a buffered PROPFIND body; ok is false for
// anything the fast path leaves to x/net.
func parseFastPropfind(body []byte) (fastQuery, bool) {
	if len(body) == 0 {
		return fastQuery{allprop: true}, true // RFC 4918 §9.1
	}
	dec := xml.NewDecoder(bytes.NewReader(body)) // Strict by default
	var q fastQuery
	depth, children := 0, 0
	inProp, done := false, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return q, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if done || slices.ContainsFunc(t.Attr, func(a xml.Attr) bool { // only namespace declarations
				return a.Name.Space != "xmlns" && !(a.Name.Space == "" && a.Name.Local == "xmlns")
			}) {
				return q, false
			}
			depth++
			switch {
			case depth == 1:
				if t.Name.Space != "DAV:" || t.Name.Local != "propfind" {
					return q, false
				}
			case depth == 2:
				children++
				if children > 1 || t.Name.Space != "DAV:" {
					return q, false
				}
				switch t.Name.Local {
				case "allprop":
					q.allprop = true
				case "prop":
					inProp = true
				default:
					return q, false
				}
			case depth == 3 && inProp:
				p := slices.Index(livePropNames[:], t.Name.Local)
				if t.Name.Space != "DAV:" || p < 0 {
					return q, false
				}
				q.props = append(q.props, liveProp(p))
			default:
				return q, false
			}
		case xml.EndElement:
			depth--
			if depth == 0 {
				done = true
			}
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 || depth == 3 {
				return q, false // x/net refuses a value in a property name
			}
		case xml.Comment, xml.ProcInst:
			if depth == 3 {
				return q, false
			}
		default:
			return q, false
		}
	}
	if !done || children != 1 || (inProp && len(q.props) == 0) {
		return q, false
	}
	return q, true
}

// fastRenderer renders the responses of one PROPFIND.
type fastRenderer struct {
	q        fastQuery
	readOnly bool
}

// response appends one DAV:response. href and ctype (a file's content
// type) are already escaped for XML.
func (fr *fastRenderer) response(b []byte, href []byte, name string, dir bool, e *davfs.Entry, ctype string, mt *modTimes) []byte {
	b = append(b, "<D:response><D:href>"...)
	b = append(b, href...)
	b = append(b, "</D:href><D:propstat><D:prop>"...)
	props := fr.q.props
	if fr.q.allprop {
		props = allpropFile
		if dir {
			props = allpropDir
		}
	}
	missing := false
	for _, p := range props {
		if !applies(p, dir) {
			missing = true
			continue
		}
		b = fr.value(b, p, name, dir, e, ctype, mt)
	}
	b = append(b, "</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>"...)
	if missing {
		b = append(b, "<D:propstat><D:prop>"...)
		for _, p := range props {
			if !applies(p, dir) {
				b = append(b, "<D:"...)
				b = append(b, livePropNames[p]...)
				b = append(b, "/>"...)
			}
		}
		b = append(b, "</D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>"...)
	}
	return append(b, "</D:response>"...)
}

// applies is x/net's "findFn != nil && (dir || !isDir)".
func applies(p liveProp, dir bool) bool {
	switch p {
	case propResourceType, propDisplayName, propLastModified, propSupportedLock:
		return true
	case propContentLength, propContentType, propETag:
		return !dir
	}
	return false
}

// value appends one property that applies, as x/net formats it.
func (fr *fastRenderer) value(b []byte, p liveProp, name string, dir bool, e *davfs.Entry, ctype string, mt *modTimes) []byte {
	switch p {
	case propResourceType:
		if dir {
			return append(b, `<D:resourcetype><D:collection xmlns:D="DAV:"/></D:resourcetype>`...)
		}
		return append(b, "<D:resourcetype></D:resourcetype>"...)
	case propDisplayName:
		b = append(b, "<D:displayname>"...)
		b = appendXMLText(b, name)
		return append(b, "</D:displayname>"...)
	case propContentLength:
		b = append(b, "<D:getcontentlength>"...)
		b = strconv.AppendInt(b, e.Size, 10)
		return append(b, "</D:getcontentlength>"...)
	case propLastModified:
		b = append(b, "<D:getlastmodified>"...)
		b = mt.append(b, e.ModTime)
		return append(b, "</D:getlastmodified>"...)
	case propContentType:
		b = append(b, "<D:getcontenttype>"...)
		b = append(b, ctype...) // escaped by the caller, once per run of one extension
		return append(b, "</D:getcontenttype>"...)
	case propETag:
		// davfs's ETager: the quoted revision.
		b = append(b, `<D:getetag>"`...)
		b = appendXMLText(b, e.Revision)
		return append(b, `"</D:getetag>`...)
	case propSupportedLock:
		if fr.readOnly {
			return b // lockFilter's cut: a read-only view offers no locks
		}
		return append(b, supportedLock[0]...)
	}
	return b
}

// modTimes formats getlastmodified values as x/net does (http.TimeFormat,
// UTC, whole seconds), each second once per chunk while it stays in the
// chunk's small direct-mapped table (a directory's order is its hash
// order, not the order its files were written in, so files written in the
// same few seconds come interleaved). One per chunk: chunks render on
// several goroutines. A nil *modTimes formats every value.
type modTimes struct {
	slots [modTimeSlots]modTimeSlot
}

const modTimeSlots = 32

type modTimeSlot struct {
	sec int64
	n   int                            // bytes of f in use; 0: the slot holds nothing
	f   [len(http.TimeFormat) + 8]byte // sec formatted (room for 5-digit years)
}

func (m *modTimes) append(b []byte, t time.Time) []byte {
	if m == nil {
		return t.UTC().AppendFormat(b, http.TimeFormat)
	}
	sec := t.Unix()
	sl := &m.slots[uint64(sec)%modTimeSlots]
	if sl.n == 0 || sl.sec != sec {
		f := t.UTC().AppendFormat(sl.f[:0], http.TimeFormat)
		if len(f) > len(sl.f) { // grown out of the slot's array: not kept
			sl.n = 0
			return append(b, f...)
		}
		sl.sec, sl.n = sec, len(f)
	}
	return append(b, sl.f[:sl.n]...)
}

// xmlPlain marks the bytes xml.EscapeText writes as they are (printable
// ASCII but for the five it escapes); urlPlain those url.URL.EscapedPath
// leaves alone inside a segment (RFC 3986's unreserved set, all of them
// XML-plain too).
var xmlPlain, urlPlain = func() (x, u [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		x[c] = !strings.ContainsRune(`"'&<>`, rune(c))
		u[c] = c == '-' || c == '_' || c == '.' || c == '~' || ('0' <= c && c <= '9') || ('A' <= c && c <= 'Z') || ('a' <= c && c <= 'z')
	}
	return x, u
}()

// plain reports whether every byte of s is marked in the table.
func plain(table *[256]bool, s string) bool {
	for i := 0; i < len(s); i++ {
		if !table[s[i]] {
			return false
		}
	}
	return true
}

// appendXMLText appends s escaped as xml.EscapeText escapes it (x/net's
// escapeXML), skipping the copy when nothing needs escaping.
func appendXMLText(b []byte, s string) []byte {
	if plain(&xmlPlain, s) {
		return append(b, s...)
	}
	w := bytes.NewBuffer(b)
	_ = xml.EscapeText(w, []byte(s))
	return w.Bytes()
}

// escapeSegment is name as url.URL.EscapedPath writes it inside a path.
func escapeSegment(name string) string {
	return (&url.URL{Path: "/" + name}).EscapedPath()[1:]
}

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// members renders the responses of one chunk of a directory's entries
// (those a listing shows) into a buffer of chunkBufs; base is the
// directory's escaped href, ending in "/".
func (fr *fastRenderer) members(base string, es []davfs.Entry) *[]byte {
	bp := chunkBufs.Get().(*[]byte)
	b := (*bp)[:0]
	href := make([]byte, 0, 256)
	var lastExt, lastType string
	var mt modTimes
	for i := range es {
		e := &es[i]
		if hiddenFromListing(*e) {
			continue
		}
		dir := e.Type == davfs.TypeDirectory
		ctype := ""
		if !dir {
			if ext := path.Ext(e.Name); ext != lastExt || lastType == "" {
				lastExt, lastType = ext, string(appendXMLText(nil, ContentType(e.Name)))
			}
			ctype = lastType
		}
		href = append(href[:0], base...)
		if plain(&urlPlain, e.Name) { // the usual name: nothing to escape
			href = append(href, e.Name...)
		} else {
			href = appendXMLText(href, escapeSegment(e.Name))
		}
		if dir {
			href = append(href, '/')
		}
		b = fr.response(b, href, e.Name, dir, e, ctype, &mt)
	}
	*bp = b
	return bp
}

// propfindFast answers the PROPFIND itself when it can and reports
// whether it did; false means nothing was written and x/net answers.
//
// body is bufferXMLBody's (nil when the read failed: x/net meets that too).
func (q *request) propfindFast(body []byte, readOnly bool) bool {
	depth := q.r.Header.Get("Depth") // serve lets only 0 and 1 through
	ws, rel, ok := WebDAVWorkspace(q.src)
	if body == nil || !ok || (depth != "0" && depth != "1") {
		return false
	}
	fq, ok := parseFastPropfind(body)
	if !ok {
		return false
	}
	fi, err := q.fs.Stat(q.ctx, q.src)
	if err != nil || !fi.IsDir() {
		return false
	}
	self, _ := fi.Sys().(davfs.Entry) // a workspace directory's: never nil
	fr := &fastRenderer{q: fq, readOnly: readOnly}
	hrefPath := path.Join(q.prefix, q.src)
	selfHref := appendXMLText(nil, (&url.URL{Path: hrefPath + "/"}).EscapedPath())
	base := string(selfHref) // ends in "/"; member names are appended escaped

	var bw *bufio.Writer
	start := func() {
		q.h.fastPath.Add(1)
		// Written as x/net's multistatusWriter writes its start; the
		// read-only filter is not needed (supportedlock is left out).
		q.rec.filter = nil
		q.rec.Header().Set("Content-Type", "text/xml; charset=utf-8")
		q.rec.WriteHeader(webdav.StatusMulti)
		bw = bufio.NewWriterSize(q.rec, 64<<10)
		_, _ = bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?><D:multistatus xmlns:D="DAV:">`)
		_, _ = bw.Write(fr.response(make([]byte, 0, 512), selfHref, fi.Name(), true, &self, "", nil))
	}
	if depth == "1" {
		err = davfs.ReadDirChunks(q.ctx, q.h.dfs, ws, rel, func(es []davfs.Entry) *[]byte {
			return fr.members(base, es)
		}, func(bp *[]byte) error {
			if bw == nil {
				start()
			}
			_, err := bw.Write(*bp)
			*bp = (*bp)[:0]
			chunkBufs.Put(bp)
			return err
		})
		switch {
		case err != nil && bw == nil:
			return false // nothing sent: x/net answers (and meets the error itself)
		case err != nil:
			// The 207 and some members are out: end the connection rather
			// than a well-formed but incomplete listing.
			q.libErr, q.reason, q.aborted = err, "INTERNAL", true
			return true
		}
	}
	if bw == nil {
		start() // Depth 0, or an empty directory
	}
	_, _ = bw.WriteString("</D:multistatus>")
	_ = bw.Flush()
	return true
}
