package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
)

// Issue #13: invalid UTF-8 in a REST path, workspace.project_name or any
// other string field is 400 InvalidArgument with the reason of the field,
// never 500 (protobuf refuses to marshal such a request to the sidecar),
// whether it comes in the query, the URL path or the JSON body. Nothing
// reaches the sidecar, and the mutations among them are audited with the
// same code and reason.
func TestInvalidUTF8IsRefusedPerField(t *testing.T) {
	g, a, _ := twoFakes(t, gatewaytest.Options{})
	a.Put(t, "demo", "keep.txt", "kept")
	before := len(a.Calls())
	p := api + "/agents/codex-a/projects"
	cases := []struct {
		name, method, path, body, reason string
	}{
		{"query path", "GET", p + "/files?workspace.scope=PROJECT&workspace.project_name=demo&path=a%FFb", "", "INVALID_PATH"},
		{"query project", "GET", p + "/entries?workspace.scope=PROJECT&workspace.project_name=%C3&path=", "", "INVALID_WORKSPACE"},
		{"query cursor", "GET", p + "/entries?workspace.scope=PROJECT&workspace.project_name=demo&cursor=%FE", "", "INVALID_CURSOR"},
		{"query projects cursor", "GET", p + "?cursor=%FF", "", "INVALID_CURSOR"},
		{"delete entry path", "DELETE", p + "/entries?workspace.scope=PROJECT&workspace.project_name=demo&path=keep%FF.txt&expected_revision=x", "", "INVALID_PATH"},
		{"delete project confirm", "DELETE", p + "/demo?confirm_name=%FF", "", "INVALID_ARGUMENT"},
		{"delete project name", "DELETE", p + "/de%FFmo?confirm_name=demo", "", "INVALID_NAME"},
		{"body path", "PUT", p + "/files", "{\"workspace\":{\"scope\":\"PROJECT\",\"project_name\":\"demo\"},\"path\":\"keep\xff.txt\",\"content\":\"x\",\"expected_revision\":\"r\"}", "INVALID_PATH"},
		{"body project", "PUT", p + "/files", "{\"workspace\":{\"scope\":\"PROJECT\",\"project_name\":\"de\xffmo\"},\"path\":\"keep.txt\",\"content\":\"x\",\"expected_revision\":\"r\"}", "INVALID_WORKSPACE"},
		{"body content", "PUT", p + "/files", "{\"workspace\":{\"scope\":\"PROJECT\",\"project_name\":\"demo\"},\"path\":\"keep.txt\",\"content\":\"\xc0\xaf\",\"expected_revision\":\"r\"}", "INVALID_ARGUMENT"},
		{"body project name", "POST", p, "{\"name\":\"n\xff\"}", "INVALID_NAME"},
		{"body move destination", "POST", p + "/entries:move", "{\"workspace\":{\"scope\":\"PROJECT\",\"project_name\":\"demo\"},\"source_path\":\"keep.txt\",\"destination_path\":\"\xff\",\"expected_revision\":\"r\"}", "INVALID_PATH"},
		{"body entry name", "POST", p + "/entries", "{\"workspace\":{\"scope\":\"PROJECT\",\"project_name\":\"demo\"},\"parent_path\":\"\",\"name\":\"\xff\",\"type\":\"ENTRY_TYPE_FILE\"}", "INVALID_NAME"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := admin(t, g, c.method, c.path, c.body)
			m := r.JSON(t)
			if r.Status != http.StatusBadRequest || r.reason(t) != c.reason || m["code"] != float64(3) {
				t.Errorf("%d %s, want 400 code 3 %s", r.Status, r.Body, c.reason)
			}
			if msg, _ := m["message"].(string); !strings.Contains(msg, "not valid UTF-8") {
				t.Errorf("message %q", msg)
			}
		})
	}
	if calls := a.Calls(); len(calls) != before {
		t.Errorf("the sidecar got %d calls: %v", len(calls)-before, calls[before:])
	}
	// Nothing changed: the file is still there with its content.
	r := admin(t, g, "GET", p+"/files?workspace.scope=PROJECT&workspace.project_name=demo&path=keep.txt", "")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"kept"`) {
		t.Errorf("keep.txt after the refusals: %d %s", r.Status, r.Body)
	}
	// One audit record per refused mutation, with the refusal's code and reason.
	want := map[string]string{}
	for _, c := range cases {
		if c.method != "GET" {
			want[c.name] = c.reason
		}
	}
	recs := g.AuditRecords(t)
	if len(recs) != len(want) {
		t.Fatalf("%d audit records for %d refused mutations: %v", len(recs), len(want), recs)
	}
	i := 0
	for _, c := range cases {
		if c.method == "GET" {
			continue
		}
		rec := recs[i]
		i++
		if rec["grpc_code"] != "InvalidArgument" || rec["reason"] != c.reason || rec["result"] != "error" {
			t.Errorf("%s: audit %v", c.name, rec)
		}
	}
}
