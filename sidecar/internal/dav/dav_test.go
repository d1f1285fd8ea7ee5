package dav

import (
	"net/http"
	"testing"

	"github.com/agentworkspace/files/internal/davwire"
)

// A method the sidecar does not serve gets 405 with davwire's Allow header
// of a writable view (the one header the gateway answers with too).
func TestUnservedMethodAllowsDavwireWrite(t *testing.T) {
	e := newEnv(t, nil)
	resp, _ := e.want("TRACE", "/projects/demo/", nil, "", http.StatusMethodNotAllowed)
	if got := resp.Header.Get("Allow"); got != davwire.Allow(true) {
		t.Errorf("Allow = %q; want %q", got, davwire.Allow(true))
	}
}
