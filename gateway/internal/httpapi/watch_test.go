package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts/errtable"
)

// A gateway without live changes answers with a code and reason that agree
// with the one error table (not Unimplemented with INTERNAL).
func TestWatchNotAvailableAgreesWithErrtable(t *testing.T) {
	s, _ := newServer(t)
	r := httptest.NewRequest(http.MethodGet, APIPrefix+"/agents/codex-a/watch?workspace.scope=PROJECT&workspace.project_name=demo&directory=", nil)
	r.Header.Set("Authorization", "Bearer tok")
	w := serve(s, r)
	var body struct {
		Code    int `json:"code"`
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body.Details) != 1 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	row, ok := errtable.Lookup(body.Details[0].Reason)
	if !ok || codes.Code(body.Code) != row.Code || w.Code != row.REST || body.Details[0].Reason != "NOT_SUPPORTED" {
		t.Fatalf("%d code %d reason %s: disagrees with the table (%+v)", w.Code, body.Code, body.Details[0].Reason, row)
	}
}
