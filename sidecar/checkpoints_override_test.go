package sidecar_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// A WebDAV DELETE has no skip_checkpoint override: with the store full it
// keeps answering with CHECKPOINT_LIMIT's status and deletes nothing.
func TestWebDAVDeleteIntoFullStore(t *testing.T) {
	projects := t.TempDir()
	writeFile(t, projects, "w/dir/blob.bin", strings.Repeat("x", 8<<10))
	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, Configure: func(c *sidecar.Config) {
		c.DavServer.AllowUnconditionalWrites = true
		c.Services.Checkpoints.MaxTotalBytes = 4 << 10
	}})
	for _, u := range []string{"/projects/w/dir/", "/projects/w/dir/?skip_checkpoint=true"} {
		resp, _ := dav(t, "DELETE", sc.PlainDavURL()+u, nil)
		if resp.StatusCode != http.StatusInsufficientStorage {
			t.Errorf("DELETE %s into a full store: %s", u, resp.Status)
		}
	}
	if _, err := os.Stat(filepath.Join(projects, "w/dir/blob.bin")); err != nil {
		t.Fatalf("a refused WebDAV DELETE deleted: %v", err)
	}
}
