package sidecar_test

import (
	"encoding/xml"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// TestCrossSurfaceRevisions: one revision on both surfaces (docs/architecture.md
// "Revisions"): a gRPC revision is a WebDAV If-Match, a PROPFIND ETag is a
// gRPC expected_revision.
func TestCrossSurfaceRevisions(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	c := sc.Dial(t)
	ctx := ctxT(t)
	must[*workspacev1.Project](t)(c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "demo"}))
	e := must[*workspacev1.Entry](t)(c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: proj("demo"), Name: "a.txt", Type: workspacev1.EntryType_ENTRY_TYPE_FILE}))
	url := sc.PlainDavURL() + "/projects/demo/a.txt"

	t.Run("gRPC revision as If-Match", func(t *testing.T) {
		v1 := must[*workspacev1.Entry](t)(c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: proj("demo"), Path: "a.txt", Content: "v1", ExpectedRevision: e.GetRevision()}))
		// GET/HEAD ETag equals the gRPC revision, quoted.
		resp, body := dav(t, http.MethodGet, url, nil)
		if resp.StatusCode != 200 || body != "v1" || resp.Header.Get("ETag") != `"`+v1.GetRevision()+`"` {
			t.Fatalf("GET: %s %q ETag %s, want ETag \"%s\"", resp.Status, body, resp.Header.Get("ETag"), v1.GetRevision())
		}
		// Stale (the revision before v1): 412, nothing written.
		resp, _ = dav(t, http.MethodPut, url, strings.NewReader("stale"), "If-Match", `"`+e.GetRevision()+`"`)
		if resp.StatusCode != http.StatusPreconditionFailed {
			t.Errorf("stale If-Match PUT: %s, want 412", resp.Status)
		}
		f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: proj("demo"), Path: "a.txt"}))
		if f.GetContent() != "v1" {
			t.Fatalf("content after a refused PUT %q", f.GetContent())
		}
		// Current: 2xx, and the new ETag is the new gRPC revision.
		resp, _ = dav(t, http.MethodPut, url, strings.NewReader("v2 from webdav"), "If-Match", `"`+v1.GetRevision()+`"`)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("current If-Match PUT: %s", resp.Status)
		}
		f = must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: proj("demo"), Path: "a.txt"}))
		if f.GetContent() != "v2 from webdav" {
			t.Errorf("content %q", f.GetContent())
		}
		if et := resp.Header.Get("ETag"); et != "" && et != `"`+f.GetEntry().GetRevision()+`"` {
			t.Errorf("PUT ETag %s, gRPC revision %s", et, f.GetEntry().GetRevision())
		}
		// A stale If-Match DELETE is refused too.
		resp, _ = dav(t, http.MethodDelete, url, nil, "If-Match", `"`+v1.GetRevision()+`"`)
		if resp.StatusCode != http.StatusPreconditionFailed {
			t.Errorf("stale If-Match DELETE: %s, want 412", resp.Status)
		}
	})

	t.Run("PROPFIND ETag as expected_revision", func(t *testing.T) {
		etag := propfindETag(t, url)
		rev := strings.Trim(etag, `"`)
		f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: proj("demo"), Path: "a.txt"}))
		if rev != f.GetEntry().GetRevision() {
			t.Errorf("PROPFIND ETag %s, gRPC revision %s", etag, f.GetEntry().GetRevision())
		}
		v3 := must[*workspacev1.Entry](t)(c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: proj("demo"), Path: "a.txt", Content: "v3", ExpectedRevision: rev}))
		// The old ETag is now stale for gRPC as well.
		_, err := c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: proj("demo"), Path: "a.txt", Content: "v4", ExpectedRevision: rev})
		wantErr(t, err, codes.Aborted, "REVISION_MISMATCH")
		if got := strings.Trim(propfindETag(t, url), `"`); got != v3.GetRevision() {
			t.Errorf("PROPFIND ETag after update %s, gRPC revision %s", got, v3.GetRevision())
		}
		// A WebDAV write behind gRPC's back makes its revision stale.
		resp, _ := dav(t, http.MethodPut, url, strings.NewReader("agent-like write"), "If-Match", `"`+v3.GetRevision()+`"`)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT: %s", resp.Status)
		}
		_, err = c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: proj("demo"), SourcePath: "a.txt", DestinationPath: "b.txt", ExpectedRevision: v3.GetRevision()})
		wantErr(t, err, codes.Aborted, "REVISION_MISMATCH")
		_, err = c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: proj("demo"), Path: "a.txt", ExpectedRevision: v3.GetRevision()})
		wantErr(t, err, codes.Aborted, "REVISION_MISMATCH")
	})

	t.Run("directory revision", func(t *testing.T) {
		l := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: proj("demo")}))
		if got := strings.Trim(propfindETag(t, sc.PlainDavURL()+"/projects/demo/"), `"`); got != "" && got != l.GetDirectoryRevision() {
			t.Errorf("PROPFIND directory ETag %s, gRPC directory_revision %s", got, l.GetDirectoryRevision())
		}
	})
}

// propfindETag returns the getetag of url (Depth 0).
func propfindETag(t *testing.T, url string) string {
	t.Helper()
	resp, body := dav(t, "PROPFIND", url, strings.NewReader(`<?xml version="1.0"?><propfind xmlns="DAV:"><prop><getetag/></prop></propfind>`),
		"Depth", "0", "Content-Type", "application/xml")
	if resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("PROPFIND %s: %s\n%s", url, resp.Status, body)
	}
	var ms struct {
		Responses []struct {
			Propstat []struct {
				ETag   string `xml:"prop>getetag"`
				Status string `xml:"status"`
			} `xml:"propstat"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal([]byte(body), &ms); err != nil {
		t.Fatalf("PROPFIND body: %v\n%s", err, body)
	}
	for _, r := range ms.Responses {
		for _, p := range r.Propstat {
			if p.ETag != "" {
				return p.ETag
			}
		}
	}
	return ""
}
