package dav

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"slices"
)

// Bounds on the XML bodies x/net/webdav decodes whole into memory. One
// PROPFIND under 1 MiB naming 90,000 properties once drove a sidecar to
// 2.9 GB: x/net answers every name for every member of the directory.
const (
	maxXMLBody    = 1 << 20 // PROPFIND, PROPPATCH, LOCK
	maxPropNames  = 256     // property names in one PROPFIND or PROPPATCH
	maxOwnerBytes = 4 << 10 // the <owner> of a LOCK, kept verbatim in memory
)

// bufferXMLBody reads an XML request body within its budgets, puts the
// bytes back as r.Body for the library and returns them (nil when the
// read failed). It returns a client-facing message when the body is
// refused for its size (413) or its form (400); nothing is acted on then.
// A body the bounds scanner cannot read through is refused (400).
func bufferXMLBody(r *http.Request) (body []byte, refused, malformed string) {
	if r.ContentLength > maxXMLBody {
		return nil, "the XML body is larger than 1 MiB", ""
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxXMLBody+1)) // never nil
	if err != nil {
		return nil, "", "" // the library's own read fails the same way
	}
	if len(body) > maxXMLBody {
		return nil, "the XML body is larger than 1 MiB", ""
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	// Depth of the elements that are property names: propfind/prop/NAME
	// (3), propertyupdate/set/prop/NAME (4); lockinfo/owner (2).
	names, owner := 0, 0
	depth, ownerStart := 0, int64(-1)
	dec := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			// Never pass on what the bounds were not counted over: x/net's
			// own XML decoder accepts bodies encoding/xml rejects (a
			// comment containing "--"), and would answer every name.
			return nil, "", "the XML body is not well-formed"
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if slices.ContainsFunc(t.Attr, func(a xml.Attr) bool { return a.Name.Space == "xmlns" && a.Value == "" }) {
				// "xmlns:p=''" is not well-formed in XML Namespaces 1.0;
				// x/net's decoder accepts it.
				return nil, "", "a namespace prefix must not be bound to the empty name"
			}
			switch {
			case r.Method == "PROPFIND" && depth == 3, r.Method == "PROPPATCH" && depth == 4:
				names++
				if names > maxPropNames {
					return nil, "at most 256 property names per request", ""
				}
			case r.Method == "LOCK" && depth == 2 && t.Name.Local == "owner":
				ownerStart = dec.InputOffset()
			}
		case xml.EndElement:
			if r.Method == "LOCK" && depth == 2 && t.Name.Local == "owner" && ownerStart >= 0 {
				owner += int(dec.InputOffset() - ownerStart)
				if owner > maxOwnerBytes {
					return nil, "the lock owner is larger than 4 KiB", ""
				}
			}
			depth--
		}
	}
	return body, "", ""
}
