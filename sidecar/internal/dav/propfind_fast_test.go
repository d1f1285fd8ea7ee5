package dav

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/internal/davwire"
)

// TestPropfindFastPathMatchesXNet is the proof the fast path stays on
// (issue 13, item 1; docs/architecture.md "Speed work, and when a library stays"): every request of a
// corpus goes to two handlers over the same davfs tree, one with the fast
// path and one that leaves PROPFIND to x/net/webdav, and both answers must
// carry the same status, headers, hrefs, propstat statuses and property
// values (order aside). The corpus has the names that need escaping, a
// denylisted directory, a symlink and a file with two hard links (both
// pointing at canaries in t.TempDir()), Global, the virtual levels, every
// body form, Depth 0 and 1, with and without the gateway's prefix and
// read-only headers.
func TestPropfindFastPathMatchesXNet(t *testing.T) {
	e := newEnv(t, nil)
	demo := filepath.Join(e.projects, "demo")
	files := map[string]string{
		"a b.txt": "1", "x&y.md": "22", "lt<gt>.json": "{}", "pct%41.txt": "4", "ünï cødé.txt": "5",
		`q"uote'.txt`: "6", "semi;comma,.txt": "7", "star*": "8", "plus+eq=@$.bin": "9", "noext": "",
		"nested/f.go": "package f", "nested/sub/deep.txt": "deep", "empty-sibling.csv": "a,b",
		"node_modules/hidden.js": "x", "nested/.git/config": "x",
	}
	for rel, content := range files {
		p := filepath.Join(demo, filepath.FromSlash(rel))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(demo, "empty"), 0o755))
	must(t, os.MkdirAll(filepath.Join(demo, "dir with space & more"), 0o755))
	// Canaries outside the tree: the symlink and the second hard link point
	// at them; neither may show up.
	canaries := t.TempDir()
	canary := filepath.Join(canaries, "canary")
	must(t, os.WriteFile(canary, []byte("secret"), 0o644))
	must(t, os.Symlink(canary, filepath.Join(demo, "link-to-canary")))
	must(t, os.Symlink(canaries, filepath.Join(demo, "nested", "dirlink")))
	linked := filepath.Join(canaries, "linked")
	must(t, os.WriteFile(linked, []byte("two links"), 0o644))
	if err := os.Link(linked, filepath.Join(demo, "nested", "multi.txt")); err != nil {
		t.Fatalf("hard link (same file system as t.TempDir()): %v", err)
	}
	must(t, os.MkdirAll(filepath.Join(e.codex, "skills", "s1"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.codex, "skills", "s1", "SKILL.md"), []byte("# s1"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.codex, "AGENTS.md"), []byte("# agents"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.codex, "auth.json"), []byte("{}"), 0o600))

	newHandler := func(disable bool) (*Handler, string) {
		h := New(e.fs, e.ck, Options{Logger: hclog.NewNullLogger(), AllowUnconditionalWrites: true, DisablePropfindFastPath: disable})
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return h, srv.URL
	}
	fast, fastURL := newHandler(false)
	_, xnetURL := newHandler(true)

	const d = `<?xml version="1.0" encoding="utf-8"?>` + "\n"
	bodies := map[string]string{
		"none":         "",
		"allprop":      d + `<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`,
		"allprop-ws":   "<propfind xmlns=\"DAV:\">\n  <allprop/>\n</propfind>\n",
		"prop-type":    `<D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/></D:prop></D:propfind>`,
		"prop-finder":  `<propfind xmlns="DAV:"><prop><getetag/><getcontentlength/><getlastmodified/><resourcetype/></prop></propfind>`,
		"prop-all":     `<a:propfind xmlns:a="DAV:"><a:prop><a:resourcetype/><a:displayname/><a:getcontentlength/><a:getlastmodified/><a:getcontenttype/><a:getetag/><a:supportedlock/><a:creationdate/><a:getcontentlanguage/><a:lockdiscovery/></a:prop></a:propfind>`,
		"prop-dup":     `<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><D:getetag/><D:displayname/></D:prop></D:propfind>`,
		"prop-lock":    `<D:propfind xmlns:D="DAV:"><D:prop><D:supportedlock/></D:prop></D:propfind>`,
		"prop-unknown": `<D:propfind xmlns:D="DAV:" xmlns:Z="urn:x"><D:prop><D:getetag/><Z:quota/></D:prop></D:propfind>`,
		"prop-win32":   `<D:propfind xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:"><D:prop><Z:Win32FileAttributes/><D:getlastmodified/></D:prop></D:propfind>`,
		"propname":     `<D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`,
		"include":      `<D:propfind xmlns:D="DAV:"><D:allprop/><D:include><D:creationdate/></D:include></D:propfind>`,
		"prop-empty":   `<D:propfind xmlns:D="DAV:"><D:prop/></D:propfind>`,
		"malformed":    `<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:propfind>`,
		"whitespace":   "  \n",
		"not-propfind": `<D:lockinfo xmlns:D="DAV:"/>`,
	}
	paths := []string{
		"/projects/demo/", "/projects/demo", "/projects/demo/empty/", "/projects/demo/nested/",
		"/projects/demo/nested/sub", "/projects/demo/dir%20with%20space%20&%20more/", "/projects/demo/a%20b.txt",
		"/projects/demo/nested/multi.txt", "/projects/demo/link-to-canary", "/projects/demo/node_modules/",
		"/projects/demo/missing/", "/projects/nope/", "/global/", "/global/skills/", "/global/skills/s1",
		"/global/AGENTS.md", "/projects/", "/",
	}
	// Requests the fast path must take (and does, counted below).
	wantFast := map[string]bool{}
	for _, p := range paths[:6] {
		wantFast[p] = true
	}
	wantFast["/global/skills/"], wantFast["/global/skills/s1"] = true, true
	fastBodies := map[string]bool{"none": true, "allprop": true, "allprop-ws": true, "prop-type": true,
		"prop-finder": true, "prop-all": true, "prop-dup": true, "prop-lock": true}

	served := uint64(0)
	var n int
	for _, prefix := range []string{"", "/dav/codex-a"} {
		for _, ro := range []bool{false, true} {
			for _, depth := range []string{"0", "1"} {
				for _, p := range paths {
					for bname, body := range bodies {
						hdr := map[string]string{"Depth": depth}
						if prefix != "" {
							hdr[davwire.PrefixHeader] = prefix
						}
						if ro {
							hdr[davwire.ReadOnlyHeader] = "true"
						}
						name := fmt.Sprintf("%s%s depth=%s ro=%v body=%s", prefix, p, depth, ro, bname)
						before := fast.fastPath.Load()
						a := propfind(t, fastURL+prefix+p, hdr, body)
						b := propfind(t, xnetURL+prefix+p, hdr, body)
						took := fast.fastPath.Load() - before
						served += took
						n++
						if want := wantFast[p] && fastBodies[bname]; (took == 1) != want {
							t.Errorf("%s: fast path took it: %v, want %v", name, took == 1, want)
						}
						if a.status != b.status || a.headers != b.headers {
							t.Errorf("%s: status/headers\nfast: %d %s\nxnet: %d %s", name, a.status, a.headers, b.status, b.headers)
							continue
						}
						if a.status != http.StatusMultiStatus {
							continue
						}
						if !slices.Equal(a.responses, b.responses) {
							t.Errorf("%s: answers differ\nfast: %q\nxnet: %q\nfast body: %s\nxnet body: %s",
								name, a.responses, b.responses, a.body, b.body)
						}
						for _, r := range a.responses {
							if strings.HasPrefix(r, prefix+strings.TrimSuffix(p, "/")) && len(a.responses) == 1 {
								continue // the request's own target (a PROPFIND of the file itself)
							}
							if strings.Contains(r, "canary") || strings.Contains(r, "multi.txt") ||
								strings.Contains(r, "node_modules") || strings.Contains(r, ".git") || strings.Contains(r, "dirlink") || strings.Contains(r, "auth.json") {
								t.Errorf("%s: lists a name it must hide: %s", name, r)
							}
						}
					}
				}
			}
		}
	}
	if served == 0 {
		t.Fatal("the fast path answered nothing")
	}
	t.Logf("%d requests, %d answered by the fast path", n, served)
}

// answer is a PROPFIND answer reduced to what must agree.
type answer struct {
	status    int
	headers   string
	responses []string // one canonical string per DAV:response, sorted
	body      string
}

func propfind(t *testing.T, url string, hdr map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest("PROPFIND", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("PROPFIND %s: %v", url, err)
	}
	a := answer{status: resp.StatusCode, body: string(b)}
	for _, k := range []string{"Content-Type", "Cache-Control", "X-Content-Type-Options", errtable.ReasonHeader, "DAV", "Allow"} {
		a.headers += k + "=" + strings.Join(resp.Header.Values(k), ",") + "; "
	}
	if resp.StatusCode == http.StatusMultiStatus {
		a.responses = canonicalMultistatus(t, b)
	}
	return a
}

// xnode is a parsed XML element.
type xnode struct {
	name     xml.Name
	text     string
	children []*xnode
}

// canon writes a node with its namespace-resolved name, its text and its
// children (in order; whitespace-only text dropped).
func (n *xnode) canon() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{%s}%s", n.name.Space, n.name.Local)
	if n.text != "" {
		fmt.Fprintf(&b, "=%q", n.text)
	}
	if len(n.children) > 0 {
		b.WriteString("(")
		for _, c := range n.children {
			b.WriteString(c.canon())
		}
		b.WriteString(")")
	}
	return b.String()
}

func (n *xnode) child(local string) []*xnode {
	var out []*xnode
	for _, c := range n.children {
		if c.name.Space == "DAV:" && c.name.Local == local {
			out = append(out, c)
		}
	}
	return out
}

func parseXML(t *testing.T, body []byte) *xnode {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(body)))
	d.Strict = true
	root := &xnode{}
	stack := []*xnode{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("multistatus is not well-formed XML: %v\n%s", err, body)
		}
		top := stack[len(stack)-1]
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &xnode{name: tk.Name}
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if s := string(tk); strings.TrimSpace(s) != "" {
				top.text += s
			}
		}
	}
	if len(root.children) != 1 {
		t.Fatalf("want one root element\n%s", body)
	}
	return root.children[0]
}

// canonicalMultistatus turns each DAV:response into "href | status: props
// | status: props", propstats and properties sorted, responses sorted.
func canonicalMultistatus(t *testing.T, body []byte) []string {
	ms := parseXML(t, body)
	if ms.name != (xml.Name{Space: "DAV:", Local: "multistatus"}) {
		t.Fatalf("root is %v", ms.name)
	}
	var out []string
	for _, r := range ms.child("response") {
		hrefs := r.child("href")
		if len(hrefs) != 1 {
			t.Fatalf("response with %d hrefs\n%s", len(hrefs), body)
		}
		var pss []string
		for _, ps := range r.child("propstat") {
			var props []string
			for _, p := range ps.child("prop") {
				for _, c := range p.children {
					props = append(props, c.canon())
				}
			}
			slices.Sort(props)
			st := ""
			for _, s := range ps.child("status") {
				st = s.text
			}
			pss = append(pss, st+": "+strings.Join(props, " "))
		}
		slices.Sort(pss)
		out = append(out, hrefs[0].text+" | "+strings.Join(pss, " | "))
	}
	slices.Sort(out)
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The fast path answers Depth 0 and 1 only: any other Depth (serve
// refuses them first) is x/net's, with nothing written.
func TestPropfindFastOnlyDepth01(t *testing.T) {
	e := newEnv(t, nil)
	h := New(e.fs, e.ck, Options{Logger: hclog.NewNullLogger()})
	body := []byte(`<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`)
	for _, depth := range []string{"", "infinity", "2", "1 "} {
		r := httptest.NewRequest("PROPFIND", "/projects/demo/", nil)
		r.Header.Set("Depth", depth)
		w := httptest.NewRecorder()
		q := &request{h: h, r: r, rec: &recorder{w: w, before: func() {}}, ctx: r.Context(), src: "/projects/demo"}
		if q.propfindFast(body, false) || w.Body.Len() != 0 || h.fastPath.Load() != 0 {
			t.Errorf("Depth %q: the fast path answered %d %q", depth, w.Code, w.Body)
		}
	}
}

// modTimes reuses a formatted getlastmodified only within one second: each
// value is what formatting it alone gives (x/net's http.TimeFormat, UTC).
func TestModTimesFormatsEachValue(t *testing.T) {
	base := time.Date(2026, 12, 3, 8, 0, 0, 0, time.FixedZone("X", 3600))
	times := []time.Time{base, base.Add(400 * time.Millisecond), base.Add(time.Second), base.Add(time.Second),
		base.Add(-time.Second), base.Add(-1500 * time.Millisecond), time.Unix(-1, 500), time.Unix(0, 0), base.AddDate(9000, 0, 0),
		base.Add(modTimeSlots * time.Second), base, time.Unix(1<<40, 0), base, base.Add(-modTimeSlots * time.Second), base,
		time.Unix(-1<<62, 0), time.Unix(-1<<62, 0), time.Unix(1<<62, 0), time.Unix(1<<62, 0)}
	var mt modTimes
	for _, tm := range times {
		if got, want := string(mt.append([]byte("x"), tm)), "x"+tm.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("%v: %q; want %q", tm, got, want)
		}
		if got, want := string((*modTimes)(nil).append(nil, tm)), tm.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("nil, %v: %q; want %q", tm, got, want)
		}
	}
}

// The escaping shortcuts write what xml.EscapeText and url.URL.EscapedPath
// write, for every byte alone and inside names (invalid UTF-8 included).
func TestFastEscapesMatchLibraries(t *testing.T) {
	var names []string
	for c := range 256 {
		names = append(names, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	names = append(names, "file-00001.txt", "a b~c", "ü.txt", "\xff\xfe", "x&y<z>.md", `q"'`, "%41", "a/b", "")
	for _, n := range names {
		var w strings.Builder
		_ = xml.EscapeText(&w, []byte(n))
		if got := string(appendXMLText([]byte("<"), n)); got != "<"+w.String() {
			t.Errorf("appendXMLText(%q) = %q; want %q", n, got, "<"+w.String())
		}
		if n == "" || strings.Contains(n, "/") {
			continue
		}
		want := (&url.URL{Path: "/" + n}).EscapedPath()[1:]
		if got := escapeSegment(n); got != want {
			t.Errorf("escapeSegment(%q) = %q; want %q", n, got, want)
		}
		if plain(&urlPlain, n) && (want != n || !plain(&xmlPlain, n)) {
			t.Errorf("%q is urlPlain but escapes", n)
		}
	}
}
