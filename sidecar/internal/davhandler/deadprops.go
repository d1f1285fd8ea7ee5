package davhandler

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Dead properties (PROPPATCH) are kept in memory only, bounded, and follow
// MOVE/COPY/DELETE. They exist so WebDAV clients that set properties (and
// litmus) work; nothing in the product depends on them, and they are lost
// when the sidecar restarts.
const (
	maxPropPaths   = 10000
	maxPropsPerRes = 64
	maxPropValue   = 16 << 10
)

type deadProp struct {
	name  xml.Name
	inner string // well-formed XML content
}

type deadProps struct {
	mu sync.RWMutex
	m  map[string][]deadProp // by URL path
}

func newDeadProps() *deadProps { return &deadProps{m: make(map[string][]deadProp)} }

// any reports whether any resource has dead properties.
func (d *deadProps) any() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.m) > 0
}

func (d *deadProps) get(p string) []deadProp {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if len(d.m) == 0 {
		return nil
	}
	return d.m[p]
}

// propOp is one set or remove of a PROPPATCH, applied in document order.
type propOp struct {
	remove bool
	prop   deadProp
}

// patch applies ops atomically and in order; it reports false when a limit
// would be passed (nothing is changed then).
func (d *deadProps) patch(p string, ops []propOp) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := append([]deadProp(nil), d.m[p]...)
	for _, op := range ops {
		idx := -1
		for i := range cur {
			if cur[i].name == op.prop.name {
				idx = i
				break
			}
		}
		switch {
		case op.remove && idx >= 0:
			cur = append(cur[:idx], cur[idx+1:]...)
		case !op.remove && idx >= 0:
			cur[idx] = op.prop
		case !op.remove:
			cur = append(cur, op.prop)
		}
	}
	if len(cur) > maxPropsPerRes {
		return false
	}
	if _, ok := d.m[p]; !ok && len(d.m) >= maxPropPaths && len(cur) > 0 {
		return false
	}
	if len(cur) == 0 {
		delete(d.m, p)
	} else {
		sort.Slice(cur, func(i, j int) bool {
			if cur[i].name.Space != cur[j].name.Space {
				return cur[i].name.Space < cur[j].name.Space
			}
			return cur[i].name.Local < cur[j].name.Local
		})
		d.m[p] = cur
	}
	return true
}

// removeBelow forgets the properties at and below p.
func (d *deadProps) removeBelow(p string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.m {
		if under(k, p) {
			delete(d.m, k)
		}
	}
}

// copyBelow copies (or moves) the properties at and below src to dst.
func (d *deadProps) copyBelow(src, dst string, move bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.m {
		if under(k, dst) {
			delete(d.m, k)
		}
	}
	for k, v := range d.m {
		if under(k, src) {
			nk := dst + strings.TrimPrefix(k, src)
			d.m[nk] = append([]deadProp(nil), v...)
			if move {
				delete(d.m, k)
			}
		}
	}
}

// wellFormed reports whether inner is well-formed XML content on its own,
// with no namespace prefixes borrowed from the elements around it, so
// echoing it back keeps the multistatus document well-formed.
func wellFormed(inner string) bool {
	if !strings.Contains(inner, "<") {
		return true
	}
	d := xml.NewDecoder(strings.NewReader("<x>" + inner + "</x>"))
	d.Strict = true
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			// The decoder resolves declared prefixes to URLs; an undeclared
			// prefix stays as it is, which is not a URL.
			if se.Name.Space != "" && !strings.Contains(se.Name.Space, ":") {
				return false
			}
		}
	}
}

// escapedText turns character data into escaped XML content.
func escapedText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// proppatch sets or removes dead properties; DAV: properties are protected.
func (q *request) proppatch() {
	t := resolve(q.r.URL.Path)
	cur, ok := q.existing(t)
	if !ok {
		return
	}
	if _, ok := q.preconditions(t, cur, []lockReq{{name: t.href}}); !ok {
		return
	}
	ops, all, err := parsePropertyUpdate(q.r.Body)
	if err != nil {
		q.status(http.StatusBadRequest, "malformed PROPPATCH body")
		return
	}
	status := "HTTP/1.1 200 OK"
	for _, n := range all {
		if n.Space == "DAV:" {
			status = "HTTP/1.1 403 Forbidden"
		}
	}
	if status == "HTTP/1.1 200 OK" && !q.h.props.patch(t.href, ops) {
		status = "HTTP/1.1 507 Insufficient Storage"
	}
	pw := q.h.bufs.Get().(*propWriter)
	defer q.h.bufs.Put(pw)
	pw.reset(q.w)
	q.w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	q.w.WriteHeader(http.StatusMultiStatus)
	pw.str(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<D:multistatus xmlns:D="DAV:"><D:response><D:href>`)
	pw.text(q.hrefOf(t.href, cur.dir))
	pw.str(`</D:href>`)
	for _, n := range all {
		pw.str(`<D:propstat><D:prop>`)
		writeEmptyElem(pw, n)
		pw.str(`</D:prop><D:status>`)
		if n.Space == "DAV:" {
			pw.str("HTTP/1.1 403 Forbidden")
		} else if status != "HTTP/1.1 200 OK" {
			pw.str("HTTP/1.1 424 Failed Dependency")
		} else {
			pw.str(status)
		}
		pw.str(`</D:status></D:propstat>`)
	}
	pw.str("</D:response></D:multistatus>\n")
	_ = pw.flushEntry()
	_ = pw.bw.Flush()
	pw.bw.Reset(nil)
}

// parsePropertyUpdate reads a DAV:propertyupdate body.
func parsePropertyUpdate(r io.Reader) (ops []propOp, all []xml.Name, err error) {
	type prop struct {
		Inner []byte `xml:",innerxml"`
	}
	d := xml.NewDecoder(io.LimitReader(r, maxXMLBody))
	depth := 0
	mode := ""
	for {
		tok, terr := d.Token()
		if terr == io.EOF {
			break
		}
		if terr != nil {
			return nil, nil, terr
		}
		switch tt := tok.(type) {
		case xml.StartElement:
			depth++
			switch depth {
			case 1:
				if tt.Name.Space != "DAV:" || tt.Name.Local != "propertyupdate" {
					return nil, nil, errBadIf
				}
			case 2:
				mode = tt.Name.Local
			case 4:
				var v prop
				if err := d.DecodeElement(&v, &tt); err != nil {
					return nil, nil, err
				}
				depth--
				all = append(all, tt.Name)
				if mode == "remove" {
					ops = append(ops, propOp{remove: true, prop: deadProp{name: tt.Name}})
					continue
				}
				inner := string(v.Inner)
				if len(inner) > maxPropValue {
					return nil, nil, errBadIf
				}
				if !wellFormed(inner) {
					inner = escapedText(inner)
				}
				ops = append(ops, propOp{prop: deadProp{name: tt.Name, inner: inner}})
			}
		case xml.EndElement:
			depth--
		}
	}
	if len(all) == 0 {
		return nil, nil, errBadIf
	}
	return ops, all, nil
}
