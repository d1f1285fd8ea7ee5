package gateway_test

import (
	"net/http"
	"testing"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/gateway/internal/fakesidecar"
	"github.com/agentworkspace/files/gateway/internal/httpapi"
)

// PRD §15.2 "gRPC error to HTTP error mapping is stable": every reason the
// sidecar can return arrives over REST with the table's status, the same
// code and reason in the body, and the sidecar's safe message.
func TestErrorMappingOverREST(t *testing.T) {
	g, _, _ := twoFakes(t, gatewaytest.Options{})
	for name, num := range workspacev1.ErrorReason_value {
		if num == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			code := errtable.For(name).Code
			r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/files?workspace.scope=GLOBAL&path="+fakesidecar.FailPrefix+name, "")
			// Unavailable reasons too keep their name: CHECKPOINTS_UNAVAILABLE
			// and WATCH_UNAVAILABLE are one feature of a sidecar that
			// answers (issue #23), not the sidecar being down.
			wantReason := name
			wantStatus := httpapi.HTTPStatus(code, name)
			if r.Status != wantStatus {
				t.Errorf("status %d, want %d: %s", r.Status, wantStatus, r.Body)
			}
			m := r.JSON(t)
			if int(m["code"].(float64)) != int(code) {
				t.Errorf("code %v, want %d", m["code"], code)
			}
			if got := r.reason(t); got != wantReason {
				t.Errorf("reason %q, want %q", got, wantReason)
			}
			if wantReason == name && m["message"] != "forced failure "+name {
				t.Errorf("message %q", m["message"])
			}
		})
	}
	// grpc-gateway's own decoding errors are 400 with a reason.
	r := admin(t, g, http.MethodGet, api+"/agents/codex-a/projects/entries?workspace.scope=BOGUS", "")
	if r.Status != http.StatusBadRequest || r.reason(t) != "INVALID_ARGUMENT" {
		t.Errorf("bad enum: %d %s", r.Status, r.Body)
	}
	r = admin(t, g, http.MethodPost, api+"/agents/codex-a/projects", `{"name":"x","operator":"mallory"}`)
	if r.Status != http.StatusBadRequest {
		t.Errorf("unknown body field: %d %s", r.Status, r.Body)
	}
	r = admin(t, g, http.MethodGet, api+"/nothing-here", "")
	if r.Status != http.StatusNotFound {
		t.Errorf("unknown route: %d %s", r.Status, r.Body)
	}
}
