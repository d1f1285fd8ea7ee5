package dav

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentworkspace/files/contracts/errtable"
)

// An XML body the bounds scanner cannot tokenize is refused (400
// INVALID_ARGUMENT), never passed on: x/net's decoder accepts a comment
// with "--" that encoding/xml rejects, and would answer 2000 names.
func TestXMLBodyTokenizerErrorRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/a.txt", "a")
	var names strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&names, "<x:p%d/>", i)
	}
	bodies := map[string]string{
		"PROPFIND":  `<!-- a -- b --><D:propfind xmlns:D="DAV:" xmlns:x="urn:x"><D:prop>` + names.String() + `</D:prop></D:propfind>`,
		"PROPPATCH": `<!-- a -- b --><D:propertyupdate xmlns:D="DAV:" xmlns:x="urn:x"><D:set><D:prop>` + names.String() + `</D:prop></D:set></D:propertyupdate>`,
		"LOCK": `<!-- a -- b --><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>` +
			strings.Repeat("o", 8<<10) + `</D:owner></D:lockinfo>`,
	}
	for m, body := range bodies {
		for _, b := range []string{body, `<D:propfind xmlns:D="DAV:"><D:prop><D:getetag a=/></D:prop></D:propfind>`} {
			path := "/projects/demo/a.txt"
			resp, got := e.do(m, path, map[string]string{"Depth": "0"}, strings.NewReader(b))
			if resp.StatusCode != 400 || resp.Header.Get(errtable.ReasonHeader) != "INVALID_ARGUMENT" || !strings.Contains(got, "not well-formed") {
				t.Errorf("%s %.40q: %d %s %q", m, b, resp.StatusCode, resp.Header.Get(errtable.ReasonHeader), got)
			}
		}
	}
	// A well-formed body is still answered.
	e.want("PROPFIND", "/projects/demo/a.txt", map[string]string{"Depth": "0"}, `<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>`, 207)
}
