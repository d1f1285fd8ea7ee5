package mgmt

import (
	"testing"

	"github.com/agentworkspace/files/internal/rpcmeta"
	"google.golang.org/grpc/metadata"
)

// The automatic checkpoint's ID is taken from the response, else from the
// trailer, and only when it has a checkpoint ID's shape: anything else the
// sidecar sent is dropped, never stored in the audit record.
func TestAutoIDShape(t *testing.T) {
	const ok = "0123456789abcdef01234567"
	tr := func(v ...string) metadata.MD { return metadata.MD{rpcmeta.AutoCheckpoint: v} }
	for _, c := range []struct {
		name, resp string
		tr         metadata.MD
		want       string
	}{
		{"response", ok, nil, ok},
		{"response first", ok, tr("fedcba9876543210fedcba98"), ok},
		{"trailer", "", tr(ok), ok},
		{"none", "", nil, ""},
		{"two trailers", "", tr(ok, ok), ""},
		{"upper case", "0123456789ABCDEF01234567", nil, ""},
		{"too short", ok[:23], nil, ""},
		{"too long", ok + "0", tr(ok), ""},
		{"log forging", "", tr(ok + "\nresult=ok"), ""},
		{"path", "", tr("../0123456789abcdef012345"), ""},
	} {
		if got := autoID(c.resp, c.tr); got != c.want {
			t.Errorf("%s: autoID(%q, %v) = %q, want %q", c.name, c.resp, c.tr, got, c.want)
		}
	}
}
