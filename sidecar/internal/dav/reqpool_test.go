package dav

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/agentworkspace/files/internal/davwire"
)

// Nothing of a request survives into the next one that reuses its struct:
// clear zeroes every field but the wiring (checked field by field, so a
// field added later is covered too), and newRequest sets only what the new
// request's own arguments give.
func TestPooledRequestKeepsNothing(t *testing.T) {
	h := &Handler{} // only compared: no request is served
	q := wiredRequest()
	wire := q.wire
	q.h, q.r, q.src, q.dst, q.prefix, q.rid = h, httptest.NewRequest("GET", "/a", nil), "/a", "/b", "/dav/x", "id"
	q.tokens, q.newLock, q.ifRevs = []string{"tok"}, "lock", map[string]string{"/a": "r"}
	q.reason, q.aborted, q.dstRemoved, q.keep = "INTERNAL", true, true, "PUT"
	q.refused, q.uncond, q.autos = &refusal{status: 403}, &Unconditional{}, &AutoCheckpoints{}
	q.recv = recorder{filter: &lockFilter{}, status: 500}
	q.rec, q.errs = &q.recv, &q.errLog
	q.errLog.add(nil, nil)
	q.dfs.st.ForMutation = true
	q.lib.Prefix = "/dav/x"
	q.locks.q = q
	q.hdr.IfMatch, q.hdr.IfNoneMatch = "rev", true

	q.clear()
	v := reflect.ValueOf(q).Elem()
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "wire" && !v.Field(i).IsZero() {
			t.Errorf("after clear, field %s = %v", name, v.Field(i))
		}
	}
	if reflect.ValueOf(q.wire.before).Pointer() != reflect.ValueOf(wire.before).Pointer() {
		t.Error("clear replaced the wiring")
	}

	r := httptest.NewRequest("GET", "/projects/demo/f.txt", nil)
	w := httptest.NewRecorder()
	q = newRequest(h, w, r)
	if q.h != h || q.r != r || q.rec != &q.recv || q.errs != &q.errLog || q.recv.w != w || q.recv.status != 0 || q.recv.filter != nil {
		t.Errorf("newRequest: h %v r %v rec %p errs %p recv %+v", q.h == h, q.r == r, q.rec, q.errs, q.recv)
	}
	q.done()
}

// A read-only PROPFIND (its recorder filters DAV:supportedlock out) and a
// write's refusal interleaved with plain reads on one handler: each answer
// is its own, whatever request struct served the one before.
func TestPooledRequestsAnswerAlone(t *testing.T) {
	e := newEnv(t, nil)
	e.put("/projects/demo/r.txt", "r\n")
	for i := range 20 {
		ro := i%2 == 0
		hdr := map[string]string{"Depth": "1"}
		if ro {
			hdr[davwire.ReadOnlyHeader] = "true"
		}
		_, body := e.want("PROPFIND", "/projects/demo/", hdr, "", http.StatusMultiStatus)
		if got := strings.Contains(body, "supportedlock"); got == ro {
			t.Fatalf("round %d, read-only %v: supportedlock listed = %v", i, ro, got)
		}
		resp, _ := e.want("GET", "/projects/demo/missing.txt", nil, "", http.StatusNotFound)
		if resp.Header.Get(davwire.ReasonHeader) == "" {
			t.Fatalf("round %d: 404 without a reason", i)
		}
		resp, body = e.want("GET", "/projects/demo/r.txt", nil, "", http.StatusOK)
		if body != "r\n" || resp.Header.Get(davwire.ReasonHeader) != "" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("round %d: GET %q reason %q cache %q", i, body, resp.Header.Get(davwire.ReasonHeader), resp.Header.Get("Cache-Control"))
		}
	}
}
