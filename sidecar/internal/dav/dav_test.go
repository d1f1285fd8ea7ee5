package dav

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentworkspace/files/internal/davwire"
)

// allowAll keeps its own order but lists exactly davwire.AllowWrite.
func TestAllowAllIsAllowWrite(t *testing.T) {
	got, want := strings.Split(allowAll, ", "), strings.Split(davwire.AllowWrite, ", ")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("allowAll %q lists other methods than davwire.AllowWrite %q", allowAll, davwire.AllowWrite)
	}
}
