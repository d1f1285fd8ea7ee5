package davproxy

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

func TestHrefRewriter(t *testing.T) {
	target, _ := url.Parse("http://10.1.2.3:9092")
	st := &state{route: route{agentID: "a b", agentEsc: "a%20b"}, target: target}
	h := &handler{}
	mapHref := func(s string) string { return h.clientHref(s, st) }
	cases := []struct{ name, in, want string }{
		{"prefixed path",
			`<?xml version="1.0" encoding="UTF-8"?><D:multistatus xmlns:D="DAV:"><D:response><D:href>/projects/x/</D:href></D:response></D:multistatus>`,
			`<?xml version="1.0" encoding="UTF-8"?><D:multistatus xmlns:D="DAV:"><D:response><D:href>/dav/a%20b/projects/x/</D:href></D:response></D:multistatus>`},
		{"absolute URL on the sidecar",
			`<multistatus xmlns="DAV:"><response><href>http://10.1.2.3:9092/global/AGENTS.md</href></response></multistatus>`,
			`<multistatus xmlns="DAV:"><response><href>/dav/a%20b/global/AGENTS.md</href></response></multistatus>`},
		{"entities survive",
			`<d:multistatus xmlns:d="DAV:"><d:href>/projects/a&amp;b%20c</d:href></d:multistatus>`,
			`<d:multistatus xmlns:d="DAV:"><d:href>/dav/a%20b/projects/a&amp;b%20c</d:href></d:multistatus>`},
		{"lockroot and whitespace",
			"<D:prop xmlns:D=\"DAV:\"><D:lockroot>\n  <D:href>\n /projects/p/f </D:href></D:lockroot></D:prop>",
			"<D:prop xmlns:D=\"DAV:\"><D:lockroot>\n  <D:href>/dav/a%20b/projects/p/f</D:href></D:lockroot></D:prop>"},
		{"empty href", `<D:x xmlns:D="DAV:"><D:href/><D:href></D:href></D:x>`, `<D:x xmlns:D="DAV:"><D:href/><D:href></D:href></D:x>`},
		{"other namespace untouched",
			`<D:x xmlns:D="DAV:" xmlns:z="urn:z"><z:href>/projects/q</z:href><D:status>HTTP/1.1 200 OK</D:status></D:x>`,
			`<D:x xmlns:D="DAV:" xmlns:z="urn:z"><z:href>/projects/q</z:href><D:status>HTTP/1.1 200 OK</D:status></D:x>`},
		{"malformed: copied, host scrubbed",
			`<D:x xmlns:D="DAV:"><D:href>/projects/q</D:href><oops at 10.1.2.3:9092`,
			`<D:x xmlns:D="DAV:"><D:href>/dav/a%20b/projects/q</D:href><oops at sidecar`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, slow := range []bool{false, true} {
				var src io.Reader = strings.NewReader(c.in)
				if slow {
					src = iotest.OneByteReader(src)
				}
				r := newHrefRewriter(io.NopCloser(src), mapHref, upstreamHosts(target))
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != c.want {
					t.Errorf("slow=%v\n got %s\nwant %s", slow, got, c.want)
				}
			}
		})
	}
}

// A large multistatus goes through in constant memory: the rewriter never
// holds more than a window of it.
func TestHrefRewriterStreams(t *testing.T) {
	const n = 20000
	pr, pw := io.Pipe()
	go func() {
		fmt.Fprint(pw, `<?xml version="1.0" encoding="UTF-8"?><D:multistatus xmlns:D="DAV:">`)
		for i := range n {
			fmt.Fprintf(pw, `<D:response><D:href>/projects/p/file-%d.txt</D:href><D:propstat><D:prop><D:getcontentlength>%d</D:getcontentlength></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>`, i, i)
		}
		fmt.Fprint(pw, `</D:multistatus>`)
		pw.Close()
	}()
	target, _ := url.Parse("http://127.0.0.1:1")
	st := &state{route: route{agentID: "a", agentEsc: "a"}, target: target}
	h := &handler{}
	r := newHrefRewriter(pr, func(s string) string { return h.clientHref(s, st) }, nil)
	rw := r.(*hrefRewriter)
	var out bytes.Buffer
	buf := make([]byte, 512)
	maxWindow := 0
	for {
		k, err := r.Read(buf)
		out.Write(buf[:k])
		if c := cap(rw.win.buf); c > maxWindow {
			maxWindow = c
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(out.String(), "<D:href>/dav/a/projects/p/file-"); got != n {
		t.Errorf("%d rewritten hrefs, want %d", got, n)
	}
	if maxWindow > 64<<10 {
		t.Errorf("window grew to %d bytes", maxWindow)
	}
}

func TestParseRoute(t *testing.T) {
	cases := []struct {
		path                             string
		kind                             routeKind
		agent, scope, project, rel, rest string
		audit                            string
		bad                              bool
	}{
		{path: "/elsewhere", kind: routeOutside},
		{path: "/dav", kind: routeRoot},
		{path: "/dav/", kind: routeRoot},
		{path: "/dav/codex-a", kind: routeAgent, agent: "codex-a"},
		{path: "/dav/codex-a/", kind: routeAgent, agent: "codex-a"},
		{path: "/dav/codex-a/projects", kind: routeWorkspace, agent: "codex-a", scope: "PROJECT", rest: "/projects"},
		{path: "/dav/codex-a/projects/demo/", kind: routeWorkspace, agent: "codex-a", scope: "PROJECT", project: "demo", rest: "/projects/demo/"},
		{path: "/dav/codex-a/projects/demo/src/a%20b.go", kind: routeWorkspace, agent: "codex-a", scope: "PROJECT", project: "demo", rel: "src/a b.go", audit: "src/a b.go", rest: "/projects/demo/src/a b.go"},
		{path: "/dav/codex-a/global/skills/x/SKILL.md", kind: routeWorkspace, agent: "codex-a", scope: "GLOBAL", rel: "skills/x/SKILL.md", audit: "skills/x/SKILL.md", rest: "/global/skills/x/SKILL.md"},
		{path: "/dav/codex-a/global/AGENTS.md", kind: routeWorkspace, agent: "codex-a", scope: "GLOBAL", rel: "AGENTS.md", audit: "AGENTS.md", rest: "/global/AGENTS.md"},
		{path: "/dav/codex-a/global/auth.json", kind: routeWorkspace, agent: "codex-a", scope: "GLOBAL", rel: "auth.json", audit: Redacted, rest: "/global/auth.json"},
		{path: "/dav/codex-a/global/skillsx", kind: routeWorkspace, agent: "codex-a", scope: "GLOBAL", rel: "skillsx", audit: Redacted, rest: "/global/skillsx"},
		{path: "/dav/codex-a/other", kind: routeUnknown, agent: "codex-a", rest: "/other"},
		{path: "/dav/codex-a/projects/../global/x", bad: true},
		{path: "/dav/codex-a/projects/%2E%2E/global/x", bad: true},
		{path: "/dav/codex-a/projects/demo/./x", bad: true},
		{path: "/dav/codex-a/projects//x", bad: true},
		{path: "/dav/codex-a/projects/x%00y", bad: true},
		{path: "/dav/a%2Fb/projects/", bad: true},
		{path: "/dav/%zz/", bad: true},
		{path: "/dav/" + strings.Repeat("x", 129) + "/projects/", bad: true},
	}
	for _, c := range cases {
		rt, err := parseRoute(c.path)
		if c.bad {
			if err == nil {
				t.Errorf("%s: accepted as %+v", c.path, rt)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if rt.kind != c.kind || rt.agentID != c.agent || rt.scope != c.scope || rt.project != c.project || rt.relPath != c.rel || rt.rest != c.rest || rt.auditPath() != c.audit {
			t.Errorf("%s: got %+v (audit %q)", c.path, rt, rt.auditPath())
		}
	}
}

func TestSidecarURLKeepsBasePathAndEncoding(t *testing.T) {
	base, _ := url.Parse("http://sidecar:9092/webdav/")
	u := sidecarURL(base, "/projects/demo/a%20b%3F.txt")
	if got := u.String(); got != "http://sidecar:9092/webdav/projects/demo/a%20b%3F.txt" {
		t.Errorf("got %s", got)
	}
	st := &state{route: route{agentID: "a", agentEsc: "a"}, target: base}
	h := &handler{}
	if got := h.clientHref("http://sidecar:9092/webdav/projects/demo/x", st); got != "/dav/a/projects/demo/x" {
		t.Errorf("clientHref = %s", got)
	}
	if got := h.rewriteIfHeader(`<http://gw/dav/a/projects/demo/x> (<opaquelocktoken:1> ["e"]) (Not <DAV:no-lock>)`, st); got != `<http://sidecar:9092/webdav/projects/demo/x> (<opaquelocktoken:1> ["e"]) (Not <DAV:no-lock>)` {
		t.Errorf("If = %s", got)
	}
}
