package davproxy

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentworkspace/files/internal/davwire"
)

// The gateway itself answers for the two levels above the sidecars' trees:
// /dav/ (one collection per agent with a WebDAV view) and /dav/{agent}/
// (projects/ and global/), so a client can mount /dav/ and browse down.
// PROPFIND there ignores the requested property names and always returns
// resourcetype and displayname; Depth infinity is answered as Depth 1.

type virtualEntry struct {
	href, name string
}

func (h *handler) serveRoot(w *recorder, r *http.Request) {
	self := virtualEntry{href: "/dav/", name: "dav"}
	var children []virtualEntry
	if h.opts.AgentIDs != nil {
		ids := slices.Clone(h.opts.AgentIDs())
		slices.Sort(ids)
		for _, id := range ids {
			if ep, ok := h.opts.Agents(id); ok && ep != nil {
				children = append(children, virtualEntry{href: "/dav/" + url.PathEscape(id) + "/", name: id})
			}
		}
	}
	h.serveVirtual(w, r, self, children)
}

func (h *handler) serveAgentRoot(w *recorder, r *http.Request, rt route) {
	base := "/dav/" + url.PathEscape(rt.Agent) + "/"
	h.serveVirtual(w, r, virtualEntry{href: base, name: rt.Agent}, []virtualEntry{
		{href: base + "projects/", name: "projects"},
		{href: base + "global/", name: "global"},
	})
}

func (h *handler) serveVirtual(w *recorder, r *http.Request, self virtualEntry, children []virtualEntry) {
	var b bytes.Buffer
	status, ctype := http.StatusOK, "text/html; charset=utf-8"
	switch r.Method {
	case http.MethodOptions:
		h.davOptions(w)
		return
	case "PROPFIND":
		if r.Body != nil {
			// The request body only names properties; read a bounded
			// amount so the connection can be reused.
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
		}
		entries := []virtualEntry{self}
		if depth := strings.TrimSpace(r.Header.Get("Depth")); depth != "0" {
			entries = append(entries, children...)
		}
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<D:multistatus xmlns:D="DAV:">`)
		for _, e := range entries {
			b.WriteString("<D:response><D:href>")
			_ = xml.EscapeText(&b, []byte(e.href))
			b.WriteString("</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype><D:displayname>")
			_ = xml.EscapeText(&b, []byte(e.name))
			b.WriteString("</D:displayname></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>")
		}
		b.WriteString("</D:multistatus>\n")
		status, ctype = http.StatusMultiStatus, `application/xml; charset="utf-8"`
	case http.MethodGet, http.MethodHead:
		fmt.Fprintf(&b, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<ul>\n", html.EscapeString(self.href))
		for _, c := range children {
			fmt.Fprintf(&b, "<li><a href=\"%s\">%s/</a></li>\n", html.EscapeString(c.href), html.EscapeString(c.name))
		}
		b.WriteString("</ul>\n")
	default:
		// PROPPATCH, LOCK and every write are refused on the virtual
		// levels, writable view or not.
		w.Header().Set("Allow", davwire.AllowRead)
		h.refuse(w, http.StatusMethodNotAllowed, "READ_ONLY", "method not allowed on this collection")
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", fmt.Sprint(b.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}
