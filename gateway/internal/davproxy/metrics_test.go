package davproxy

import (
	"strings"
	"testing"
)

func TestMetrics(t *testing.T) {
	e := newEnv(t, true, contractSidecar)
	e.do(t, "GET", "/dav/a/projects/demo/README.md", nil)
	e.do(t, "PUT", "/dav/a/projects/demo/README.md", strings.NewReader("x"))                                // 428 from the sidecar
	e.do(t, "POST", "/dav/a/projects/demo/README.md", nil)                                                  // 405
	e.do(t, "COPY", "/dav/a/projects/demo/README.md", nil, "Destination", "/dav/b/projects/demo/README.md") // 403
	e.do(t, "PUT", "/dav/a/projects/demo/README.md", strings.NewReader("x"), "If-Match", `"stale"`)         // 412 from the sidecar
	e.do(t, "GET", "/dav/down/projects/demo/README.md", nil)                                                // 503
	e.waitMutations(t, 3)
	for _, c := range []struct {
		series string
		want   float64
	}{
		{`agent_gateway_webdav_rejections_total{reason="precondition_required"}`, 1},
		{`agent_gateway_webdav_rejections_total{reason="not_supported"}`, 1},
		{`agent_gateway_webdav_rejections_total{reason="forbidden"}`, 1},
		{`agent_gateway_webdav_rejections_total{reason="revision_mismatch"}`, 1},
		{`agent_gateway_webdav_sidecar_unavailable_total{agent_id="down"}`, 1},
		{`agent_gateway_webdav_requests_total{code="200",method="GET"}`, 1},
		{`agent_gateway_webdav_requests_total{code="428",method="PUT"}`, 1},
	} {
		name, labels, _ := strings.Cut(c.series, "{")
		got := -1.0
		mfs, err := e.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				var parts []string
				for _, lp := range m.GetLabel() {
					parts = append(parts, lp.GetName()+`="`+lp.GetValue()+`"`)
				}
				if strings.Join(parts, ",")+"}" == labels {
					got = m.GetCounter().GetValue()
				}
			}
		}
		if got != c.want {
			t.Errorf("%s = %v, want %v", c.series, got, c.want)
		}
	}
	mfs, _ := e.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "agent_gateway_webdav_bytes_total" && len(mf.GetMetric()) != 2 {
			t.Errorf("bytes series: %v", mf.GetMetric())
		}
	}
}
